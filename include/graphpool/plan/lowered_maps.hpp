#pragma once
/// @file lowered_maps.hpp
/// @brief A single schedule's layout handed to a search that lowers its frames (ruin and recreate,
/// recreate_layout.hpp; the conflict-driven search, learned_layout.hpp), and its maps rebound to the
/// copies the lowered frames sit at. Host-only: no CUDA header.

#include <cstddef>
#include <utility>
#include <vector>

#include "graphpool/plan/anchor_order.hpp"
#include "graphpool/plan/copy_table.hpp"
#include "graphpool/plan/frame_intervals.hpp"
#include "graphpool/plan/frame_sizes.hpp"
#include "graphpool/plan/problem.hpp"
#include "graphpool/plan/schedule.hpp"
#include "graphpool/plan/slot_map.hpp"

namespace graphpool::plan::detail {

/// The maps and offsets of `chosen` (a plan in offsets mode), as lowered_maps takes a layout.
[[nodiscard]] inline packed_maps layout_of(const plan& chosen) {
  packed_maps layout;
  layout.maps = chosen.slot_maps;
  layout.offsets.resize(static_cast<std::size_t>(chosen.chunks));
  for (const planned_frame& f : chosen.frames) {
    auto& copies = layout.offsets[static_cast<std::size_t>(f.chunk)];
    if (copies.size() <= static_cast<std::size_t>(f.slot)) copies.resize(static_cast<std::size_t>(f.slot) + 1);
    copies[static_cast<std::size_t>(f.slot)].push_back(f.offset);
  }
  layout.footprint = chosen.saved.footprint_bytes;
  return layout;
}

/// `layout` (maps and offsets of the single schedule `s`, its frames of `sizes`) lowered by `lower`,
/// called as lower(frames, offsets) with the schedule's frames (frames_of: sorted by start) and their
/// offsets in `layout`, returning a layout of them: its maps rebound to the copies the lowered frames sit
/// at. Invalid past `budget` copies of a chunk, or where it came no lower.
template <class Lower>
[[nodiscard]] packed_maps lowered_maps(const schedule& s, const frame_sizes& sizes, int budget,
                                       const packed_maps& layout, Lower&& lower) {
  const std::vector<std::vector<std::size_t>>& frame_bytes = sizes.bytes;
  const std::vector<lifetime> items = lifetimes_of(s);
  const std::vector<frame_interval> frames = frames_of(frame_bytes, items);
  std::vector<std::size_t> offsets;  // as frames_of lists the frames
  for (const lifetime& item : items) {
    const auto c = static_cast<std::size_t>(item.chunk);
    const std::vector<std::size_t>& layers = frame_bytes[c];
    for (std::size_t l = 0; l < layers.size(); ++l) {
      if (layers[l] == 0) continue;
      const int copy = layout.maps.front().slots[c][static_cast<std::size_t>(item.microbatch)];
      offsets.push_back(layout.offsets[c][static_cast<std::size_t>(copy)][l]);
    }
  }
  packed_maps result;
  result.valid = false;
  offsets = std::forward<Lower>(lower)(frames, std::move(offsets));
  if (top_of(frames, offsets) >= layout.footprint) return result;
  const anchor_layout lowered = anchor_of(frame_bytes, items, frames, offsets, budget);
  if (!lowered.valid) return result;
  result.maps = {bound_map(s, items, lowered.copies, lowered.copy_of)};
  map_empty_chunks(s, sizes.chunk_bytes, result.maps.front());
  fill_unused(result.maps.front());
  result.offsets = offsets_by_chunk(lowered.copies, frame_bytes.size());
  result.footprint = lowered.footprint;
  result.valid = true;
  return result;
}

}  // namespace graphpool::plan::detail
