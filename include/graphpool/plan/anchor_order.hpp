#pragma once
/// @file anchor_order.hpp
/// @brief The greedy layouts of pack_maps: the anchor schedule's microbatches placed in a given order,
/// each on a copy of its chunk free beside it or a new one, and the copies of chunks of no bytes.
/// Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <vector>

#include "graphpool/plan/copy_table.hpp"
#include "graphpool/plan/schedule.hpp"
#include "graphpool/plan/slot_map.hpp"

namespace graphpool::plan::detail {

/// The anchor schedule's microbatches placed in `order`, each against those alive beside it (wherever
/// they were placed).
[[nodiscard]] inline anchor_layout place_anchor(const std::vector<std::vector<std::size_t>>& frame_bytes,
                                                const std::vector<std::size_t>& chunk_bytes,
                                                const std::vector<lifetime>& items,
                                                const std::vector<std::size_t>& order, int budget, const packing& how) {
  anchor_layout result{copy_table(frame_bytes), std::vector<std::ptrdiff_t>(items.size(), -1), 0, true};
  std::vector<std::size_t> placed;
  std::vector<int> blocked;
  std::vector<std::size_t> beside;
  for (std::size_t i : order) {
    const lifetime& item = items[i];
    if (chunk_bytes[static_cast<std::size_t>(item.chunk)] == 0) continue;
    blocked.assign(result.copies.size(), 0);
    beside.clear();
    for (std::size_t j : placed) {
      if (items[j].start < item.end && item.start < items[j].end) {
        const std::size_t id = static_cast<std::size_t>(result.copy_of[j]);
        beside.push_back(id);
        for (std::size_t other : result.copies.overlapping(id)) ++blocked[other];
      }
    }
    const std::ptrdiff_t id = choose_copy(result.copies, item.chunk, blocked, result.footprint, budget, how, [&] {
      std::vector<byte_range> taken;
      for (std::size_t b : beside) taken.insert(taken.end(), result.copies.blocks(b).begin(), result.copies.blocks(b).end());
      std::sort(taken.begin(), taken.end());
      return taken;
    });
    if (id < 0) {
      result.valid = false;
      return result;
    }
    result.copy_of[i] = id;
    result.footprint = std::max(result.footprint, result.copies.top(static_cast<std::size_t>(id)));
    placed.push_back(i);
  }
  return result;
}

/// Copies of chunks of no bytes: the lowest copy no microbatch of the chunk holds, by forward time.
inline void map_empty_chunks(const schedule& s, const std::vector<std::size_t>& chunk_bytes, slot_map& map) {
  std::vector<std::vector<bool>> held(static_cast<std::size_t>(s.chunks()));
  for (const event& e : s.events()) {
    if (chunk_bytes[static_cast<std::size_t>(e.chunk)] != 0) continue;
    std::vector<bool>& row = held[static_cast<std::size_t>(e.chunk)];
    int& copy = map.slots[static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(e.microbatch)];
    if (e.kind == phase::backward) {
      row[static_cast<std::size_t>(copy)] = false;
      continue;
    }
    copy = 0;
    while (static_cast<std::size_t>(copy) < row.size() && row[static_cast<std::size_t>(copy)]) ++copy;
    if (row.size() <= static_cast<std::size_t>(copy)) row.resize(static_cast<std::size_t>(copy) + 1, false);
    row[static_cast<std::size_t>(copy)] = true;
  }
}

}  // namespace graphpool::plan::detail
