#pragma once
/// @file host_resource.hpp
/// @brief Plain host memory behind the resource interface, so arena logic runs without a GPU.

#include <cstddef>
#include <new>
#include <string>

#include "graphpool/error.hpp"
#include "graphpool/alignment.hpp"

namespace graphpool {

/// @brief A memory resource over aligned `operator new`: graphpool's test double for a device resource.
///
/// It has the shape of a CCCL `cuda::mr` resource (`allocate_sync` / `deallocate_sync`, and the
/// CCCL 3.0 spelling `allocate` / `deallocate` without a stream); it has no stream-ordered variants
/// because host memory has no stream. Every call is thread-safe. Two host resources compare equal:
/// memory from one may be returned to the other.
class host_resource final {
 public:
  /// @brief Allocates `bytes` of host memory aligned to `alignment` (0 bytes: a distinct non-null block, as
  /// operator new gives).
  /// @throws graphpool::error for an alignment that is not a power of two, or when the host is out of memory
  /// (a size that overflows when rounded up to the alignment included).
  [[nodiscard]] void* allocate_sync(std::size_t bytes, std::size_t alignment = default_alignment) {
    const std::string what = "host_resource::allocate_sync of " + std::to_string(bytes) + " bytes";
    detail::check_alignment(alignment, what);
    // Aligned operator new may round the size up to the alignment (libstdc++ does): near SIZE_MAX that
    // wraps to a tiny block, so such a size is refused here.
    (void)detail::checked_align_up(bytes, alignment, what);
    try {
      return ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t{alignment});
    } catch (const std::bad_alloc&) {
      throw error("host_resource: out of host memory allocating " + std::to_string(bytes) + " bytes");
    }
  }

  /// @brief Returns memory from allocate_sync; `bytes` and `alignment` must be those it was allocated with.
  void deallocate_sync(void* ptr, std::size_t /*bytes*/, std::size_t alignment = default_alignment) noexcept {
    ::operator delete(ptr, std::align_val_t{alignment});
  }

  /// @brief CCCL 3.0 spelling of allocate_sync.
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return allocate_sync(bytes, alignment);
  }

  /// @brief CCCL 3.0 spelling of deallocate_sync.
  void deallocate(void* ptr, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    deallocate_sync(ptr, bytes, alignment);
  }

  [[nodiscard]] friend bool operator==(const host_resource&, const host_resource&) noexcept { return true; }
  [[nodiscard]] friend bool operator!=(const host_resource&, const host_resource&) noexcept { return false; }
};

}  // namespace graphpool
