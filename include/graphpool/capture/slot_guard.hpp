#pragma once
/// @file slot_guard.hpp
/// @brief The guard: an optional runtime check that no launch reuses memory a live frame still holds.
///
/// The forward launch of a frame claims the bytes its saved tensors and outputs occupy (an arena and
/// a range inside it); the matching backward releases them. A forward whose bytes overlap another
/// live frame's — another branch, or another microbatch after a slot wrap — and a backward whose
/// forward never ran are refused before anything is enqueued, naming both frames. Ranges are arena
/// offsets, not addresses, so branches that see one physical arena through different address
/// windows still collide. The state machine needs no GPU (no CUDA header).

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/error.hpp"
#include "graphpool/ids.hpp"

namespace graphpool {

/// @brief Which frame a launch belongs to: (chunk, microbatch, layer) of one branch.
struct frame_label {
  chunk_id chunk;
  int microbatch = 0;
  layer_id layer;
  branch_id branch;

  [[nodiscard]] friend bool operator==(const frame_label& a, const frame_label& b) noexcept {
    return a.chunk == b.chunk && a.microbatch == b.microbatch && a.layer == b.layer && a.branch == b.branch;
  }
  [[nodiscard]] friend bool operator!=(const frame_label& a, const frame_label& b) noexcept { return !(a == b); }
};

/// @brief Bytes [offset, offset + bytes) of one arena.
struct memory_range {
  arena_id arena;
  std::size_t offset = 0;
  std::size_t bytes = 0;

  [[nodiscard]] bool overlaps(const memory_range& other) const noexcept {
    return arena == other.arena && bytes > 0 && other.bytes > 0 && offset < other.offset + other.bytes &&
           other.offset < offset + bytes;
  }
};

/// @return true when the environment asks for the guard: GRAPHPOOL_SLOT_DEBUG set to anything but "" or
/// "0" (e.g. 1), as the Python package reads it.
[[nodiscard]] inline bool slot_debug_requested() noexcept {
  const char* value = std::getenv("GRAPHPOOL_SLOT_DEBUG");
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

/// @brief The live frames and the bytes each holds, checked on every forward and backward.
///
/// Use: check_claim() then claim() around a forward's enqueue (or claim() alone: it checks too),
/// check_release() before a backward's enqueue and release() after it; unclaim() undoes a claim
/// whose launch failed. guarded_forward() and guarded_backward() do each in that order around a
/// launch. Thread-safety: every member may be called from several threads at once (one mutex; the
/// guard is a debugging aid, and a disabled guard takes no lock: its calls return at once).
class slot_guard final {
 public:
  /// @brief A guard that checks when `enabled` (by default: when GRAPHPOOL_SLOT_DEBUG=1);
  /// `branch_names[b]` names branch b in messages.
  explicit slot_guard(bool enabled = slot_debug_requested(), std::vector<std::string> branch_names = {})
      : enabled_(enabled), branch_names_(std::move(branch_names)) {}

  [[nodiscard]] bool enabled() const noexcept { return enabled_; }

  /// @brief Refuses a forward of `frame` over `range` when another live frame holds overlapping bytes.
  /// @throws graphpool::error naming both frames, the arena and both ranges.
  void check_claim(const frame_label& frame, const memory_range& range) const {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    check_claim_locked(frame, range);
  }

  /// @brief `frame` takes `range` (its forward is being enqueued). Claiming a frame that is already
  /// live with the same range does nothing (a re-launch of its forward).
  /// @return true when the claim is new, false for a frame already live (or a disabled guard).
  /// @throws graphpool::error as check_claim(); nothing is claimed then.
  bool claim(const frame_label& frame, const memory_range& range) {
    if (!enabled_) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    check_claim_locked(frame, range);
    for (const live_frame& l : live_) {
      if (l.frame == frame) return false;
    }
    live_.push_back({frame, range});
    return true;
  }

  /// @brief Refuses a backward of `frame` whose forward is not live.
  /// @throws graphpool::error naming the frame, and, given the frame's `range`, the live frame that
  /// holds those bytes when one does.
  void check_release(const frame_label& frame, const std::optional<memory_range>& range = std::nullopt) const {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    static_cast<void>(live_index(frame, range));
  }

  /// @brief `frame` gives its bytes back (its backward was enqueued).
  /// @throws graphpool::error as check_release().
  void release(const frame_label& frame) {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(live_index(frame, std::nullopt)));
  }

  /// @brief Forgets `frame`'s claim without checks (its forward's launch failed); never throws.
  void unclaim(const frame_label& frame) noexcept {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i < live_.size(); ++i) {
      if (live_[i].frame == frame) {
        live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
    }
  }

  /// @brief claim(), then `launch()` (the enqueue of `frame`'s forward over `range`); when the launch
  /// throws, unclaim() before rethrowing. A forward refused or failed holds nothing; a failed re-launch
  /// of a live frame's forward keeps the claim of the forward that ran.
  template <class Launch>
  void guarded_forward(const frame_label& frame, const memory_range& range, Launch&& launch) {
    const bool claimed = claim(frame, range);
    try {
      launch();
    } catch (...) {
      if (claimed) unclaim(frame);
      throw;
    }
  }

  /// @brief check_release(), `launch()` (the enqueue of `frame`'s backward), then release(). Given the
  /// frame's `range` (std::nullopt: none), a refusal names the live frame holding its bytes.
  template <class Launch>
  void guarded_backward(const frame_label& frame, const std::optional<memory_range>& range, Launch&& launch) {
    check_release(frame, range);
    launch();
    release(frame);
  }

  /// @return how many frames are live now.
  [[nodiscard]] std::size_t live() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.size();
  }

  /// @brief Forgets every live frame (after an aborted step).
  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.clear();
  }

  /// @return "chunk 1 microbatch 9 layer 0 (branch cp2)".
  [[nodiscard]] std::string describe(const frame_label& frame) const {
    const std::string branch = frame.branch.index < branch_names_.size() ? branch_names_[frame.branch.index]
                                                                          : std::to_string(frame.branch.index);
    return "chunk " + std::to_string(frame.chunk.index) + " microbatch " + std::to_string(frame.microbatch) +
           " layer " + std::to_string(frame.layer.index) + " (branch " + branch + ")";
  }

 private:
  struct live_frame {
    frame_label frame;
    memory_range range;
  };

  // The index of `frame` among the live frames; throws when its forward is not live, naming the live
  // frame that holds `range` (the frame's bytes) when one is given and one does.
  [[nodiscard]] std::size_t live_index(const frame_label& frame, const std::optional<memory_range>& range) const {
    for (std::size_t i = 0; i < live_.size(); ++i) {
      if (live_[i].frame == frame) return i;
    }
    std::string holder;
    if (range.has_value()) {
      for (const live_frame& l : live_) {
        if (l.range.overlaps(*range)) {
          holder = "; its bytes (" + describe_range(*range) + ") are held by " + describe(l.frame);
          break;
        }
      }
    }
    throw error("slot guard: the backward of " + describe(frame) +
                " has no live forward: it never ran, or its backward already did" + holder +
                "; run each backward once, after its own forward");
  }

  void check_claim_locked(const frame_label& frame, const memory_range& range) const {
    for (const live_frame& l : live_) {
      if (l.frame != frame && l.range.overlaps(range)) {
        throw error("slot guard: the forward of " + describe(frame) + " would overwrite " + describe_range(range) +
                    ", which overlaps " + describe_range(l.range) + " still held by " + describe(l.frame) +
                    " whose backward has not run; the plan does not fit this order (plan with every schedule "
                    "you replay, and launch each microbatch through its slot map)");
      }
    }
  }

  [[nodiscard]] static std::string describe_range(const memory_range& range) {
    return "arena " + std::to_string(range.arena.index) + " bytes [" + std::to_string(range.offset) + ", " +
           std::to_string(range.offset + range.bytes) + ")";
  }

  bool enabled_;
  std::vector<std::string> branch_names_;
  mutable std::mutex mutex_;
  std::vector<live_frame> live_;
};

}  // namespace graphpool
