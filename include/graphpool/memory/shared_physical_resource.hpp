#pragma once
/// @file shared_physical_resource.hpp
/// @brief Physically shared, virtually distinct arenas: every branch gets its own address window and
/// every window maps the same physical chunks (CUDA virtual memory management).
///
/// Frameworks that track allocations by pointer (PyTorch's caching allocator) break when two live
/// blocks have one address; distinct windows over shared pages keep addresses distinct while
/// physical memory stays the max over branches. The driver API is reached through
/// cudaGetDriverEntryPointByVersion, so programs do not link libcuda and still start without a driver.

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/detail/format.hpp"
#include "graphpool/error.hpp"
#include "graphpool/alignment.hpp"

namespace graphpool {

namespace detail {

/// The driver's virtual memory calls, looked up once through the runtime.
struct vmm_driver {
  decltype(&::cuMemCreate) mem_create = nullptr;
  decltype(&::cuMemRelease) mem_release = nullptr;
  decltype(&::cuMemAddressReserve) address_reserve = nullptr;
  decltype(&::cuMemAddressFree) address_free = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemSetAccess) set_access = nullptr;
  decltype(&::cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&::cuGetErrorName) error_name = nullptr;

  [[nodiscard]] static const vmm_driver& get() {
    static const vmm_driver driver = load();
    return driver;
  }

  [[nodiscard]] std::string describe(CUresult status) const {
    const char* name = nullptr;
    if (error_name != nullptr) error_name(status, &name);
    return name != nullptr ? name : "CUresult " + std::to_string(static_cast<int>(status));
  }

 private:
  template <class Function>
  static void lookup(const char* symbol, Function& function) {
    void* address = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    GRAPHPOOL_CUDA_TRY(cudaGetDriverEntryPointByVersion(symbol, &address, 12000, cudaEnableDefault, &found),
                       std::string("looking up the driver's ") + symbol);
    if (found != cudaDriverEntryPointSuccess || address == nullptr) {
      throw error(std::string("the CUDA driver has no ") + symbol + "; virtual memory management needs driver 12.0 or later");
    }
    function = reinterpret_cast<Function>(address);
  }

  static vmm_driver load() {
    vmm_driver d;
    lookup("cuMemCreate", d.mem_create);
    lookup("cuMemRelease", d.mem_release);
    lookup("cuMemAddressReserve", d.address_reserve);
    lookup("cuMemAddressFree", d.address_free);
    lookup("cuMemMap", d.map);
    lookup("cuMemUnmap", d.unmap);
    lookup("cuMemSetAccess", d.set_access);
    lookup("cuMemGetAllocationGranularity", d.granularity);
    lookup("cuGetErrorName", d.error_name);
    return d;
  }
};

}  // namespace detail

/// @brief One arena seen through several address windows that map the same physical chunks.
///
/// Window i starts at `window(i)`; bytes written through one window are read through every other.
/// Windows are separated by at least one unmapped granule, so a write past the end of a window faults
/// instead of landing, silently, at the start of the next window (the same physical memory).
/// `ensure(bytes)` creates physical chunks and maps them into every window until `bytes` are backed;
/// it may be called during a stream capture (the driver allows it; measured on an H200). Nothing is
/// ever unmapped before destruction, so addresses handed out stay valid.
///
/// Thread-safety: ensure() and the getters may be called from several threads at once.
class shared_window_arena final {
 public:
  /// @brief Reserves `windows` windows of `capacity` bytes of address space each on `device`; maps nothing yet.
  shared_window_arena(int device, std::size_t windows, std::size_t capacity, std::size_t alignment = 0)
      : driver_(detail::vmm_driver::get()), device_(device), windows_(windows) {
    if (windows == 0) throw error("shared_window_arena: at least one window is needed");
    CUmemAllocationProp prop = allocation_prop();
    std::size_t granularity = 0;
    check(driver_.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity");
    granularity_ = granularity;
    const std::size_t window_alignment = std::max(granularity_, alignment);
    capacity_ = align_up(std::max<std::size_t>(capacity, 1), window_alignment);
    stride_ = capacity_ + window_alignment;  // the gap: never mapped
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
    for (std::size_t w = 0; w < windows_; ++w) {
      for (const chunk& c : chunks_) report(driver_.unmap(address(w, c.offset), c.bytes), "cuMemUnmap");
    }
    for (const chunk& c : chunks_) report(driver_.mem_release(c.handle), "cuMemRelease");
    report(driver_.address_free(base_, stride_ * windows_), "cuMemAddressFree");
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
    chunk grown{0, mapped_, align_up(bytes, granularity_) - mapped_};
    const CUmemAllocationProp prop = allocation_prop();
    const CUresult created = driver_.mem_create(&grown.handle, grown.bytes, &prop, 0);
    if (created != CUDA_SUCCESS) {
      std::size_t free_bytes = 0;
      std::size_t total_bytes = 0;
      static_cast<void>(cudaMemGetInfo(&free_bytes, &total_bytes));
      static_cast<void>(cudaGetLastError());
      throw error("shared_window_arena: cannot create " + detail::format_bytes(grown.bytes) + " of physical memory to grow " +
                      "the arena from " + detail::format_bytes(mapped_) + " to " + detail::format_bytes(mapped_ + grown.bytes) +
                      " (cuMemCreate: " + driver_.describe(created) + "); the device has " +
                      detail::format_bytes(free_bytes) + " free of " + detail::format_bytes(total_bytes),
                  static_cast<int>(created));
    }
    std::size_t mapped_windows = 0;
    try {
      CUmemAccessDesc access{};
      access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      access.location.id = device_;
      access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      for (; mapped_windows < windows_; ++mapped_windows) {
        const CUdeviceptr at = address(mapped_windows, grown.offset);
        check(driver_.map(at, grown.bytes, 0, grown.handle, 0), "cuMemMap");
        const CUresult access_status = driver_.set_access(at, grown.bytes, &access, 1);
        if (access_status != CUDA_SUCCESS) {
          report(driver_.unmap(at, grown.bytes), "cuMemUnmap");
          check(access_status, "cuMemSetAccess");
        }
      }
    } catch (...) {
      for (std::size_t w = 0; w < mapped_windows; ++w) report(driver_.unmap(address(w, grown.offset), grown.bytes), "cuMemUnmap");
      report(driver_.mem_release(grown.handle), "cuMemRelease");
      throw;
    }
    chunks_.push_back(grown);
    mapped_ += grown.bytes;
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

  [[nodiscard]] CUmemAllocationProp allocation_prop() const noexcept {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device_;
    return prop;
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

  void report(CUresult status, const char* what) const noexcept {
    if (status != CUDA_SUCCESS) std::fprintf(stderr, "graphpool: %s failed in a destructor: %d\n", what, static_cast<int>(status));
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
};

/// @brief An upstream for arena_allocator whose arenas give each branch its own window over shared pages.
///
/// `allocate_windows(bytes, alignment, windows)` returns one base address per branch; every window maps
/// the same physical memory, so the arena's physical size is `bytes` (rounded to the 2 MiB granularity)
/// however many branches see it. Also makes growable arenas (make_arena) for captures that learn their
/// sizes as they go. Thread-safety: every member may be called from several threads at once.
class shared_physical_resource final {
 public:
  /// @brief A resource on `device` (the current device when omitted).
  /// @throws graphpool::error without a driver that has virtual memory management.
  explicit shared_physical_resource(int device = detail::current_device("shared_physical_resource")) : device_(device) {
    static_cast<void>(detail::vmm_driver::get());
  }

  /// @brief A growable arena of `windows` windows with `capacity` bytes of address space each.
  [[nodiscard]] std::unique_ptr<shared_window_arena> make_arena(std::size_t windows, std::size_t capacity) const {
    return std::make_unique<shared_window_arena>(device_, windows, capacity);
  }

  /// @brief An arena of `bytes`, fully backed, seen through `windows` windows.
  [[nodiscard]] std::vector<void*> allocate_windows(std::size_t bytes, std::size_t alignment, std::size_t windows) {
    detail::check_alignment(alignment, "shared_physical_resource::allocate_windows of " + std::to_string(bytes) + " bytes");
    auto arena = std::make_unique<shared_window_arena>(device_, windows, std::max<std::size_t>(bytes, 1), alignment);
    arena->ensure(std::max<std::size_t>(bytes, 1));
    std::vector<void*> result;
    for (std::size_t w = 0; w < windows; ++w) result.push_back(arena->window(w));
    std::lock_guard<std::mutex> lock(mutex_);
    arenas_.emplace(result.front(), std::move(arena));
    return result;
  }

  /// @brief Returns an arena from allocate_windows.
  void deallocate_windows(const std::vector<void*>& windows, std::size_t /*bytes*/, std::size_t /*alignment*/) noexcept {
    if (windows.empty()) return;
    std::unique_ptr<shared_window_arena> arena;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto found = arenas_.find(windows.front());
      if (found == arenas_.end()) return;
      arena = std::move(found->second);
      arenas_.erase(found);
    }
  }

  /// @return device memory this resource holds: the physical bytes of its arenas (what
  /// arena_allocator's statistics read as the upstream's counter).
  [[nodiscard]] std::size_t reserved_bytes() const { return physical_bytes(); }

  /// @return physical bytes held by the arenas from allocate_windows.
  [[nodiscard]] std::size_t physical_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t total = 0;
    for (const auto& [base, arena] : arenas_) total += arena->physical_bytes();
    return total;
  }

  [[nodiscard]] int device() const noexcept { return device_; }

 private:
  int device_;
  mutable std::mutex mutex_;
  std::map<void*, std::unique_ptr<shared_window_arena>> arenas_;
};

}  // namespace graphpool
