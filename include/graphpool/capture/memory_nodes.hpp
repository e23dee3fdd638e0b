#pragma once
/// @file memory_nodes.hpp
/// @brief CUDA graph memory nodes added to a stream's capture: an alloc node or a free node after the
/// capture's current dependencies, which then becomes the capture's only dependency (what
/// capture_session's transient requests are made of).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/error.hpp"

namespace graphpool::detail {

/// Adds a node after `stream`'s capture's current dependencies with `add(graph, deps, count)` (which sets
/// `node`), then makes it the only dependency. Memory nodes take plain (full) dependencies: edge data such
/// as programmatic-launch ports is not carried over.
/// @throws graphpool::error starting with `what` when the capture is no longer active or a call fails.
template <class AddNode>
void add_node_to_capture(cudaStream_t stream, const std::string& what, AddNode&& add, cudaGraphNode_t& node) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  std::size_t count = 0;
  GRAPHPOOL_CUDA_TRY(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &deps, &edges, &count), what);
  if (status != cudaStreamCaptureStatusActive) {
    throw error(what + ": the capture is no longer active (status " + std::to_string(static_cast<int>(status)) +
                "); an earlier call inside the capture invalidated it");
  }
  GRAPHPOOL_CUDA_TRY(add(graph, deps, count), what);
  GRAPHPOOL_CUDA_TRY(cudaStreamUpdateCaptureDependencies(stream, &node, nullptr, 1, cudaStreamSetCaptureDependencies), what);
}

/// @return the address of `bytes` (256-byte aligned) from a memory alloc node of `device` added to
/// `stream`'s capture. @throws graphpool::error starting with `what`.
[[nodiscard]] inline void* add_alloc_node(cudaStream_t stream, int device, std::size_t bytes, const std::string& what) {
  cudaMemAllocNodeParams params{};
  params.poolProps.allocType = cudaMemAllocationTypePinned;
  params.poolProps.location.type = cudaMemLocationTypeDevice;
  params.poolProps.location.id = device;
  params.bytesize = bytes;
  cudaGraphNode_t node = nullptr;
  add_node_to_capture(stream, what, [&](cudaGraph_t graph, const cudaGraphNode_t* deps, std::size_t count) {
    return cudaGraphAddMemAllocNode(&node, graph, deps, count, &params);
  }, node);
  return params.dptr;
}

/// Frees `address` (an alloc node's) with a memory free node added to `stream`'s capture.
/// @throws graphpool::error starting with `what`.
inline void add_free_node(cudaStream_t stream, void* address, const std::string& what) {
  cudaGraphNode_t node = nullptr;
  add_node_to_capture(stream, what, [&](cudaGraph_t graph, const cudaGraphNode_t* deps, std::size_t count) {
    return cudaGraphAddMemFreeNode(&node, graph, deps, count, address);
  }, node);
}

}  // namespace graphpool::detail
