#pragma once
/// @file cuda_check.hpp
/// @brief The one CUDA-checking macro, and its non-throwing twin for destructors.

#include <cuda_runtime_api.h>

// Every CUDA-using header includes this one, so the version check lives here.
#if CUDART_VERSION < 13000
#error "graphpool needs the CUDA 13 toolkit: its capture code calls cudaStreamGetCaptureInfo and cudaStreamUpdateCaptureDependencies with CUDA 13's signatures (edge data arguments). Point the build at a CUDA 13 toolkit."
#endif

#include <cstdio>
#include <string>

#include "graphpool/error.hpp"

namespace graphpool::detail {

/// @brief Builds the message of a failed CUDA call: what was being done, the call, the CUDA error.
[[nodiscard]] inline std::string cuda_failure_message(cudaError_t status, const char* call, const char* file,
                                                      int line, const std::string& context) {
  std::string message = context.empty() ? std::string{} : context + ": ";
  message += call;
  message += " failed with ";
  message += cudaGetErrorName(status);
  message += " (";
  message += cudaGetErrorString(status);
  message += ") at ";
  message += file;
  message += ":";
  message += std::to_string(line);
  return message;
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
#define GRAPHPOOL_CUDA_REPORT(call)                                                                  \
  do {                                                                                               \
    const cudaError_t graphpool_status_ = (call);                                                    \
    if (graphpool_status_ != cudaSuccess) {                                                          \
      static_cast<void>(cudaGetLastError());                                                         \
      std::fprintf(stderr, "graphpool: %s failed with %s in a destructor at %s:%d\n", #call,         \
                   cudaGetErrorName(graphpool_status_), __FILE__, __LINE__);                         \
    }                                                                                                \
  } while (false)

namespace graphpool::detail {

/// @return the calling thread's current device; `context` says who asks, for the error.
[[nodiscard]] inline int current_device(const char* context) {
  int device = 0;
  GRAPHPOOL_CUDA_TRY(cudaGetDevice(&device), std::string(context) + ": querying the current device");
  return device;
}

}  // namespace graphpool::detail
