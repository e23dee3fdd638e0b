#pragma once
/// @file cuda_pool_resource.hpp
/// @brief Device memory from a `cudaMemPool_t` (the stream-ordered allocator), one device.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>

#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/error.hpp"
#include "graphpool/alignment.hpp"

namespace graphpool {

/// @brief A memory resource over a `cudaMemPool_t` on one device; it creates and owns a pool or wraps one.
///
/// Shape: CCCL `cuda::mr` (3.1 and later) — `allocate(stream, bytes, alignment)` /
/// `deallocate(stream, ptr, bytes, alignment)` are stream-ordered (`cudaMallocFromPoolAsync` /
/// `cudaFreeAsync`), `allocate_sync` / `deallocate_sync` block until done. The CCCL 3.0 spellings
/// shipped with CUDA 13.0 (`allocate(bytes, alignment)`, `allocate_async(bytes, alignment, stream_ref)`)
/// forward to those, so the type satisfies `cuda::mr::async_resource` of either version; the host
/// tests check that with the toolkit's CCCL.
///
/// A pool it creates is configured for deterministic reuse: release threshold = max (freed memory
/// stays reserved, so a captured graph's addresses stay mapped), opportunistic reuse and internal
/// dependencies off (a block is reused only on the stream that freed it, or after an event
/// dependency, never by the driver inserting waits). A wrapped pool is used as configured by its owner.
///
/// Thread-safety: every member function may be called from several threads at once.
/// Copy and move are deleted: the resource owns (or stands for) one pool, and arenas keep a reference to it.
class cuda_pool_resource final {
 public:
  /// @brief Creates and owns a pool on `device` (the current device when omitted).
  /// @throws graphpool::error if the device does not support memory pools or pool creation fails.
  explicit cuda_pool_resource(int device = detail::current_device("cuda_pool_resource")) : device_(device), owns_pool_(true) {
    const std::string context = "cuda_pool_resource: creating a memory pool on device " + std::to_string(device);
    int supported = 0;
    GRAPHPOOL_CUDA_TRY(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device), context);
    if (supported == 0) {
      throw error(context + ": the device does not support stream-ordered memory pools (cudaMallocAsync)");
    }
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    GRAPHPOOL_CUDA_TRY(cudaMemPoolCreate(&pool_, &props), context);
    try {
      std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
      int off = 0;
      GRAPHPOOL_CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold), context);
      GRAPHPOOL_CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowOpportunistic, &off), context);
      GRAPHPOOL_CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowInternalDependencies, &off), context);
    } catch (...) {
      GRAPHPOOL_CUDA_REPORT(cudaMemPoolDestroy(pool_), "cuda_pool_resource: destroying the pool it could not set up");
      throw;
    }
  }

  /// @brief Wraps `pool`, which lives on `device` and is owned by the caller; the pool outlives this resource.
  cuda_pool_resource(cudaMemPool_t pool, int device) : pool_(pool), device_(device), owns_pool_(false) {
    if (pool == nullptr) {
      throw error("cuda_pool_resource: the pool to wrap is null; pass a pool from cudaMemPoolCreate or "
                  "cudaDeviceGetMemPool");
    }
  }

  cuda_pool_resource(const cuda_pool_resource&) = delete;
  cuda_pool_resource& operator=(const cuda_pool_resource&) = delete;
  cuda_pool_resource(cuda_pool_resource&&) = delete;
  cuda_pool_resource& operator=(cuda_pool_resource&&) = delete;

  /// @brief Destroys an owned pool, returning its memory to the device; never throws.
  ///
  /// Every allocation must have been deallocated; the driver releases the pool's memory once the
  /// last stream-ordered free has completed.
  ~cuda_pool_resource() {
    if (owns_pool_) {
      GRAPHPOOL_CUDA_REPORT(cudaMemPoolDestroy(pool_),
                            "~cuda_pool_resource: destroying its pool, returning the memory to the device");
    }
  }

  /// @brief Stream-ordered allocation of `bytes` aligned to `alignment`, usable on `stream` once this returns.
  /// @throws graphpool::error for a bad alignment, a size that overflows once padded to the alignment, or
  /// when the pool cannot grow (the message gives the size).
  [[nodiscard]] void* allocate(cudaStream_t stream, std::size_t bytes, std::size_t alignment = default_alignment) {
    const std::string what = "cuda_pool_resource::allocate of " + std::to_string(bytes) + " bytes on device " +
                             std::to_string(device_);
    detail::check_alignment(alignment, what);
    // The driver aligns pool allocations to 256 bytes; a stricter alignment pads the request.
    const std::size_t padded =
        alignment <= default_alignment ? bytes : detail::checked_add(bytes, alignment - default_alignment, what);
    void* raw = nullptr;
    GRAPHPOOL_CUDA_TRY(cudaMallocFromPoolAsync(&raw, padded, pool_, stream), what);
    const auto raw_address = reinterpret_cast<std::uintptr_t>(raw);
    const auto aligned = reinterpret_cast<void*>(align_up(raw_address, alignment));
    if (aligned != raw) {
      try {
        std::lock_guard<std::mutex> lock(padding_mutex_);
        padded_allocations_.emplace(aligned, raw);
      } catch (...) {
        // Unrecorded, deallocate() could never find it: free it now.
        GRAPHPOOL_CUDA_REPORT(cudaFreeAsync(raw, stream),
                              "cuda_pool_resource::allocate: freeing an allocation it could not record");
        throw;
      }
    }
    return aligned;
  }

  /// @brief Stream-ordered release of memory from allocate(); the memory may be reused after prior work on `stream`.
  void deallocate(cudaStream_t stream, void* ptr, std::size_t /*bytes*/,
                  std::size_t alignment = default_alignment) noexcept {
    void* raw = ptr;
    if (alignment > default_alignment) {
      std::lock_guard<std::mutex> lock(padding_mutex_);
      const auto found = padded_allocations_.find(ptr);
      if (found != padded_allocations_.end()) {
        raw = found->second;
        padded_allocations_.erase(found);
      }
    }
    GRAPHPOOL_CUDA_REPORT(cudaFreeAsync(raw, stream), "cuda_pool_resource::deallocate: returning memory to the pool");
  }

  /// @brief Allocation that is complete when it returns (ordered on the calling thread's default stream).
  /// @throws graphpool::error as allocate(), or when synchronizing fails; nothing is held then.
  [[nodiscard]] void* allocate_sync(std::size_t bytes, std::size_t alignment = default_alignment) {
    void* ptr = allocate(cudaStreamPerThread, bytes, alignment);
    try {
      GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(cudaStreamPerThread),
                         "cuda_pool_resource::allocate_sync of " + std::to_string(bytes) + " bytes");
    } catch (...) {
      deallocate(cudaStreamPerThread, ptr, bytes, alignment);  // the caller never sees ptr: give it back
      throw;
    }
    return ptr;
  }

  /// @brief Release that is complete when it returns; no work may still use `ptr`.
  void deallocate_sync(void* ptr, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    deallocate(cudaStreamPerThread, ptr, bytes, alignment);
    GRAPHPOOL_CUDA_REPORT(cudaStreamSynchronize(cudaStreamPerThread),
                          "cuda_pool_resource::deallocate_sync: waiting for the memory to return to the pool");
  }

  /// @brief CCCL 3.0 spelling of allocate_sync.
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t alignment) { return allocate_sync(bytes, alignment); }

  /// @brief CCCL 3.0 spelling of deallocate_sync.
  void deallocate(void* ptr, std::size_t bytes, std::size_t alignment) noexcept {
    deallocate_sync(ptr, bytes, alignment);
  }

  /// @brief CCCL 3.0 spelling of allocate(stream, ...); `StreamRef` is `cuda::stream_ref` (anything with `get()`).
  template <class StreamRef>
  [[nodiscard]] auto allocate_async(std::size_t bytes, std::size_t alignment, StreamRef stream)
      -> decltype(static_cast<cudaStream_t>(stream.get()), static_cast<void*>(nullptr)) {
    return allocate(static_cast<cudaStream_t>(stream.get()), bytes, alignment);
  }

  /// @brief CCCL 3.0 spelling of deallocate(stream, ...).
  template <class StreamRef>
  auto deallocate_async(void* ptr, std::size_t bytes, std::size_t alignment, StreamRef stream) noexcept
      -> decltype(static_cast<void>(static_cast<cudaStream_t>(stream.get()))) {
    deallocate(static_cast<cudaStream_t>(stream.get()), ptr, bytes, alignment);
  }

  /// @return the pool this resource allocates from.
  [[nodiscard]] cudaMemPool_t pool() const noexcept { return pool_; }
  /// @return the device the pool's memory lives on.
  [[nodiscard]] int device() const noexcept { return device_; }
  /// @return true when this resource created the pool and destroys it.
  [[nodiscard]] bool owns_pool() const noexcept { return owns_pool_; }

  /// @return bytes of device memory the pool holds now (cudaMemPoolAttrReservedMemCurrent).
  [[nodiscard]] std::size_t reserved_bytes() const { return attribute(cudaMemPoolAttrReservedMemCurrent); }
  /// @return the most bytes the pool has held (cudaMemPoolAttrReservedMemHigh).
  [[nodiscard]] std::size_t reserved_bytes_high() const { return attribute(cudaMemPoolAttrReservedMemHigh); }
  /// @return bytes handed out and not yet freed (cudaMemPoolAttrUsedMemCurrent).
  [[nodiscard]] std::size_t used_bytes() const { return attribute(cudaMemPoolAttrUsedMemCurrent); }
  /// @return the most bytes handed out at once (cudaMemPoolAttrUsedMemHigh).
  [[nodiscard]] std::size_t used_bytes_high() const { return attribute(cudaMemPoolAttrUsedMemHigh); }

  /// @brief Returns unused reserved memory to the device until the pool holds at most `bytes_to_keep`.
  void trim(std::size_t bytes_to_keep = 0) {
    GRAPHPOOL_CUDA_TRY(cudaMemPoolTrimTo(pool_, bytes_to_keep), "cuda_pool_resource::trim");
  }

  /// @brief Two resources are equal when they allocate from the same pool.
  [[nodiscard]] friend bool operator==(const cuda_pool_resource& a, const cuda_pool_resource& b) noexcept {
    return a.pool_ == b.pool_;
  }
  [[nodiscard]] friend bool operator!=(const cuda_pool_resource& a, const cuda_pool_resource& b) noexcept {
    return !(a == b);
  }

 private:
  [[nodiscard]] std::size_t attribute(cudaMemPoolAttr which) const {
    std::uint64_t value = 0;
    GRAPHPOOL_CUDA_TRY(cudaMemPoolGetAttribute(pool_, which, &value), "cuda_pool_resource: reading a pool attribute");
    return static_cast<std::size_t>(value);
  }

  cudaMemPool_t pool_ = nullptr;
  int device_ = 0;
  bool owns_pool_ = false;
  mutable std::mutex padding_mutex_;
  std::unordered_map<void*, void*> padded_allocations_;  // aligned pointer -> pointer from the pool
};

}  // namespace graphpool
