#pragma once
/// @file packed_maps.hpp
/// @brief Slot maps laid out byte by byte: dynamic storage allocation on the intervals of the schedule
/// with the most bytes alive (the anchor), the other schedules replayed over the same copies. Host-only:
/// no CUDA header.

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "graphpool/plan/bounded_layout.hpp"
#include "graphpool/plan/copy_table.hpp"
#include "graphpool/plan/liveness.hpp"
#include "graphpool/plan/schedule.hpp"
#include "graphpool/plan/slot_map.hpp"

namespace graphpool::plan {

namespace detail {

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

}  // namespace detail

/// @return maps and a byte layout of every copy, built as dynamic storage allocation on intervals.
///
/// The schedule with the most bytes alive at once (it sets the live bound) is the anchor: its
/// microbatches are placed in `how.order`, each against the microbatches alive beside it, reusing a
/// copy of its chunk whose bytes are free then (the lowest), or laying out a new one (under `budget`
/// copies per chunk) when that ends lower; a squeaky-wheel search then moves the microbatches that set
/// the footprint earlier. The other schedules replay over the same copies, most microbatches first, a
/// new copy only where no free one exists. `frame_bytes` is [chunk][layer].
[[nodiscard]] inline packed_maps pack_maps(const std::vector<schedule>& schedules,
                                           const std::vector<std::vector<std::size_t>>& frame_bytes, int budget,
                                           const packing& how = {}) {
  packed_maps result;
  result.maps.resize(schedules.size());
  std::vector<std::size_t> chunk_bytes;
  for (const std::vector<std::size_t>& layers : frame_bytes) {
    chunk_bytes.push_back(std::accumulate(layers.begin(), layers.end(), std::size_t{0}));
  }
  std::vector<std::size_t> by_weight(schedules.size());
  std::vector<std::size_t> live(schedules.size(), 0);
  for (std::size_t k = 0; k < schedules.size(); ++k) {
    by_weight[k] = k;
    live[k] = peak_live_bytes(schedules[k], chunk_bytes);
  }
  std::stable_sort(by_weight.begin(), by_weight.end(), [&](std::size_t a, std::size_t b) {
    return live[a] != live[b] ? live[a] > live[b] : schedules[a].microbatches() > schedules[b].microbatches();
  });
  if (schedules.empty()) return result;

  // The anchor: seeded order, then squeaky-wheel steps that keep any order no worse.
  const std::size_t anchor = by_weight.front();
  const std::vector<detail::lifetime> items = detail::lifetimes_of(schedules[anchor]);
  std::vector<std::size_t> order(items.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  auto bytes = [&](std::size_t i) { return chunk_bytes[static_cast<std::size_t>(items[i].chunk)]; };
  auto length = [&](std::size_t i) { return items[i].end - items[i].start; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    switch (how.order) {
      case packing_order::size:
        return bytes(a) != bytes(b) ? bytes(a) > bytes(b) : length(a) > length(b);
      case packing_order::lifetime:
        return length(a) != length(b) ? length(a) > length(b) : bytes(a) > bytes(b);
      case packing_order::area:
        return bytes(a) * (length(a) + 1) > bytes(b) * (length(b) + 1);
      case packing_order::start:
      case packing_order::bounded:
        break;
    }
    return items[a].start < items[b].start;
  });
  detail::anchor_layout best =
      how.order == packing_order::bounded
          ? detail::bounded_anchor(frame_bytes, items, live[anchor], budget, how.search_effort)
          : detail::place_anchor(frame_bytes, chunk_bytes, items, order, budget, how);
  std::mt19937 random(1);
  std::size_t current = best.valid ? best.footprint : static_cast<std::size_t>(-1);
  // A step re-places every microbatch against those placed before it: fewer steps on longer schedules
  // (a fixed budget of pairs keeps planning quick and deterministic).
  const std::size_t pairs_per_step = std::max<std::size_t>(items.size() * items.size(), 1);
  const int steps = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(std::max(how.search_steps, 0)),
                                                           1'000'000 / pairs_per_step));
  for (int step = 0; step < steps && best.valid && best.footprint > live[anchor]; ++step) {
    const detail::anchor_layout& last = best;
    std::vector<std::size_t> critical;
    for (std::size_t p = 0; p < order.size(); ++p) {
      const std::ptrdiff_t id = last.copy_of[order[p]];
      if (id >= 0 && last.copies.top(static_cast<std::size_t>(id)) == last.footprint) critical.push_back(p);
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
    detail::anchor_layout candidate = detail::place_anchor(frame_bytes, chunk_bytes, items, next, budget, how);
    if (candidate.valid && candidate.footprint <= current) {
      current = candidate.footprint;
      order = std::move(next);
      if (candidate.footprint < best.footprint ||
          candidate.copies.size() <= best.copies.size()) best = std::move(candidate);
    }
  }
  if (!best.valid) {
    result.valid = false;
    return result;
  }
  detail::copy_table copies = std::move(best.copies);
  result.footprint = best.footprint;
  {
    slot_map& map = result.maps[anchor];
    map = slot_map{schedules[anchor].name(), schedules[anchor].microbatches(), {}};
    for (int c = 0; c < schedules[anchor].chunks(); ++c) map.slots.emplace_back(static_cast<std::size_t>(map.microbatches), -1);
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (best.copy_of[i] >= 0) {
        map.slots[static_cast<std::size_t>(items[i].chunk)][static_cast<std::size_t>(items[i].microbatch)] =
            copies.index(static_cast<std::size_t>(best.copy_of[i]));
      }
    }
  }

  // The other schedules replay over the same copies: a copy is free when no live copy shares its bytes.
  // With a search effort, each first looks for a replay that adds no copy (a share of what is left).
  std::vector<int> blocked(copies.size(), 0);
  std::size_t replay_effort = how.search_effort;
  for (std::size_t k = 1; k < by_weight.size(); ++k) {
    const schedule& s = schedules[by_weight[k]];
    slot_map& map = result.maps[by_weight[k]];
    map = slot_map{s.name(), s.microbatches(), {}};
    for (int c = 0; c < s.chunks(); ++c) map.slots.emplace_back(static_cast<std::size_t>(s.microbatches()), -1);
    if (replay_effort > 0) {
      const std::vector<detail::lifetime> replayed = detail::lifetimes_of(s);
      const std::size_t share = replay_effort / (by_weight.size() - k);
      const std::vector<std::ptrdiff_t> found = detail::replay_over(copies, replayed, chunk_bytes, share);
      replay_effort -= share;
      if (!found.empty()) {
        for (std::size_t i = 0; i < replayed.size(); ++i) {
          if (found[i] < 0) continue;
          map.slots[static_cast<std::size_t>(replayed[i].chunk)][static_cast<std::size_t>(replayed[i].microbatch)] =
              copies.index(static_cast<std::size_t>(found[i]));
        }
        continue;
      }
    }
    std::fill(blocked.begin(), blocked.end(), 0);
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
      const std::ptrdiff_t id = detail::choose_copy(copies, e.chunk, blocked, result.footprint, budget, how, [&] {
        std::vector<detail::byte_range> taken;
        for (std::size_t a : alive) taken.insert(taken.end(), copies.blocks(a).begin(), copies.blocks(a).end());
        std::sort(taken.begin(), taken.end());
        return taken;
      });
      if (id < 0) {
        result.valid = false;
        return result;
      }
      blocked.resize(copies.size(), 0);  // a new copy lies clear of every live one
      mine = static_cast<std::size_t>(id);
      for (std::size_t other : copies.overlapping(mine)) ++blocked[other];
      alive.push_back(mine);
      result.footprint = std::max(result.footprint, copies.top(mine));
      map.slots[static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(e.microbatch)] = copies.index(mine);
    }
  }
  for (std::size_t k = 0; k < schedules.size(); ++k) {
    detail::map_empty_chunks(schedules[k], chunk_bytes, result.maps[k]);
    fill_unused(result.maps[k]);
  }
  result.offsets.resize(frame_bytes.size());
  for (std::size_t id = 0; id < copies.size(); ++id) {
    result.offsets[static_cast<std::size_t>(copies.chunk(id))].push_back(copies.offsets(id));
  }
  return result;
}

}  // namespace graphpool::plan
