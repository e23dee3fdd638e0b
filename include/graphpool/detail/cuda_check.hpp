#pragma once
/// @file cuda_check.hpp
/// @brief The one CUDA-checking macro, and its non-throwing twin for destructors and other noexcept paths.

#include <cuda_runtime_api.h>

// Every CUDA-using header includes this one, so the version check lives here.
#if CUDART_VERSION < 13000
#error "graphpool needs the CUDA 13 toolkit: its capture code calls cudaStreamGetCaptureInfo and cudaStreamUpdateCaptureDependencies with CUDA 13's signatures (edge data arguments). Point the build at a CUDA 13 toolkit."
#endif

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>

#include "graphpool/error.hpp"

namespace graphpool::detail {

/// @brief Writes "<context>: <call> failed with <name> (<description>) at <file>:<line>" into `out`
/// (at most `size` bytes, cut short past that) and returns its whole length, as std::snprintf does.
/// Allocates nothing, so noexcept paths can use it; an empty `context` leaves out "<context>: ".
inline int format_cuda_failure(char* out, std::size_t size, cudaError_t status, const char* call, const char* file,
                               int line, const char* context) noexcept {
  return std::snprintf(out, size, "%s%s%s failed with %s (%s) at %s:%d", context, context[0] == '\0' ? "" : ": ",
                       call, cudaGetErrorName(status), cudaGetErrorString(status), file, line);
}

/// @brief Builds the message of a failed CUDA call: what was being done, the call, the CUDA error.
[[nodiscard]] inline std::string cuda_failure_message(cudaError_t status, const char* call, const char* file,
                                                      int line, const std::string& context) {
  // Written into a buffer that usually holds it, then again into one of its length where it did not (not
  // measured first with a null buffer: fortified -O2 builds warn of that call's truncation).
  std::string text(256 + context.size(), '\0');
  auto length = static_cast<std::size_t>(
      std::max(0, format_cuda_failure(&text[0], text.size(), status, call, file, line, context.c_str())));
  if (length >= text.size()) {
    text.assign(length + 1, '\0');
    format_cuda_failure(&text[0], text.size(), status, call, file, line, context.c_str());
  }
  text.resize(length);
  return text;
}

/// @brief Prints a failed call of a noexcept path on `to` as one line, "graphpool: " and format_cuda_failure's
/// text (cut short past 1 KiB); allocates nothing and never throws.
inline void report_cuda_failure(std::FILE* to, cudaError_t status, const char* call, const char* file, int line,
                                const char* context) noexcept {
  char text[1024];
  if (format_cuda_failure(text, sizeof(text), status, call, file, line, context) < 0) text[0] = '\0';
  std::fprintf(to, "graphpool: %s\n", text);
}

}  // namespace graphpool::detail

/// @brief Runs a CUDA runtime call; on failure throws graphpool::error carrying the status and `context`.
///
/// The sticky error of a *non-sticky* failure is cleared with cudaGetLastError so the next,
/// unrelated call does not report it again.
#define GRAPHPOOL_CUDA_TRY(call, context)                                                                 \
  do {                                                                                                    \
    const cudaError_t graphpool_status_ = (call);                                                         \
    if (graphpool_status_ != cudaSuccess) {                                                               \
      static_cast<void>(cudaGetLastError());                                                              \
      throw ::graphpool::error(                                                                           \
          ::graphpool::detail::cuda_failure_message(graphpool_status_, #call, __FILE__, __LINE__, (context)), \
          static_cast<int>(graphpool_status_));                                                           \
    }                                                                                                     \
  } while (false)

/// @brief For destructors and other noexcept paths: a failed call is reported on stderr, never thrown.
///
/// `context` (a C string) says what was being done, e.g. "graph_executable: destroying the captured graph";
/// it is evaluated only when the call fails. On a noexcept path give a literal: building a string could throw.
#define GRAPHPOOL_CUDA_REPORT(call, context)                                                                   \
  do {                                                                                                         \
    const cudaError_t graphpool_status_ = (call);                                                              \
    if (graphpool_status_ != cudaSuccess) {                                                                    \
      static_cast<void>(cudaGetLastError());                                                                   \
      ::graphpool::detail::report_cuda_failure(stderr, graphpool_status_, #call, __FILE__, __LINE__, (context)); \
    }                                                                                                          \
  } while (false)

namespace graphpool::detail {

/// @return the calling thread's current device; `context` says who asks, for the error.
[[nodiscard]] inline int current_device(const char* context) {
  int device = 0;
  GRAPHPOOL_CUDA_TRY(cudaGetDevice(&device), std::string(context) + ": querying the current device");
  return device;
}

}  // namespace graphpool::detail
