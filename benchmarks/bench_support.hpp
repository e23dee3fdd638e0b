#pragma once
// Helpers shared by the benchmarks: the median, and where a result comes from (commit, GPU, driver).

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

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

}  // namespace graphpool::bench
