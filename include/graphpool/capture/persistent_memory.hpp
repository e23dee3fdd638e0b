#pragma once
/// @file persistent_memory.hpp
/// @brief Where a capture's persistent requests go: a declared layout, a measurement, a replay of a
/// measurement, or a growing window over shared physical pages.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/capture/capture_session.hpp"
#include "graphpool/error.hpp"
#include "graphpool/memory/arena_allocator.hpp"
#include "graphpool/memory/layout.hpp"
#include "graphpool/memory/shared_physical_resource.hpp"

namespace graphpool {

/// @brief For captures that use transient memory only: every persistent request is an error.
class no_persistent_memory final : public persistent_memory {
 public:
  void* allocate(capture_session& session, persistent_kind, std::size_t bytes, std::size_t) override {
    throw error(session.where() + ": persistent request of " + std::to_string(bytes) +
                " bytes, but this capture has no persistent memory; give it the slot's arena");
  }
  void rollback() noexcept override {}
};

/// @brief A branch whose layout was declared on an arena_allocator: requests get its parts in order
/// (the k-th output request output part k, the k-th saved request saved part k).
template <class Upstream>
class declared_branch final : public persistent_memory {
 public:
  /// @brief The branch's parts; the allocator must be reserved and outlive this object.
  declared_branch(const arena_allocator<Upstream>& arenas, slot_id slot, branch_id branch)
      : view_(arenas.view(slot, branch)), cursor_(view_) {}

  void* allocate(capture_session&, persistent_kind kind, std::size_t bytes, std::size_t alignment) override {
    return kind == persistent_kind::output ? cursor_.allocate_output(bytes, alignment)
                                           : cursor_.allocate_saved(bytes, alignment);
  }
  void rollback() noexcept override { cursor_ = branch_cursor(view_); }
  void commit() override { cursor_ = branch_cursor(view_); }

 private:
  branch_view view_;
  branch_cursor cursor_;
};

/// @brief One persistent request as a measurement recorded it.
struct recorded_request {
  persistent_kind kind = persistent_kind::saved;
  std::size_t bytes = 0;
  std::size_t alignment = default_alignment;
};

namespace detail {

/// @brief Throws unless request `index` (kind, bytes, alignment) repeats `expected[index]` exactly;
/// `where` names the capture.
inline void check_replayed_request(const std::string& where, std::size_t index,
                                   const std::vector<recorded_request>& expected, persistent_kind kind,
                                   std::size_t bytes, std::size_t alignment) {
  auto describe = [](persistent_kind k, std::size_t b, std::size_t a) {
    return std::string(k == persistent_kind::output ? "output" : "saved") + " " + std::to_string(b) + " B @" +
           std::to_string(a);
  };
  if (index >= expected.size()) {
    throw error(where + ": persistent request " + std::to_string(index) + " (" + describe(kind, bytes, alignment) +
                ") differs from the measurement, which made only " + std::to_string(expected.size()) +
                " request(s); the captured code must make the same requests");
  }
  const recorded_request& e = expected[index];
  if (e.kind != kind || e.bytes != bytes || e.alignment != alignment) {
    throw error(where + ": persistent request " + std::to_string(index) + " (" + describe(kind, bytes, alignment) +
                ") differs from the measurement (" + describe(e.kind, e.bytes, e.alignment) +
                "); the captured code must make the same requests");
  }
}

/// @brief Throws unless a capture made as many persistent requests as its measurement.
inline void check_replayed_count(const std::string& who, std::size_t made, std::size_t measured) {
  if (made != measured) {
    throw error(who + " made " + std::to_string(made) + " persistent request(s), its measurement " +
                std::to_string(measured) + "; the captured code must make the same requests");
  }
}

}  // namespace detail

/// @brief The first pass of measure-then-capture: records a branch's persistent requests while a
/// throw-away capture runs, serving them from transient graph memory (valid inside that graph,
/// which is discarded). layout() then declares the branch on an arena_allocator.
class measuring_branch final : public persistent_memory {
 public:
  void* allocate(capture_session& session, persistent_kind kind, std::size_t bytes, std::size_t alignment) override {
    void* ptr = session.allocate_transient(bytes, alignment);
    pending_.push_back({kind, bytes, alignment});
    return ptr;
  }
  void rollback() noexcept override { pending_.clear(); }
  void commit() override {
    requests_ = std::move(pending_);
    pending_.clear();
    measured_ = true;
  }

  /// @return true once a measuring capture finished.
  [[nodiscard]] bool measured() const noexcept { return measured_; }
  /// @return the requests the finished measurement recorded, in order.
  [[nodiscard]] const std::vector<recorded_request>& requests() const noexcept { return requests_; }

  /// @return the branch layout the measurement implies: output requests as outputs, saved ones as saved.
  /// @throws graphpool::error before a measuring capture finished.
  [[nodiscard]] branch_layout layout() const {
    if (!measured_) throw error("measuring_branch: no measuring capture has finished yet");
    branch_layout result;
    for (const recorded_request& r : requests_) {
      (r.kind == persistent_kind::output ? result.outputs : result.saved).push_back(part(r.bytes, r.alignment));
    }
    return result;
  }

 private:
  std::vector<recorded_request> pending_;
  std::vector<recorded_request> requests_;
  bool measured_ = false;
};

/// @brief The second pass of measure-then-capture: the real capture must repeat its measurement's
/// requests exactly; each gets the same address it was planned at.
template <class Upstream>
class replaying_branch final : public persistent_memory {
 public:
  /// @brief Replays `measurement` against (slot, branch) of `arenas`, declared from measurement.layout().
  replaying_branch(const arena_allocator<Upstream>& arenas, slot_id slot, branch_id branch,
                   const measuring_branch& measurement)
      : expected_(measurement.requests()), declared_(arenas, slot, branch) {}

  void* allocate(capture_session& session, persistent_kind kind, std::size_t bytes, std::size_t alignment) override {
    detail::check_replayed_request(session.where(), next_, expected_, kind, bytes, alignment);
    ++next_;
    return declared_.allocate(session, kind, bytes, alignment);
  }
  void rollback() noexcept override {
    next_ = 0;
    declared_.rollback();
  }
  void commit() override {
    detail::check_replayed_count("the real capture", next_, expected_.size());
    next_ = 0;
    declared_.commit();
  }

 private:
  std::vector<recorded_request> expected_;
  declared_branch<Upstream> declared_;
  std::size_t next_ = 0;
};

/// @brief Persistent requests of branch `window` bumped through its window of a growing
/// shared_window_arena: no layout is declared up front, one capture per branch suffices, and the
/// arena's physical memory is the largest branch's high-water mark. Each capture starts at offset 0.
/// Captures on several threads may each use a window_branch of one arena (the arena is thread-safe).
class window_branch final : public persistent_memory {
 public:
  window_branch(shared_window_arena& arena, std::size_t window) : arena_(arena), window_(window) {
    if (window >= arena.windows()) {
      throw error("window_branch: window " + std::to_string(window) + " of an arena with " +
                  std::to_string(arena.windows()) + " window(s); windows are numbered from 0 (one per branch): make "
                  "the arena with a window for every branch");
    }
  }

  void* allocate(capture_session& session, persistent_kind, std::size_t bytes, std::size_t alignment) override {
    detail::check_alignment(alignment, session.where() + ": persistent request of " + std::to_string(bytes) + " bytes");
    const std::size_t offset = align_up(used_, alignment);
    if (offset < used_ || bytes > SIZE_MAX - offset) {
      throw error(session.where() + ": persistent request of " + std::to_string(bytes) + " bytes after " +
                  std::to_string(used_) + " bytes of window " + std::to_string(window_) + " overflows the address range");
    }
    try {
      arena_.ensure(offset + bytes);  // grows every window; allowed during capture
    } catch (const error& e) {
      throw error(session.where() + ": " + e.what(), e.cuda_code());
    }
    used_ = offset + bytes;
    high_water_ = std::max(high_water_, used_);
    return static_cast<std::byte*>(arena_.window(window_)) + offset;
  }
  void rollback() noexcept override { used_ = 0; }
  void commit() override { used_ = 0; }

  /// @return the most bytes any capture of this branch used.
  [[nodiscard]] std::size_t high_water() const noexcept { return high_water_; }

 private:
  shared_window_arena& arena_;
  std::size_t window_;
  std::size_t used_ = 0;
  std::size_t high_water_ = 0;
};

}  // namespace graphpool
