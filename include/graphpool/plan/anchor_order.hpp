#pragma once
/// @file anchor_order.hpp
/// @brief The greedy layouts of pack_maps: the anchor schedule's microbatches placed in a given order,
/// each on a copy of its chunk free beside it or a new one, that order improved by squeaky-wheel steps,
/// another schedule replayed over the copies by its events, and the copies of chunks of no bytes.
/// Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <optional>
#include <random>
#include <utility>
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

/// `order` (of the anchor's microbatches) improved by squeaky-wheel steps from `best`, its layout: each
/// step moves a microbatch that sets the footprint earlier in the order (or, one step in four or where
/// none does, swaps two at random), and keeps the order where its layout (place_anchor) is no higher;
/// `best` becomes the lowest such layout (as low: with no more copies). At most `how.search_steps` steps,
/// fewer on long schedules, until `floor` (the live bound). Deterministic: a generator seeded alike.
inline void squeaky_steps(const std::vector<std::vector<std::size_t>>& frame_bytes,
                          const std::vector<std::size_t>& chunk_bytes, const std::vector<lifetime>& items,
                          std::vector<std::size_t>& order, int budget, const packing& how, std::size_t floor,
                          anchor_layout& best) {
  std::mt19937 random(1);
  std::size_t current = best.valid ? best.footprint : static_cast<std::size_t>(-1);
  // A step re-places every microbatch against those placed before it: fewer steps on longer schedules
  // (a fixed budget of pairs keeps planning quick and deterministic).
  const std::size_t pairs_per_step = std::max<std::size_t>(items.size() * items.size(), 1);
  const int steps = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(std::max(how.search_steps, 0)),
                                                           1'000'000 / pairs_per_step));
  for (int step = 0; step < steps && best.valid && best.footprint > floor; ++step) {
    std::vector<std::size_t> critical;
    for (std::size_t p = 0; p < order.size(); ++p) {
      const std::ptrdiff_t id = best.copy_of[order[p]];
      if (id >= 0 && best.copies.top(static_cast<std::size_t>(id)) == best.footprint) critical.push_back(p);
    }
    std::vector<std::size_t> next = order;
    if (critical.empty() || random() % 4 == 0) {
      std::swap(next[random() % next.size()], next[random() % next.size()]);
    } else {
      const std::size_t from = critical[random() % critical.size()];
      if (from == 0) continue;
      const std::size_t to = static_cast<std::size_t>(random() % from);
      const std::size_t moved = next[from];
      next.erase(next.begin() + static_cast<std::ptrdiff_t>(from));
      next.insert(next.begin() + static_cast<std::ptrdiff_t>(to), moved);
    }
    anchor_layout candidate = place_anchor(frame_bytes, chunk_bytes, items, next, budget, how);
    if (candidate.valid && candidate.footprint <= current) {
      current = candidate.footprint;
      order = std::move(next);
      if (candidate.footprint < best.footprint || candidate.copies.size() <= best.copies.size()) {
        best = std::move(candidate);
      }
    }
  }
}

/// `s` replayed over `copies` by its events: each forward takes a copy of its chunk free then, or a new
/// one within `budget` copies a chunk (choose_copy), and its backward frees it; `map` binds each
/// microbatch to its copy and `footprint` rises to the copies' tops. @return the copy ids per [chunk]
/// [microbatch]; none where a forward finds no copy (`map` and `footprint` then hold what came before it).
[[nodiscard]] inline std::optional<std::vector<std::vector<std::size_t>>> replay_by_events(
    copy_table& copies, const schedule& s, const std::vector<std::size_t>& chunk_bytes, int budget,
    const packing& how, std::size_t& footprint, slot_map& map) {
  std::vector<int> blocked(copies.size(), 0);
  std::vector<std::size_t> alive;  // copy ids
  std::vector<std::vector<std::size_t>> id_of(static_cast<std::size_t>(s.chunks()),
                                              std::vector<std::size_t>(static_cast<std::size_t>(s.microbatches())));
  for (const event& e : s.events()) {
    if (chunk_bytes[static_cast<std::size_t>(e.chunk)] == 0) continue;
    std::size_t& mine = id_of[static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(e.microbatch)];
    if (e.kind == phase::backward) {
      for (std::size_t other : copies.overlapping(mine)) --blocked[other];
      alive.erase(std::find(alive.begin(), alive.end(), mine));
      continue;
    }
    const std::ptrdiff_t id = choose_copy(copies, e.chunk, blocked, footprint, budget, how, [&] {
      std::vector<byte_range> taken;
      for (std::size_t a : alive) taken.insert(taken.end(), copies.blocks(a).begin(), copies.blocks(a).end());
      std::sort(taken.begin(), taken.end());
      return taken;
    });
    if (id < 0) return std::nullopt;
    blocked.resize(copies.size(), 0);  // a new copy lies clear of every live one
    mine = static_cast<std::size_t>(id);
    for (std::size_t other : copies.overlapping(mine)) ++blocked[other];
    alive.push_back(mine);
    footprint = std::max(footprint, copies.top(mine));
    map.slots[static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(e.microbatch)] = copies.index(mine);
  }
  return id_of;
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
