#pragma once
// An upstream for arena tests: host memory that counts what is live and can be told to fail the
// n-th allocation, so a test sees every leak, double free and size mismatch of what it drives.

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "graphpool/error.hpp"
#include "graphpool/memory/host_resource.hpp"

namespace graphpool::testing {

/// host_resource plus bookkeeping: live allocations (pointer -> bytes), frees that match none of
/// them, and an optional planted failure. Thread-safe, like the resource it wraps.
class counting_resource {
 public:
  [[nodiscard]] void* allocate_sync(std::size_t bytes, std::size_t alignment = default_alignment) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fail_at_ >= 0 && calls_++ == fail_at_) throw error("planted upstream failure");
    void* ptr = host_.allocate_sync(bytes, alignment);
    live_[ptr] = bytes;
    ++allocations_;
    return ptr;
  }

  void deallocate_sync(void* ptr, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = live_.find(ptr);
    if (found != live_.end() && found->second == bytes) {
      live_.erase(found);
    } else {
      ++mismatched_frees_;
    }
    host_.deallocate_sync(ptr, bytes, alignment);
  }

  /// Fails allocation number `call` (0-based, counted from now); -1 never fails.
  void fail_at(int call) {
    std::lock_guard<std::mutex> lock(mutex_);
    fail_at_ = call;
    calls_ = 0;
  }

  [[nodiscard]] std::size_t live_allocations() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.size();
  }
  [[nodiscard]] std::size_t live_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t sum = 0;
    for (const auto& [ptr, bytes] : live_) sum += bytes;
    return sum;
  }
  /// Every allocation that succeeded, returned or not.
  [[nodiscard]] std::size_t allocations() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return allocations_;
  }
  /// Frees of a pointer that is not live, or with a size other than the one allocated.
  [[nodiscard]] int mismatched_frees() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return mismatched_frees_;
  }

 private:
  mutable std::mutex mutex_;
  host_resource host_;
  std::map<void*, std::size_t> live_;
  std::size_t allocations_ = 0;
  int fail_at_ = -1;
  int calls_ = 0;
  int mismatched_frees_ = 0;
};

/// Gives every branch its own window (separate host buffers), like the virtual-memory upstream does
/// with separate virtual addresses over shared physical pages. `missing_windows` plants a broken
/// upstream that returns that many windows fewer than asked.
class windowed_resource {
 public:
  std::vector<void*> allocate_windows(std::size_t bytes, std::size_t alignment, std::size_t windows) {
    std::vector<void*> result;
    for (std::size_t i = 0; i + missing_windows < windows; ++i) result.push_back(host_.allocate_sync(bytes, alignment));
    live_windows += result.size();
    return result;
  }
  void deallocate_windows(const std::vector<void*>& windows, std::size_t bytes, std::size_t alignment) noexcept {
    for (void* w : windows) host_.deallocate_sync(w, bytes, alignment);
    live_windows -= windows.size();
  }
  std::size_t live_windows = 0;
  std::size_t missing_windows = 0;

 private:
  host_resource host_;
};

}  // namespace graphpool::testing
