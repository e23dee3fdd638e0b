#pragma once
/// @file shared_window_arena.hpp
/// @brief One arena seen through several address windows over the same physical pages (CUDA virtual
/// memory management); remap() re-points windows at a physical_block's pages.

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graphpool/alignment.hpp"
#include "graphpool/detail/format.hpp"
#include "graphpool/error.hpp"
#include "graphpool/memory/page_run.hpp"
#include "graphpool/memory/physical_block.hpp"
#include "graphpool/memory/vmm_driver.hpp"

namespace graphpool {

/// @brief One arena seen through several address windows that map the same physical chunks.
///
/// Window i starts at `window(i)`; bytes written through one window are read through every other.
/// Windows are separated by at least one unmapped granule, so a write past the end of a window faults
/// instead of landing, silently, at the start of the next window (the same physical memory).
/// `ensure(bytes)` creates physical chunks and maps them into every window until `bytes` are backed;
/// it may be called during a stream capture (the driver allows it; measured on an H200). Addresses handed
/// out stay valid until destruction; remap() changes which physical pages are behind them, window by
/// window (for memory whose contents do not matter yet, e.g. captured but never replayed graphs).
///
/// Thread-safety: every member may be called from several threads at once.
class shared_window_arena final {
 public:
  using block_type = physical_block;

  /// @brief Reserves `windows` windows of `capacity` bytes of address space each on `device`, each window
  /// aligned to `alignment` (0: the granularity); maps nothing yet.
  /// @throws graphpool::error for no window, an alignment that is not a power of two, windows whose address
  /// space overflows size_t once rounded to the granularity, or when the driver refuses the address space.
  shared_window_arena(int device, std::size_t windows, std::size_t capacity, std::size_t alignment = 0)
      : driver_(detail::vmm_driver::get()), device_(device), windows_(windows) {
    if (windows == 0) throw error("shared_window_arena: at least one window is needed");
    const std::string what = "shared_window_arena: " + std::to_string(windows) + " window(s) of " +
                             std::to_string(capacity) + " bytes of address space";
    if (alignment != 0) detail::check_alignment(alignment, what);
    CUmemAllocationProp prop = allocation_prop();
    std::size_t granularity = 0;
    check(driver_.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity");
    granularity_ = granularity;
    const std::size_t window_alignment = std::max(granularity_, alignment);
    // Rounded without a check, a capacity near SIZE_MAX wrapped to a window of 0 bytes.
    capacity_ = detail::checked_align_up(std::max<std::size_t>(capacity, 1), window_alignment, what);
    stride_ = detail::checked_add(capacity_, window_alignment, what);  // the gap: never mapped
    if (stride_ > std::numeric_limits<std::size_t>::max() / windows_) {
      throw error(what + ": " + std::to_string(windows_) + " x " + std::to_string(stride_) +
                  " bytes (each window rounded to the granularity, plus its gap) overflows size_t; ask for a smaller "
                  "capacity or fewer windows");
    }
    CUdeviceptr base = 0;
    check(driver_.address_reserve(&base, stride_ * windows_, window_alignment, 0, 0),
          "reserving " + detail::format_bytes(stride_ * windows_) + " of address space (cuMemAddressReserve)");
    base_ = base;
  }

  shared_window_arena(const shared_window_arena&) = delete;
  shared_window_arena& operator=(const shared_window_arena&) = delete;
  shared_window_arena(shared_window_arena&&) = delete;
  shared_window_arena& operator=(shared_window_arena&&) = delete;

  /// @brief Unmaps every window, releases every chunk and the address space; never throws.
  ~shared_window_arena() {
    unmap_chunks();
    for (const chunk& c : chunks_) {
      driver_.report(driver_.mem_release(c.handle), "cuMemRelease", "~shared_window_arena: releasing its chunks");
    }
    unmap_runs(runs_);
    driver_.report(driver_.address_free(base_, stride_ * windows_), "cuMemAddressFree",
                   "~shared_window_arena: freeing its address space");
  }

  /// @brief Backs at least `bytes` of every window with physical memory (rounded up to the granularity).
  /// @throws graphpool::error beyond the window capacity, or when the device cannot provide the memory
  /// (saying how much was asked and how much the device had free). Nothing is left half-mapped.
  void ensure(std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes <= mapped_) return;
    if (bytes > capacity_) {
      throw error("shared_window_arena: " + detail::format_bytes(bytes) + " asked of a window of " +
                  detail::format_bytes(capacity_) + "; create the arena with a larger capacity");
    }
    if (!runs_.empty()) throw error("shared_window_arena: cannot grow an arena after remap()");
    chunks_.reserve(chunks_.size() + 1);  // so recording the chunk cannot fail once it is mapped
    chunk grown{0, mapped_, align_up(bytes, granularity_) - mapped_};
    grown.handle = detail::create_physical(driver_, device_, grown.bytes, "shared_window_arena",
                                           "to grow the arena from " + detail::format_bytes(mapped_) + " to " +
                                               detail::format_bytes(mapped_ + grown.bytes));
    std::size_t mapped_windows = 0;
    try {
      for (; mapped_windows < windows_; ++mapped_windows) map_readwrite(address(mapped_windows, grown.offset), grown.bytes, grown.handle, 0);
    } catch (...) {
      for (std::size_t w = 0; w < mapped_windows; ++w) {
        driver_.report(driver_.unmap(address(w, grown.offset), grown.bytes), "cuMemUnmap",
                       "shared_window_arena::ensure: unmapping the new chunk, which not every window could map");
      }
      driver_.report(driver_.mem_release(grown.handle), "cuMemRelease",
                     "shared_window_arena::ensure: releasing the new chunk, which not every window could map");
      throw;
    }
    chunks_.push_back(grown);
    mapped_ += grown.bytes;
  }

  /// @brief Maps window w's bytes anew: `runs[w]` lists where its pages go (offsets and sizes multiples
  /// of the granularity, inside the window). The arena's own chunks are unmapped from every window and
  /// released; the blocks of the runs are held until destruction, and physical_bytes() is 0 after (the
  /// blocks are the memory). Contents are not carried over. Once per arena.
  /// @throws graphpool::error for a run outside its window, unaligned, or past its block's end, or when
  /// the driver refuses a mapping; the arena is then as it was.
  void remap(const std::vector<std::vector<page_run>>& runs) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!runs_.empty()) throw error("shared_window_arena: remap() was called already");
    if (runs.size() != windows_) {
      throw error("shared_window_arena::remap: " + std::to_string(runs.size()) + " lists of runs for " +
                  std::to_string(windows_) + " windows; give one per window");
    }
    std::vector<mapped_run> placed;
    for (std::size_t w = 0; w < windows_; ++w) {
      for (const page_run& run : runs[w]) {
        const std::string fault = run_fault(run);
        if (!fault.empty()) {
          throw error("shared_window_arena::remap: window " + std::to_string(w) + " run at " +
                      detail::format_bytes(run.window_offset) + " of " + detail::format_bytes(run.bytes) + " " + fault +
                      "; nothing was remapped");
        }
      }
    }
    unmap_chunks();
    try {
      for (std::size_t w = 0; w < windows_; ++w) {
        for (const page_run& run : runs[w]) {
          for (std::size_t at = 0; at < run.bytes; at += granularity_) {  // a page is an allocation of its own
            map_readwrite(address(w, run.window_offset + at), granularity_, run.block->page(run.block_offset + at), 0);
            placed.push_back({address(w, run.window_offset + at), granularity_, run.block});
          }
        }
      }
    } catch (...) {
      unmap_runs(placed);
      for (std::size_t w = 0; w < windows_; ++w) {
        for (const chunk& c : chunks_) map_readwrite(address(w, c.offset), c.bytes, c.handle, 0);
      }
      throw;
    }
    for (const chunk& c : chunks_) {
      driver_.report(driver_.mem_release(c.handle), "cuMemRelease",
                     "shared_window_arena::remap: releasing its own chunks, which the runs replace");
    }
    chunks_.clear();
    mapped_ = 0;
    runs_ = std::move(placed);
  }

  /// @return the start of window `index`.
  [[nodiscard]] void* window(std::size_t index) const noexcept {
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address(index, 0)));
  }
  [[nodiscard]] std::size_t windows() const noexcept { return windows_; }
  /// @return the address space of each window.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  /// @return the physical bytes backing the arena (shared by every window).
  [[nodiscard]] std::size_t physical_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return mapped_;
  }
  /// @return the allocation granularity physical memory grows by.
  [[nodiscard]] std::size_t granularity() const noexcept { return granularity_; }

 private:
  struct chunk {
    CUmemGenericAllocationHandle handle;
    std::size_t offset;
    std::size_t bytes;
  };

  struct mapped_run {
    CUdeviceptr at;
    std::size_t bytes;
    std::shared_ptr<const physical_block> block;
  };

  [[nodiscard]] CUmemAllocationProp allocation_prop() const noexcept { return detail::device_allocation(device_); }

  // What is wrong with `run` for remap(), or "" when nothing is.
  [[nodiscard]] std::string run_fault(const page_run& run) const {
    using detail::format_bytes;
    if (!run.block) return "has no block";
    if (run.bytes == 0) return "is empty";
    if (run.block->page_bytes() != granularity_) {
      return "maps a block of " + format_bytes(run.block->page_bytes()) + " pages, not the arena's " + format_bytes(granularity_);
    }
    if (run.window_offset % granularity_ != 0 || run.block_offset % granularity_ != 0 || run.bytes % granularity_ != 0) {
      return "(block offset " + format_bytes(run.block_offset) + ") is not in whole " + format_bytes(granularity_) + " pages";
    }
    if (run.bytes > capacity_ || run.window_offset > capacity_ - run.bytes) {
      return "runs past the window's " + format_bytes(capacity_);
    }
    if (run.bytes > run.block->bytes() || run.block_offset > run.block->bytes() - run.bytes) {
      return "from block offset " + format_bytes(run.block_offset) + " runs past the block's " + format_bytes(run.block->bytes());
    }
    return {};
  }

  void map_readwrite(CUdeviceptr at, std::size_t bytes, CUmemGenericAllocationHandle handle, std::size_t offset) {
    check(driver_.map(at, bytes, offset, handle, 0), "cuMemMap");
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device_;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    const CUresult access_status = driver_.set_access(at, bytes, &access, 1);
    if (access_status != CUDA_SUCCESS) {
      driver_.report(driver_.unmap(at, bytes), "cuMemUnmap",
                     "shared_window_arena: unmapping a mapping whose access could not be set");
      check(access_status, "cuMemSetAccess");
    }
  }

  void unmap_chunks() noexcept {
    for (std::size_t w = 0; w < windows_; ++w) {
      for (const chunk& c : chunks_) {
        driver_.report(driver_.unmap(address(w, c.offset), c.bytes), "cuMemUnmap",
                       "shared_window_arena: unmapping its chunks from every window");
      }
    }
  }

  void unmap_runs(const std::vector<mapped_run>& runs) noexcept {
    for (const mapped_run& run : runs) {
      driver_.report(driver_.unmap(run.at, run.bytes), "cuMemUnmap", "shared_window_arena: unmapping remapped pages");
    }
  }

  [[nodiscard]] CUdeviceptr address(std::size_t window, std::size_t offset) const noexcept {
    return base_ + static_cast<CUdeviceptr>(window * stride_ + offset);
  }

  void check(CUresult status, const std::string& what) const {
    if (status != CUDA_SUCCESS) {
      throw error("shared_window_arena on device " + std::to_string(device_) + ": " + what + " failed with " +
                      driver_.describe(status),
                  static_cast<int>(status));
    }
  }

  const detail::vmm_driver& driver_;
  int device_;
  std::size_t windows_;
  std::size_t granularity_ = 0;
  std::size_t capacity_ = 0;
  std::size_t stride_ = 0;  // from one window's start to the next: the capacity and an unmapped gap
  CUdeviceptr base_ = 0;
  mutable std::mutex mutex_;
  std::vector<chunk> chunks_;
  std::size_t mapped_ = 0;
  std::vector<mapped_run> runs_;  // after remap(): what every window maps, and the blocks that keep it alive
};

}  // namespace graphpool
