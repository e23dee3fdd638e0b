// RMM's resources behind rmm_allocators.hpp (compiled as C++20, only when RMM was found).

#include "rmm_allocators.hpp"

#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/version_config.hpp>

#include <stdexcept>

namespace graphpool::bench {

struct rmm_allocators::impl {
  impl(cudaStream_t s, std::size_t initial) : stream(s), pool(upstream, initial), arena(upstream, initial) {}
  cuda::stream_ref stream;
  rmm::mr::cuda_memory_resource upstream;
  rmm::mr::pool_memory_resource pool;
  rmm::mr::arena_memory_resource arena;
};

rmm_allocators::rmm_allocators(cudaStream_t stream, std::size_t initial_bytes)
    : impl_(std::make_unique<impl>(stream, initial_bytes)) {}
rmm_allocators::~rmm_allocators() = default;

bool rmm_allocators::available() const noexcept { return true; }

std::string rmm_allocators::describe() const {
  return "RMM " + std::to_string(RMM_VERSION_MAJOR) + "." + std::to_string(RMM_VERSION_MINOR) + "." +
         std::to_string(RMM_VERSION_PATCH);
}

namespace {
template <class Resource>
void pairs(Resource& resource, cuda::stream_ref stream, int n, std::size_t bytes) {
  for (int i = 0; i < n; ++i) {
    void* ptr = resource.allocate(stream, bytes, 256);
    resource.deallocate(stream, ptr, bytes, 256);
  }
  if (cudaStreamSynchronize(stream.get()) != cudaSuccess) throw std::runtime_error("rmm_allocators: synchronize failed");
}
}  // namespace

void rmm_allocators::pool_pairs(int n, std::size_t bytes) { pairs(impl_->pool, impl_->stream, n, bytes); }
void rmm_allocators::arena_pairs(int n, std::size_t bytes) { pairs(impl_->arena, impl_->stream, n, bytes); }

}  // namespace graphpool::bench
