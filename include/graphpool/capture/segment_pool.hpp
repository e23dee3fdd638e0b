#pragma once
/// @file segment_pool.hpp
/// @brief Segments for a framework that captures its own graphs (PyTorch's caching allocator): each
/// (chunk, slot) frame is one arena seen through a window per branch, so the branches of a frame
/// share physical pages while every segment keeps an address of its own.
///
/// The framework asks for whole segments while it captures; which frame and branch they come from is
/// chosen beforehand with select(). A segment is carved from the selected branch's window of the
/// selected frame's arena; the arena maps physical memory as the largest branch grows, so a frame
/// holds the largest of its branches, never their sum. Sizing is learned during the capture: a
/// request never fails for want of a plan (only when the device is out of memory or the window's
/// address space is exhausted).
///
/// Once every capture is done, lay_out() maps each window anew, page by page: pages holding a byte that
/// must live from a forward replay to its backward (add_persistent()) go to the frame's private pages,
/// placed at the frame's planned offset in one block; every other page (what a replay writes and no
/// later replay of another copy reads: transients, returned gradients) goes to one scratch block that
/// every window shares, since graphs launched on one stream never run at once.
///
/// `Arena` is shared_window_arena (device memory, see memory/shared_window_arena.hpp); host tests use a
/// stand-in with the same members: ensure(bytes), window(index), physical_bytes(), remap(runs) and
/// `block_type` (made by the block factory).
/// Thread-safety: every member may be called from several threads at once (frameworks free segments
/// from whichever thread drops the last reference).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/capture/segment_frame.hpp"
#include "graphpool/capture/segment_source.hpp"
#include "graphpool/detail/format.hpp"
#include "graphpool/error.hpp"
#include "graphpool/ids.hpp"
#include "graphpool/memory/page_run.hpp"

namespace graphpool {

/// @brief Segments of (chunk, slot) frames whose branches share physical pages.
template <class Arena>
class segment_pool final {
 public:
  /// Makes the arena of one frame: `windows` windows (one per branch) of `capacity` bytes of address space.
  using arena_factory = std::function<std::unique_ptr<Arena>(std::size_t windows, std::size_t capacity)>;
  using block_type = typename Arena::block_type;
  /// Makes a physical block of `bytes` (a multiple of the page size) for lay_out().
  using block_factory = std::function<std::shared_ptr<const block_type>(std::size_t bytes)>;
  using run = basic_page_run<block_type>;

  /// Every segment starts on this boundary (what cudaMalloc guarantees and the caching allocator expects).
  static constexpr std::size_t segment_alignment = 512;

  /// @brief `chunks` × `slots` frames, each an arena with one window of `window_capacity` bytes per branch;
  /// physical memory comes in pages of `page_bytes`. Arenas are made when a source is first selected.
  /// @throws graphpool::error for no chunk, slot or branch, a zero capacity or a page size that is not a
  /// power of two.
  segment_pool(arena_factory make_arena, block_factory make_block, int chunks, int slots, std::vector<std::string> branches,
               std::size_t window_capacity, std::size_t page_bytes)
      : make_arena_(std::move(make_arena)), make_block_(std::move(make_block)), chunks_(chunks), slots_(slots),
        branches_(std::move(branches)), window_capacity_(window_capacity), page_bytes_(page_bytes) {
    if (page_bytes == 0 || (page_bytes & (page_bytes - 1)) != 0) {
      throw error("segment_pool: the page size " + std::to_string(page_bytes) + " is not a power of two");
    }
    if (chunks < 1 || slots < 1 || branches_.empty()) {
      throw error("segment_pool: needs at least one chunk, one slot and one branch (got " + std::to_string(chunks) +
                  " chunks, " + std::to_string(slots) + " slots, " + std::to_string(branches_.size()) + " branches)");
    }
    if (window_capacity == 0) throw error("segment_pool: the window capacity is 0 bytes; give each window address space");
    const std::size_t frame_count = static_cast<std::size_t>(chunks) * static_cast<std::size_t>(slots);
    frames_.reserve(frame_count);
    for (std::size_t i = 0; i < frame_count; ++i) frames_.emplace_back(branches_.size(), page_bytes);
  }

  segment_pool(const segment_pool&) = delete;
  segment_pool& operator=(const segment_pool&) = delete;

  /// @brief Segments asked for from now on come from `source`'s window (its frame's arena is made now,
  /// outside any capture). @throws graphpool::error naming the chunk, slot or branch that is out of
  /// range, or after lay_out().
  void select(segment_source source) {
    check(source);
    std::lock_guard<std::mutex> lock(mutex_);
    if (laid_out_) throw error("segment_pool: the frames were laid out already; no source can be selected after lay_out()");
    frames_[index(source)].make_arena([&] { return make_arena_(branches_.size(), window_capacity_); });
    selected_ = source;
  }

  /// @brief Segments asked for from now on are refused (outside graphpool's captures).
  void deselect() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    selected_.reset();
  }

  /// @return the source segments come from now, if any.
  [[nodiscard]] std::optional<segment_source> selected() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return selected_;
  }

  /// @brief A segment of `bytes` from the selected source; 0 bytes give nullptr.
  /// @throws graphpool::error with nothing selected, or when the window's address space or the device's
  /// memory runs out (naming the source and the sizes); nothing is taken then.
  void* allocate(std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!selected_) {
      throw error("segment_pool: a segment of " + detail::format_bytes(bytes) +
                  " was asked for with no frame selected; segments come only from inside graphpool's captures "
                  "(select a chunk, slot and branch first)");
    }
    if (bytes == 0) return nullptr;
    const segment_source source = *selected_;  // lay_out() clears the selection: no segment comes after it
    frame& f = frames_[index(source)];
    const std::size_t start = f.next_start(source.branch.index, segment_alignment);
    if (bytes > window_capacity_ || start > window_capacity_ - bytes) {
      throw error("segment_pool: " + source.describe(branches_) + " needs " + detail::format_bytes(start + bytes) +
                  " but each window has " + detail::format_bytes(window_capacity_) +
                  " of address space; create the pool with a larger window capacity");
    }
    void* segment = f.address(source.branch.index, start);
    const auto [entry, inserted] = segments_.emplace(segment, live_segment{source, bytes});
    if (!inserted) {  // the cursor passes every live segment of the window, so this is a broken invariant
      throw error("segment_pool: internal error: " + source.describe(branches_) + " would hand out a live segment again");
    }
    try {
      f.take(source.branch.index, start, bytes);
    } catch (...) {
      segments_.erase(entry);  // nothing taken
      throw;
    }
    return segment;
  }

  /// @brief Gives back a segment from allocate(). When a branch's last segment of a frame comes back,
  /// its window starts again from 0 (a failed capture leaves the branch capturable); physical memory
  /// stays mapped until the pool is destroyed.
  /// @return false for a pointer this pool never handed out (or already took back); nothing changes then.
  bool deallocate(void* segment) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = segments_.find(segment);
    if (found == segments_.end()) return false;
    const segment_source source = found->second.source;
    segments_.erase(found);
    frames_[index(source)].give_back(source.branch.index, !laid_out_);
    return true;
  }

  /// @brief Marks bytes [address, address + bytes) as alive from a forward replay to its backward, if
  /// they lie in a segment of `source`. @return false (nothing marked) for bytes outside `source`'s
  /// segments: frameworks list every live block, the pool keeps those of the source asked about.
  bool add_persistent(segment_source source, const void* address, std::size_t bytes) {
    check(source);
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = segments_.upper_bound(const_cast<void*>(address));
    if (found == segments_.begin() || bytes == 0) return false;
    --found;
    const auto at = reinterpret_cast<std::uintptr_t>(address);
    const auto start = reinterpret_cast<std::uintptr_t>(found->first);
    const live_segment& segment = found->second;
    if (segment.source.chunk != source.chunk || segment.source.slot != source.slot || segment.source.branch != source.branch ||
        at + bytes > start + segment.bytes) {
      return false;
    }
    frames_[index(source)].mark_persistent(source.branch.index, address, bytes);
    return true;
  }

  /// @return pages of `source`'s window that hold persistent bytes.
  [[nodiscard]] std::size_t persistent_pages(segment_source source) const {
    check(source);
    std::lock_guard<std::mutex> lock(mutex_);
    return frames_[index(source)].persistent_pages(source.branch.index);
  }

  /// @return pages of `source`'s window in use that hold no persistent byte.
  [[nodiscard]] std::size_t transient_pages(segment_source source) const {
    check(source);
    std::lock_guard<std::mutex> lock(mutex_);
    return frames_[index(source)].transient_pages(source.branch.index);
  }

  /// @brief Maps every window anew (see the class comment): the persistent pages of frame i at
  /// `frame_offsets[i]` (chunk-major, then slot; whole pages) of one block of `persistent_bytes`, every
  /// other used page on one shared scratch block. The frames' growable memory is released. Once, after
  /// the captures and before any replay (contents are not carried over).
  /// @throws graphpool::error for offsets that are not one per frame, when a frame's persistent pages run
  /// past the block's end (naming the frame's chunk and slot), or a second time; nothing is remapped then
  /// and lay_out() may be called again. When the driver refuses a mapping, frames remapped before it stay
  /// remapped (make a new pool and capture again).
  void lay_out(const std::vector<std::size_t>& frame_offsets, std::size_t persistent_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (laid_out_) throw error("segment_pool::lay_out: the frames were laid out already");
    if (frame_offsets.size() != frames_.size()) {
      throw error("segment_pool::lay_out: " + std::to_string(frame_offsets.size()) + " offsets for " +
                  std::to_string(frames_.size()) + " frames; give one offset per (chunk, slot) frame, chunk-major");
    }
    std::size_t scratch_pages = 0;
    for (const frame& f : frames_) {
      for (std::size_t b = 0; b < branches_.size(); ++b) scratch_pages = std::max(scratch_pages, f.transient_pages(b));
    }
    std::shared_ptr<const block_type> persistent = persistent_bytes > 0 ? make_block_(persistent_bytes) : nullptr;
    std::shared_ptr<const block_type> scratch = scratch_pages > 0 ? make_block_(scratch_pages * page_bytes_) : nullptr;
    // Every frame's runs first: a plan that does not fit the block is refused before any window changes.
    std::vector<std::vector<std::vector<run>>> runs;
    runs.reserve(frames_.size());
    for (std::size_t i = 0; i < frames_.size(); ++i) {
      const auto slots = static_cast<std::size_t>(slots_);
      const std::string what = "segment_pool::lay_out: frame " + std::to_string(i) + " (" +
                               chunk_id{static_cast<std::uint32_t>(i / slots)}.describe() + ", " +
                               slot_id{static_cast<std::uint32_t>(i % slots)}.describe() + ")";
      runs.push_back(frames_[i].lay_out_runs(persistent, frame_offsets[i], scratch, what, branches_));
    }
    for (std::size_t i = 0; i < frames_.size(); ++i) frames_[i].remap(runs[i]);
    blocks_ = {persistent, scratch};
    scratch_bytes_ = scratch_pages * page_bytes_;
    laid_out_ = true;
    selected_.reset();
  }

  /// @return whether lay_out() has run.
  [[nodiscard]] bool laid_out() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return laid_out_;
  }

  /// @return the shared scratch block's bytes after lay_out() (0 before).
  [[nodiscard]] std::size_t scratch_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return scratch_bytes_;
  }

  /// @return bytes `source`'s branch has taken from its frame's window (its high-water mark since the
  /// window last started again).
  [[nodiscard]] std::size_t used_bytes(segment_source source) const {
    check(source);
    std::lock_guard<std::mutex> lock(mutex_);
    return frames_[index(source)].used_bytes(source.branch.index);
  }

  /// @return the physical bytes behind the (chunk, slot) frame: its largest branch, rounded to the granularity.
  [[nodiscard]] std::size_t frame_physical_bytes(chunk_id chunk, slot_id slot) const {
    check({chunk, slot, branch_id{0}});
    std::lock_guard<std::mutex> lock(mutex_);
    return frames_[index({chunk, slot, branch_id{0}})].physical_bytes();
  }

  /// @return the physical bytes of every frame (after lay_out(): the persistent and scratch blocks).
  [[nodiscard]] std::size_t physical_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t total = 0;
    for (const frame& f : frames_) total += f.physical_bytes();
    for (const auto& block : blocks_) total += block ? block->bytes() : 0;
    return total;
  }

  /// @return segments handed out and not yet given back.
  [[nodiscard]] std::size_t live_segments() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return segments_.size();
  }

  [[nodiscard]] int chunks() const noexcept { return chunks_; }
  [[nodiscard]] int slots() const noexcept { return slots_; }
  [[nodiscard]] const std::vector<std::string>& branches() const noexcept { return branches_; }
  [[nodiscard]] std::size_t window_capacity() const noexcept { return window_capacity_; }
  [[nodiscard]] std::size_t page_bytes() const noexcept { return page_bytes_; }

 private:
  using frame = detail::segment_frame<Arena>;
  struct live_segment {
    segment_source source;
    std::size_t bytes;
  };

  void check(segment_source source) const { source.check_within(chunks_, slots_, branches_.size()); }

  [[nodiscard]] std::size_t index(segment_source source) const noexcept {
    return static_cast<std::size_t>(source.chunk.index) * static_cast<std::size_t>(slots_) + source.slot.index;
  }

  arena_factory make_arena_;
  block_factory make_block_;
  int chunks_;
  int slots_;
  std::vector<std::string> branches_;
  std::size_t window_capacity_;
  std::size_t page_bytes_;
  mutable std::mutex mutex_;
  std::vector<frame> frames_;  // chunk-major, then slot
  std::map<void*, live_segment> segments_;
  std::optional<segment_source> selected_;
  bool laid_out_ = false;
  std::vector<std::shared_ptr<const block_type>> blocks_;  // after lay_out(): persistent, scratch
  std::size_t scratch_bytes_ = 0;
};

}  // namespace graphpool
