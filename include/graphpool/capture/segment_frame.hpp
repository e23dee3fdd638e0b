#pragma once
/// @file segment_frame.hpp
/// @brief One (chunk, slot) frame of a segment_pool: its arena, a window per branch; each branch's bump
/// cursor, live segments and the pages that hold persistent bytes; and the runs that lay it out.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graphpool/alignment.hpp"
#include "graphpool/memory/page_run.hpp"

namespace graphpool::detail {

/// @brief The windows of one frame, one per branch, over its arena (made on first use). Not
/// thread-safe: segment_pool calls it under its lock.
template <class Arena>
class segment_frame final {
 public:
  using block_type = typename Arena::block_type;

  /// @brief A frame of `branches` windows of `page_bytes` pages, with no arena yet.
  segment_frame(std::size_t branches, std::size_t page_bytes)
      : used_(branches, 0), live_(branches, 0), persistent_(branches), page_bytes_(page_bytes) {}

  /// @brief Makes the arena with `make()` unless it is made already.
  template <class Make>
  void make_arena(Make&& make) {
    if (!arena_) arena_ = make();
  }

  /// @return where the next segment of `branch` would start in its window, aligned to `alignment`.
  [[nodiscard]] std::size_t next_start(std::size_t branch, std::size_t alignment) const noexcept {
    return align_up(used_[branch], alignment);
  }

  /// @return the address of byte `start` of `branch`'s window.
  [[nodiscard]] void* address(std::size_t branch, std::size_t start) const {
    return static_cast<std::byte*>(arena_->window(branch)) + start;
  }

  /// @brief Takes [start, start + bytes) of `branch`'s window (start from next_start()), mapping
  /// physical memory as far as it reaches. @throws what the arena throws; the cursor and live count
  /// stay as they were then (pages the arena mapped before failing stay mapped, as every grown page does).
  void take(std::size_t branch, std::size_t start, std::size_t bytes) {
    arena_->ensure(start + bytes);
    used_[branch] = start + bytes;
    ++live_[branch];
  }

  /// @brief A segment of `branch` came back; with its last one (and `restart`) the window starts again
  /// from 0 and forgets its persistent pages.
  void give_back(std::size_t branch, bool restart) noexcept {
    if (--live_[branch] == 0 && restart) {
      used_[branch] = 0;
      persistent_[branch].clear();
    }
  }

  /// @brief Marks the pages of `branch`'s window that bytes [address, address + bytes) touch as
  /// persistent; the bytes lie in one of its segments and `bytes` > 0.
  void mark_persistent(std::size_t branch, const void* address, std::size_t bytes) {
    const std::size_t offset = reinterpret_cast<std::uintptr_t>(address) - reinterpret_cast<std::uintptr_t>(arena_->window(branch));
    for (std::size_t page = offset / page_bytes_; page <= (offset + bytes - 1) / page_bytes_; ++page) {
      persistent_[branch].insert(page);
    }
  }

  /// @return bytes `branch` has taken from its window since it last started again.
  [[nodiscard]] std::size_t used_bytes(std::size_t branch) const noexcept { return used_[branch]; }
  /// @return pages of `branch`'s window holding persistent bytes.
  [[nodiscard]] std::size_t persistent_pages(std::size_t branch) const noexcept { return persistent_[branch].size(); }
  /// @return pages of `branch`'s window in use that hold no persistent byte.
  [[nodiscard]] std::size_t transient_pages(std::size_t branch) const noexcept {
    return used_pages(branch) - persistent_[branch].size();
  }
  /// @return the physical bytes behind the frame: its largest branch, rounded to the granularity.
  [[nodiscard]] std::size_t physical_bytes() const { return arena_ ? arena_->physical_bytes() : 0; }

  /// @brief Where every window's pages go when laid out: its persistent pages in order from `frame_offset`
  /// of `persistent`, every other used page on `scratch` from its start (one list per window; none
  /// without an arena). Changes nothing, so segment_pool checks every frame before remapping any.
  /// `what` names the frame in errors.
  /// @throws graphpool::error when the persistent pages run past the block's end.
  [[nodiscard]] std::vector<std::vector<basic_page_run<block_type>>> lay_out_runs(
      const std::shared_ptr<const block_type>& persistent, std::size_t frame_offset,
      const std::shared_ptr<const block_type>& scratch, const std::string& what,
      const std::vector<std::string>& branches) const {
    std::vector<std::vector<basic_page_run<block_type>>> runs;
    if (!arena_) return runs;
    for (std::size_t b = 0; b < used_.size(); ++b) {
      runs.push_back(liveness_runs(used_pages(b), persistent_[b], persistent, frame_offset, scratch, page_bytes_,
                                   what + " (" + branches[b] + ")"));
    }
    return runs;
  }

  /// @brief Maps every window anew by `runs` from lay_out_runs(); does nothing without an arena.
  /// @throws what the arena's remap() throws.
  void remap(const std::vector<std::vector<basic_page_run<block_type>>>& runs) {
    if (arena_) arena_->remap(runs);
  }

 private:
  [[nodiscard]] std::size_t used_pages(std::size_t branch) const noexcept {
    return (used_[branch] + page_bytes_ - 1) / page_bytes_;
  }

  std::unique_ptr<Arena> arena_;
  std::vector<std::size_t> used_;                  // per branch: the window's bump cursor
  std::vector<std::size_t> live_;                  // per branch: segments not yet given back
  std::vector<std::set<std::size_t>> persistent_;  // per branch: pages holding persistent bytes
  std::size_t page_bytes_;
};

}  // namespace graphpool::detail
