#pragma once
/// @file slot_guard.hpp
/// @brief The guard: an optional runtime check that no launch reuses an arena another live frame owns.
///
/// Each arena has an owner. The forward launch of a frame claims the arenas of its saved tensors and
/// outputs; the matching backward releases them. A forward that would claim an arena owned by another
/// live frame — another branch, or another microbatch after a slot wrap — fails before it is enqueued,
/// naming both frames and the arena. The state machine needs no GPU (no CUDA header).

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "graphpool/error.hpp"

namespace graphpool {

/// @brief Which frame a launch belongs to: (chunk, microbatch, layer) of one branch.
struct frame_label {
  int chunk = 0;
  int microbatch = 0;
  int layer = 0;
  std::string branch;

  [[nodiscard]] friend bool operator==(const frame_label& a, const frame_label& b) noexcept {
    return a.chunk == b.chunk && a.microbatch == b.microbatch && a.layer == b.layer && a.branch == b.branch;
  }

  /// @return "chunk 1 microbatch 9 layer 0 (branch cp2)".
  [[nodiscard]] std::string describe() const {
    return "chunk " + std::to_string(chunk) + " microbatch " + std::to_string(microbatch) + " layer " +
           std::to_string(layer) + " (branch " + branch + ")";
  }
};

/// @return true when the environment asks for the guard (GRAPHPOOL_SLOT_DEBUG=1).
[[nodiscard]] inline bool slot_debug_requested() noexcept {
  const char* value = std::getenv("GRAPHPOOL_SLOT_DEBUG");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

/// @brief Owners of arenas, checked on every claim.
///
/// Thread-safety: every member may be called from several threads at once (one mutex; the guard is a
/// debugging aid, and a disabled guard takes no lock: its calls return at once).
class slot_guard final {
 public:
  /// @brief A guard that checks when `enabled` (by default: when GRAPHPOOL_SLOT_DEBUG=1).
  explicit slot_guard(bool enabled = slot_debug_requested()) noexcept : enabled_(enabled) {}

  [[nodiscard]] bool enabled() const noexcept { return enabled_; }

  /// @brief `frame` takes `arenas` (a forward launch). All or nothing.
  /// @throws graphpool::error naming both frames and the arena when another live frame owns one of them.
  void claim(const std::vector<std::size_t>& arenas, const frame_label& frame) {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t arena : arenas) {
      const auto found = owners_.find(arena);
      if (found != owners_.end() && !(found->second == frame)) {
        throw error("slot guard: the launch of " + frame.describe() + " would reuse arena " + std::to_string(arena) +
                    ", still owned by " + found->second.describe() +
                    " whose backward has not run; the arena assignment is too small for this schedule "
                    "(plan with every schedule you replay)");
      }
    }
    for (std::size_t arena : arenas) owners_[arena] = frame;
  }

  /// @brief `frame` gives `arenas` back (its backward launch). All or nothing.
  /// @throws graphpool::error when an arena is not owned by `frame` (a backward without its forward).
  void release(const std::vector<std::size_t>& arenas, const frame_label& frame) {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t arena : arenas) {
      const auto found = owners_.find(arena);
      if (found == owners_.end() || !(found->second == frame)) {
        throw error("slot guard: the backward of " + frame.describe() + " releases arena " + std::to_string(arena) +
                    (found == owners_.end() ? std::string(", which no frame owns")
                                            : ", which " + found->second.describe() + " owns") +
                    "; run each backward after its own forward");
      }
    }
    for (std::size_t arena : arenas) owners_.erase(arena);
  }

  /// @return how many arenas are owned now.
  [[nodiscard]] std::size_t owned() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return owners_.size();
  }

  /// @brief Forgets every owner (after an aborted step).
  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    owners_.clear();
  }

 private:
  bool enabled_;
  mutable std::mutex mutex_;
  std::unordered_map<std::size_t, frame_label> owners_;
};

}  // namespace graphpool
