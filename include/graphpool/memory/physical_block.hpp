#pragma once
/// @file physical_block.hpp
/// @brief Physical device memory in pages (CUDA virtual memory management), for windows to be
/// re-pointed at page by page, and the driver calls shared_window_arena makes with it.

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "graphpool/detail/format.hpp"
#include "graphpool/error.hpp"
#include "graphpool/memory/page_run.hpp"
#include "graphpool/memory/vmm_driver.hpp"

namespace graphpool {

namespace detail {

[[nodiscard]] inline CUmemAllocationProp device_allocation(int device) noexcept {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

/// cuMemCreate of `bytes` on `device`; when the device cannot provide them, an error from `who` saying
/// `what` the memory was for and how much the device had free.
[[nodiscard]] inline CUmemGenericAllocationHandle create_physical(const vmm_driver& driver, int device, std::size_t bytes,
                                                                  const char* who, const std::string& what) {
  CUmemGenericAllocationHandle handle{};
  const CUmemAllocationProp prop = device_allocation(device);
  const CUresult created = driver.mem_create(&handle, bytes, &prop, 0);
  if (created != CUDA_SUCCESS) {
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    static_cast<void>(cudaMemGetInfo(&free_bytes, &total_bytes));
    static_cast<void>(cudaGetLastError());
    throw error(std::string(who) + ": cannot create " + format_bytes(bytes) + " of physical memory " + what + " (cuMemCreate: " +
                    driver.describe(created) + "); the device has " + format_bytes(free_bytes) + " free of " +
                    format_bytes(total_bytes),
                static_cast<int>(created));
  }
  return handle;
}

}  // namespace detail

/// @brief Physical device memory in pages, for shared_window_arena::remap to map windows onto.
///
/// One cuMemCreate per page: the driver maps a physical allocation only from its start (cuMemMap's
/// offset must be 0), so a window can point page by page into a block only when every page is an
/// allocation of its own. Released when the last arena mapping it and its owner are gone (hold it by
/// shared_ptr). Thread-safety: immutable once made; its members may be called from several threads at once.
class physical_block final {
 public:
  /// @brief `bytes` (a multiple of `page_bytes`, the granularity) on `device`. @throws graphpool::error
  /// when the device cannot provide them, saying how much it had free; nothing is kept then.
  physical_block(int device, std::size_t bytes, std::size_t page_bytes)
      : driver_(detail::vmm_driver::get()), bytes_(bytes), page_bytes_(page_bytes) {
    if (page_bytes == 0 || bytes % page_bytes != 0) {
      throw error("physical_block: " + detail::format_bytes(bytes) + " is not a whole number of " +
                  detail::format_bytes(page_bytes) + " pages");
    }
    try {
      for (std::size_t at = 0; at < bytes; at += page_bytes) {
        pages_.push_back(detail::create_physical(driver_, device, page_bytes, "physical_block",
                                                 "for page " + std::to_string(at / page_bytes) + " of a block of " +
                                                     detail::format_bytes(bytes)));
      }
    } catch (...) {
      release();
      throw;
    }
  }
  physical_block(const physical_block&) = delete;
  physical_block& operator=(const physical_block&) = delete;
  ~physical_block() { release(); }

  /// @return the allocation of the page at byte `offset` (a multiple of the page size).
  [[nodiscard]] CUmemGenericAllocationHandle page(std::size_t offset) const { return pages_.at(offset / page_bytes_); }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::size_t page_bytes() const noexcept { return page_bytes_; }

 private:
  void release() noexcept {
    for (CUmemGenericAllocationHandle handle : pages_) {
      driver_.report(driver_.mem_release(handle), "cuMemRelease", "physical_block: releasing its pages");
    }
    pages_.clear();
  }

  const detail::vmm_driver& driver_;
  std::size_t bytes_;
  std::size_t page_bytes_;
  std::vector<CUmemGenericAllocationHandle> pages_;
};

/// @brief Bytes [window_offset, window_offset + bytes) of a window mapped to [block_offset, ...) of `block`.
using page_run = basic_page_run<physical_block>;

}  // namespace graphpool
