#pragma once
// Helpers shared by the benchmarks: the median, where a result comes from (commit, GPU, driver), and
// the command line (flags, --help, the output path checked before anything is measured).

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/error.hpp"
#include "graphpool/plan/spec.hpp"

// The commit the benchmark was built from; CMake passes it at configure time ("unknown" outside a
// git checkout, with "-dirty" when tracked files differ from it).
#ifndef GRAPHPOOL_GIT_COMMIT
#define GRAPHPOOL_GIT_COMMIT "unknown"
#endif

namespace graphpool::bench {

/// The median of `values` (the mean of the two middle ones for an even count).
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// `value` printed with `digits` decimals, or "-" for NaN: a figure taken over nothing (no plans of a
/// kind, an allocator not built in), which is never printed as a number.
inline std::string figure(double value, int digits) {
  if (std::isnan(value)) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

/// The same as a JSON number, or null.
inline std::string json_figure(double value, int digits) { return std::isnan(value) ? "null" : figure(value, digits); }

/// The JSON member naming the commit: `  "commit": "<sha>",` and a newline.
inline std::string commit_json() { return std::string("  \"commit\": \"") + GRAPHPOOL_GIT_COMMIT + "\",\n"; }

/// JSON members naming the GPU `device`, the driver and the CUDA runtime, each line ending in a comma:
/// `"gpu"`, `"driver_version"` (the CUDA version the driver supports, e.g. "13.0") and
/// `"cuda_runtime_version"`. Values that cannot be read are "unknown".
inline std::string device_json(int device) {
  auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  cudaDeviceProp prop{};
  int driver = 0;
  int runtime = 0;
  const bool named = cudaGetDeviceProperties(&prop, device) == cudaSuccess;
  const bool has_driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0;
  const bool has_runtime = cudaRuntimeGetVersion(&runtime) == cudaSuccess;
  static_cast<void>(cudaGetLastError());
  return "  \"gpu\": \"" + (named ? std::string(prop.name) : std::string("unknown")) + "\",\n" +
         "  \"driver_version\": \"" + (has_driver ? version(driver) : std::string("unknown")) + "\",\n" +
         "  \"cuda_runtime_version\": \"" + (has_runtime ? version(runtime) : std::string("unknown")) + "\",\n";
}

/// A benchmark's command line, read flag by flag as graphpool-plan reads its own:
///
///   bench::command_line args(argc, argv, "graphpool_bench_x", help_text);
///   const int status = args.read([&](const std::string& flag) {
///     if (flag == "--json") json_path = args.value();
///     else if (flag == "--runs") runs = static_cast<int>(args.integer(1, 1000000));
///     else return false;  // a flag it does not know
///     return true;
///   });
///   if (status >= 0) return status;
///   if (!args.writable(json_path)) return 2;
///
/// `--help` prints `help` on stdout (status 0). A flag it does not know, a flag without its value or a value
/// out of range prints one line naming it on stderr (status 2), never a measurement.
class command_line {
 public:
  /// @param help the usage line first, then what the flags mean and the exit statuses
  command_line(int argc, char** argv, std::string name, std::string help)
      : argc_(argc), argv_(argv), name_(std::move(name)), help_(std::move(help)) {}

  /// @brief Reads every flag through `each(flag)`, which takes the flag's value with value(), integer() or
  /// number() and returns false for a flag it does not know.
  /// @return -1 when every flag was read; 0 after --help; 2 after a bad flag (its line printed)
  template <class Each>
  int read(Each&& each) {
    try {
      for (at_ = 1; at_ < argc_; ++at_) {
        flag_ = argv_[at_];
        if (flag_ == "--help" || flag_ == "-h") {
          std::fputs(help_.c_str(), stdout);
          return 0;
        }
        if (!each(flag_)) throw error("unknown flag '" + flag_ + "'");
      }
    } catch (const error& e) {
      std::fprintf(stderr, "%s: %s; see --help\n", name_.c_str(), e.what());
      return 2;
    }
    return -1;
  }

  /// @return the value after the flag being read. @throws graphpool::error when there is none
  [[nodiscard]] std::string value() {
    if (at_ + 1 >= argc_) throw error(flag_ + " needs a value");
    return argv_[++at_];
  }

  /// @return the flag's value as a whole integer in [minimum, maximum]. @throws graphpool::error naming it
  [[nodiscard]] long long integer(long long minimum, long long maximum) {
    return plan::detail::parse_integer(value(), flag_, minimum, maximum);
  }

  /// @return the flag's value as a number of at least `minimum`. @throws graphpool::error naming it
  [[nodiscard]] double number(double minimum) {
    const std::string text = value();
    char* end = nullptr;
    errno = 0;
    const double result = text.empty() ? 0 : std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !(result >= minimum)) {
      char least[32];
      std::snprintf(least, sizeof(least), "%g", minimum);
      throw error(flag_ + ": '" + text + "' is not a number of at least " + least);
    }
    return result;
  }

  /// @brief Whether `path` can be written, asked before the run so that a bad output path costs a second,
  /// not the measurements; a file that was not there is not left behind. Prints why not on stderr.
  [[nodiscard]] bool writable(const std::string& path) const {
    const bool existed = ::access(path.c_str(), F_OK) == 0;
    std::FILE* probe = std::fopen(path.c_str(), "a");
    if (probe == nullptr) {
      std::fprintf(stderr, "%s: cannot write %s: %s\n", name_.c_str(), path.c_str(), std::strerror(errno));
      return false;
    }
    std::fclose(probe);
    if (!existed) std::remove(path.c_str());
    return true;
  }

 private:
  int argc_;
  char** argv_;
  std::string name_;
  std::string help_;
  int at_ = 0;
  std::string flag_;
};

}  // namespace graphpool::bench
