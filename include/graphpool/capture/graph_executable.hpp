#pragma once
/// @file graph_executable.hpp
/// @brief An instantiated CUDA graph: what a capture returns, destroyed with the graph it came from.

#include <cuda_runtime_api.h>

#include <utility>

#include "graphpool/detail/cuda_check.hpp"

namespace graphpool {

/// @brief An instantiated graph (and the graph it came from), destroyed together.
///
/// Thread-safety: not thread-safe; one thread at a time, launch() included (CUDA graph executables are
/// not internally synchronized).
class graph_executable final {
 public:
  graph_executable() = default;
  graph_executable(cudaGraphExec_t exec, cudaGraph_t graph, bool owns_graph) noexcept
      : exec_(exec), graph_(graph), owns_graph_(owns_graph) {}
  graph_executable(const graph_executable&) = delete;
  graph_executable& operator=(const graph_executable&) = delete;
  graph_executable(graph_executable&& other) noexcept { swap(other); }
  graph_executable& operator=(graph_executable&& other) noexcept {
    graph_executable(std::move(other)).swap(*this);
    return *this;
  }
  ~graph_executable() {
    if (exec_ != nullptr) {
      GRAPHPOOL_CUDA_REPORT(cudaGraphExecDestroy(exec_), "~graph_executable: destroying the executable");
    }
    if (graph_ != nullptr && owns_graph_) {
      GRAPHPOOL_CUDA_REPORT(cudaGraphDestroy(graph_), "~graph_executable: destroying the graph it came from");
    }
  }

  /// @brief Launches the graph on `stream`.
  void launch(cudaStream_t stream) const {
    GRAPHPOOL_CUDA_TRY(cudaGraphLaunch(exec_, stream), "graph_executable::launch");
  }

  [[nodiscard]] cudaGraphExec_t get() const noexcept { return exec_; }
  [[nodiscard]] cudaGraph_t graph() const noexcept { return graph_; }
  [[nodiscard]] explicit operator bool() const noexcept { return exec_ != nullptr; }

 private:
  void swap(graph_executable& other) noexcept {
    std::swap(exec_, other.exec_);
    std::swap(graph_, other.graph_);
    std::swap(owns_graph_, other.owns_graph_);
  }

  cudaGraphExec_t exec_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  bool owns_graph_ = false;
};

}  // namespace graphpool
