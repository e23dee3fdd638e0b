#pragma once
// Helpers shared by the GPU tests.

#include <cuda_runtime_api.h>

#include <cstddef>

#include "graphpool/detail/cuda_check.hpp"

namespace graphpool::testing {

/// A non-blocking stream, destroyed with the object.
struct stream_guard {
  stream_guard() { GRAPHPOOL_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "test stream"); }
  ~stream_guard() { GRAPHPOOL_CUDA_REPORT(cudaStreamDestroy(stream), "~stream_guard: destroying the test stream"); }
  stream_guard(const stream_guard&) = delete;
  stream_guard& operator=(const stream_guard&) = delete;
  cudaStream_t stream = nullptr;
};

/// A device-side counter kernels add to (a mismatch count); reset() zeroes it, read() copies it back.
struct device_counter {
  device_counter() { GRAPHPOOL_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&value), sizeof(*value)), "counter"); }
  ~device_counter() { GRAPHPOOL_CUDA_REPORT(cudaFree(value), "~device_counter: freeing the counter"); }
  device_counter(const device_counter&) = delete;
  device_counter& operator=(const device_counter&) = delete;
  void reset() { GRAPHPOOL_CUDA_TRY(cudaMemset(value, 0, sizeof(*value)), "counter"); }
  unsigned long long read() const {
    unsigned long long host = 0;
    GRAPHPOOL_CUDA_TRY(cudaMemcpy(&host, value, sizeof(host), cudaMemcpyDeviceToHost), "counter");
    return host;
  }
  unsigned long long* value = nullptr;
};

/// The device's free memory (cudaMemGetInfo).
inline std::size_t device_free_bytes() {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  GRAPHPOOL_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return free_bytes;
}

/// The nodes of `graph` (a captured graph: its allocation and free nodes among them).
inline std::size_t graph_node_count(cudaGraph_t graph) {
  std::size_t count = 0;
  GRAPHPOOL_CUDA_TRY(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
  return count;
}

/// Device memory `work` takes: free memory (cudaMemGetInfo) before minus after, each read with the
/// device idle, so the figure is the driver's and not graphpool's own count. It moves in 2 MiB pages.
template <class Work>
std::size_t device_bytes_taken_by(Work&& work) {
  GRAPHPOOL_CUDA_TRY(cudaDeviceSynchronize(), "synchronizing before reading free memory");
  const std::size_t before = device_free_bytes();
  work();
  GRAPHPOOL_CUDA_TRY(cudaDeviceSynchronize(), "synchronizing after the measured work");
  const std::size_t after = device_free_bytes();
  return before > after ? before - after : 0;
}

}  // namespace graphpool::testing
