#pragma once
/// @file shared_physical_resource.hpp
/// @brief Physically shared, virtually distinct arenas: every branch gets its own address window and
/// every window maps the same physical chunks (CUDA virtual memory management).
///
/// Frameworks that track allocations by pointer (PyTorch's caching allocator) break when two live
/// blocks have one address; distinct windows over shared pages keep addresses distinct while
/// physical memory stays the max over branches (see shared_window_arena.hpp).

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "graphpool/alignment.hpp"
#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/memory/shared_window_arena.hpp"

namespace graphpool {

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
