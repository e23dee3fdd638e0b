#pragma once
// RAPIDS RMM's pool_memory_resource and arena_memory_resource, timed beside graphpool's arena when the
// benchmark was built with RMM (the librmm-cu13 wheel: scripts/fetch_rmm.sh); otherwise available()
// is false and the rows are skipped. RMM 26 needs C++20, so it lives behind this C++17 interface.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>

namespace graphpool::bench {

class rmm_allocators {
 public:
  /// @brief RMM's pool and arena resources over cudaMalloc, each starting with `initial_bytes`.
  rmm_allocators(cudaStream_t stream, std::size_t initial_bytes);
  ~rmm_allocators();
  rmm_allocators(const rmm_allocators&) = delete;
  rmm_allocators& operator=(const rmm_allocators&) = delete;

  /// @return true when the benchmark was built with RMM.
  [[nodiscard]] bool available() const noexcept;
  /// @return "RMM 26.10.0" or why RMM is missing.
  [[nodiscard]] std::string describe() const;
  /// @brief `n` allocate + deallocate pairs of `bytes` on the stream from the pool resource, then a synchronize.
  void pool_pairs(int n, std::size_t bytes);
  /// @brief The same from the arena resource.
  void arena_pairs(int n, std::size_t bytes);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace graphpool::bench
