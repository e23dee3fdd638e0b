#pragma once
/// @file periodic_replay.hpp
/// @brief The other counts of a union replayed over copies laid out periodically for its anchor
/// (periodic_layout.hpp): each microbatch that lives within the anchor's same microbatch keeps its copy,
/// and the rest are replayed around them, or, where no copy is free for them, a count's last microbatches
/// are laid out afresh around the others. Host-only: no CUDA header.
///
/// The counts share their first events with the anchor, so what lives together in a count lived together
/// in the anchor, apart in bytes. A count whose last group holds fewer microbatches starts that group's
/// forwards earlier: those outlive the anchor's same microbatches, and the anchor's copies may leave them
/// none free. Counts a ring apart end alike over copies that repeat with the ring, so the tail one count
/// laid out serves the next ones.

#include <algorithm>
#include <cstddef>
#include <vector>

#include "graphpool/plan/bounded_layout.hpp"
#include "graphpool/plan/copy_table.hpp"
#include "graphpool/plan/frame_intervals.hpp"
#include "graphpool/plan/periodic_layout.hpp"

namespace graphpool::plan::detail {

/// @return per item of `items` (one count), the anchor's copy of the same microbatch where the item lives
/// within it, else -1 (and -1 for a chunk of no bytes): the copies a replay over the anchor's periodic
/// copies keeps (replay_over's `fixed`), the rest replayed around them.
[[nodiscard]] inline std::vector<std::ptrdiff_t> within_anchor(const std::vector<lifetime>& items,
                                                               const std::vector<std::size_t>& chunk_bytes,
                                                               const std::vector<lifetime>& anchor_items,
                                                               const std::vector<std::ptrdiff_t>& anchor_copy_of) {
  std::vector<std::vector<std::size_t>> anchor_at(chunk_bytes.size());
  for (std::size_t i = 0; i < anchor_items.size(); ++i) {
    std::vector<std::size_t>& row = anchor_at[static_cast<std::size_t>(anchor_items[i].chunk)];
    const auto m = static_cast<std::size_t>(anchor_items[i].microbatch);
    if (row.size() <= m) row.resize(m + 1, static_cast<std::size_t>(-1));
    row[m] = i;
  }
  std::vector<std::ptrdiff_t> fixed(items.size(), -1);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::vector<std::size_t>& row = anchor_at[static_cast<std::size_t>(items[i].chunk)];
    const auto m = static_cast<std::size_t>(items[i].microbatch);
    const std::size_t a = m < row.size() ? row[m] : static_cast<std::size_t>(-1);
    const bool within = a != static_cast<std::size_t>(-1) && anchor_items[a].start <= items[i].start &&
                        items[i].end <= anchor_items[a].end;
    if (within) fixed[i] = anchor_copy_of[a];
  }
  return fixed;
}

/// The last microbatches of a count of a union as lay_out_tail laid them out:
/// offsets[chunk][microbatches from the end][layer].
struct periodic_tail {
  int length = 0;  ///< microbatches from the end laid out afresh
  std::vector<std::vector<std::vector<std::size_t>>> offsets;
};

/// A count of a union (`items`) that found no replay over the anchor's periodic copies, its last
/// microbatches laid out afresh around the others, which keep the copies `kept` gives them (within_anchor):
/// as one of `tails` laid them out, else by height_search, from the first microbatch that lives outside the
/// anchor's on, then from one earlier, ... `period` (the anchor's group, period_of) earlier (their frames
/// have more room among the others'); under each of `heights` in turn (rising). The frames are then bound
/// to copies, new ones where none sits there (at most `budget` of a chunk); what height_search laid out is
/// added to `tails`.
/// Copy id per item (-1: a chunk of no bytes), or empty where none was found within `effort`, which it
/// spends from.
[[nodiscard]] inline std::vector<std::ptrdiff_t> lay_out_tail(copy_table& copies,
                                                              const std::vector<std::vector<std::size_t>>& frame_bytes,
                                                              const std::vector<lifetime>& items,
                                                              const std::vector<std::size_t>& chunk_bytes,
                                                              const std::vector<std::ptrdiff_t>& kept, int period,
                                                              const std::vector<std::size_t>& heights, int budget,
                                                              std::vector<periodic_tail>& tails, std::size_t& effort) {
  int microbatches = 0;
  int first_outside = -1;  // the first microbatch that lives outside the anchor's
  for (std::size_t i = 0; i < items.size(); ++i) {
    microbatches = std::max(microbatches, items[i].microbatch + 1);
    if (kept[i] < 0 && chunk_bytes[static_cast<std::size_t>(items[i].chunk)] > 0) {
      first_outside = first_outside < 0 ? items[i].microbatch : std::min(first_outside, items[i].microbatch);
    }
  }
  if (first_outside < 0 || heights.empty()) return {};

  // Per frame (as frames_of lists them): microbatches before `from` where their fixed copies put them;
  // from `from` on, where `tail` has them, or to choose (no tail). Empty where that cannot be.
  const std::vector<frame_interval> frames = frames_of(frame_bytes, items);
  auto offsets_from = [&](int from, const periodic_tail* tail) {
    std::vector<std::size_t> offsets;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const auto c = static_cast<std::size_t>(items[i].chunk);
      const auto from_end = static_cast<std::size_t>(microbatches - 1 - items[i].microbatch);
      const bool afresh = items[i].microbatch >= from;
      const std::vector<std::size_t>* laid =
          tail != nullptr && afresh && c < tail->offsets.size() && from_end < tail->offsets[c].size()
              ? &tail->offsets[c][from_end] : nullptr;
      for (std::size_t l = 0; l < frame_bytes[c].size(); ++l) {
        if (frame_bytes[c][l] == 0) continue;
        if (afresh && tail == nullptr) {
          offsets.push_back(height_search::unplaced);
        } else if (afresh && laid != nullptr && l < laid->size()) {
          offsets.push_back((*laid)[l]);
        } else if (!afresh && kept[i] >= 0) {
          offsets.push_back(copies.offsets(static_cast<std::size_t>(kept[i]))[l]);
        } else {
          return std::vector<std::size_t>{};  // the tail has no such frame, or one lives outside before it
        }
      }
    }
    return offsets;
  };
  std::vector<std::ptrdiff_t> found;
  auto bound = [&](const std::vector<std::size_t>& offsets) {
    return add_copies(copies, items, offsets, budget, found) ? found : std::vector<std::ptrdiff_t>{};
  };
  const int widths = period + 1;
  const int attempts = static_cast<int>(heights.size()) * widths;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    const std::size_t height = heights[static_cast<std::size_t>(attempt / widths)];
    if (attempt % widths == 0) {  // a new height: the tails laid out so far first, the latest first
      for (auto tail = tails.rbegin(); tail != tails.rend(); ++tail) {
        const std::vector<std::size_t> offsets = offsets_from(microbatches - tail->length, &*tail);
        if (!offsets.empty() && top_of(frames, offsets) <= height && layout_holds(frames, offsets)) {
          return bound(offsets);
        }
      }
    }
    if (effort == 0) continue;
    const int from = first_outside - attempt % widths;
    height_search search(frames, effort, offsets_from(from, nullptr));
    const std::vector<std::size_t> offsets =
        search.under(height, effort / static_cast<std::size_t>(attempts - attempt));
    effort = search.effort_left();
    if (offsets.empty()) continue;
    periodic_tail& tail = tails.emplace_back();
    tail.length = microbatches - from;
    tail.offsets.resize(chunk_bytes.size());
    std::size_t f = 0;  // the frame of `offsets` that item's first layer is
    for (const lifetime& item : items) {
      const auto c = static_cast<std::size_t>(item.chunk);
      std::vector<std::size_t> laid(frame_bytes[c].size(), 0);
      for (std::size_t l = 0; l < laid.size(); ++l) laid[l] = frame_bytes[c][l] == 0 ? 0 : offsets[f++];
      if (item.microbatch < from) continue;
      const auto from_end = static_cast<std::size_t>(microbatches - 1 - item.microbatch);
      if (tail.offsets[c].size() <= from_end) tail.offsets[c].resize(from_end + 1);
      tail.offsets[c][from_end] = std::move(laid);
    }
    return bound(offsets);
  }
  return {};
}

}  // namespace graphpool::plan::detail
