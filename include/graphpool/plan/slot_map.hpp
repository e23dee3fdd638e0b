#pragma once
/// @file slot_map.hpp
/// @brief Which captured copy (slot) each microbatch replays: the fixed rule m mod S, or maps chosen
/// from the schedules so that memory never sits idle between a copy's lifetimes.
///
/// A copy's frames have fixed addresses, so two microbatches of one chunk may share a copy only when
/// they are never alive together. With m mod S every copy is alive in several windows and one period
/// folds the lifetimes of all chunks into a ring; a map per schedule, chosen by start time, packs the
/// (chunk, microbatch) lifetimes of one schedule like intervals instead. Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/plan/schedule.hpp"

namespace graphpool::plan {

/// @brief Which captured copy (slot) each microbatch of one schedule replays, per chunk.
///
/// Microbatches that share a slot of a chunk are never alive together in that schedule, so the frames
/// of a slot can be captured once and replayed by each of them in turn.
struct slot_map {
  std::string schedule;                 ///< the schedule's name, for messages
  int microbatches = 0;                 ///< how many microbatches the schedule runs
  std::vector<std::vector<int>> slots;  ///< slots[chunk][microbatch]: the slot that microbatch replays
};

/// @brief How the planner binds microbatches to captured copies.
enum class slot_rule {
  mod,       ///< microbatch m replays copy m mod S (S = the peak of pending forwards of one chunk)
  schedule,  ///< a map per schedule, chosen by the planner from the schedule
};

/// @return the name of `rule` as the command line spells it.
[[nodiscard]] inline const char* to_string(slot_rule rule) noexcept {
  return rule == slot_rule::mod ? "mod" : "schedule";
}

/// @return one map per schedule in which microbatch m of every chunk replays copy m mod `slots`.
[[nodiscard]] inline std::vector<slot_map> modulo_maps(const std::vector<schedule>& schedules, int slots) {
  std::vector<slot_map> maps;
  for (const schedule& s : schedules) {
    slot_map map{s.name(), s.microbatches(), {}};
    for (int c = 0; c < s.chunks(); ++c) {
      std::vector<int>& copies = map.slots.emplace_back(static_cast<std::size_t>(s.microbatches()));
      for (int m = 0; m < s.microbatches(); ++m) copies[static_cast<std::size_t>(m)] = m % slots;
    }
    maps.push_back(std::move(map));
  }
  return maps;
}

/// @brief How schedule_maps picks among the memory regions free when a forward starts.
enum class region_choice {
  lowest,     ///< the lowest free region: optimal by count (interval graphs), blind to bytes
  best_fit,   ///< the free region whose bytes so far fit the chunk most tightly, else the one that grows least
};

/// @brief Gives the microbatches a chunk never runs in its schedule (an order whose chunks run
/// different counts) copy 0: every entry of a map is then a valid copy, and none of those is launched.
inline void fill_unused(slot_map& map) {
  for (std::vector<int>& row : map.slots) {
    for (int& copy : row) copy = copy < 0 ? 0 : copy;
  }
}

/// @return one map per schedule over one shared set of `copies` per chunk, at most `budget` each.
///
/// A region is a place in memory that every chunk's copy of the same index occupies: a forward takes
/// a region no other microbatch holds (so copies of one index never live together and can share
/// bytes), and when every region under the budget is taken, the chunk's lowest copy it does not hold
/// itself (a conflict the placement then pays for). Chunks of 0 bytes take their own lowest free copy.
/// By start time and lowest region first, one schedule needs exactly as many regions as the most
/// microbatches alive at once. @p budget must be at least the peak of pending forwards of any chunk.
[[nodiscard]] inline std::vector<slot_map> schedule_maps(const std::vector<schedule>& schedules,
                                                         const std::vector<std::size_t>& chunk_bytes, int budget,
                                                         region_choice choice) {
  std::vector<slot_map> maps;
  std::vector<std::size_t> region_bytes;  // the most bytes any chunk placed in each region, over every schedule
  for (const schedule& s : schedules) {
    slot_map map{s.name(), s.microbatches(), {}};
    for (int c = 0; c < s.chunks(); ++c) map.slots.emplace_back(static_cast<std::size_t>(s.microbatches()), -1);
    std::vector<int> region_users(region_bytes.size(), 0);  // microbatches holding each region now
    std::vector<std::vector<bool>> held(static_cast<std::size_t>(s.chunks()));  // held[chunk][copy]
    auto copy_held = [&](int chunk, int copy) {
      const auto& row = held[static_cast<std::size_t>(chunk)];
      return static_cast<std::size_t>(copy) < row.size() && row[static_cast<std::size_t>(copy)];
    };
    for (const event& e : s.events()) {
      int& copy = map.slots[static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(e.microbatch)];
      const std::size_t bytes = chunk_bytes[static_cast<std::size_t>(e.chunk)];
      if (e.kind == phase::backward) {
        held[static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(copy)] = false;
        if (bytes > 0) --region_users[static_cast<std::size_t>(copy)];
        continue;
      }
      copy = -1;
      if (bytes > 0) {
        const int opened = static_cast<int>(region_bytes.size());
        for (int r = 0; r < std::min(opened, budget); ++r) {
          if (region_users[static_cast<std::size_t>(r)] > 0 || copy_held(e.chunk, r)) continue;
          if (copy < 0 || choice == region_choice::lowest) {
            if (copy < 0) copy = r;
            if (choice == region_choice::lowest) break;
            continue;
          }
          // best fit: a region that holds the chunk already, the smallest such; else the largest.
          const std::size_t have = region_bytes[static_cast<std::size_t>(copy)];
          const std::size_t offer = region_bytes[static_cast<std::size_t>(r)];
          const bool fits = offer >= bytes;
          if ((fits && (have < bytes || offer < have)) || (!fits && have < bytes && offer > have)) copy = r;
        }
        if (copy < 0 && opened < budget) {
          copy = opened;
          region_bytes.push_back(0);
          region_users.push_back(0);
        }
      }
      if (copy < 0) {  // every region under the budget is taken (or the chunk has no bytes)
        copy = 0;
        while (copy_held(e.chunk, copy)) ++copy;
      }
      auto& row = held[static_cast<std::size_t>(e.chunk)];
      if (row.size() <= static_cast<std::size_t>(copy)) row.resize(static_cast<std::size_t>(copy) + 1, false);
      row[static_cast<std::size_t>(copy)] = true;
      if (bytes > 0) {
        if (region_bytes.size() <= static_cast<std::size_t>(copy)) {
          region_bytes.resize(static_cast<std::size_t>(copy) + 1, 0);
          region_users.resize(static_cast<std::size_t>(copy) + 1, 0);
        }
        ++region_users[static_cast<std::size_t>(copy)];
        region_bytes[static_cast<std::size_t>(copy)] = std::max(region_bytes[static_cast<std::size_t>(copy)], bytes);
      }
    }
    fill_unused(map);
    maps.push_back(std::move(map));
  }
  return maps;
}

/// @brief Slot maps with a byte layout built alongside: offsets[chunk][copy][layer].
struct packed_maps {
  std::vector<slot_map> maps;
  std::vector<std::vector<std::vector<std::size_t>>> offsets;
  std::size_t footprint = 0;  ///< the top of the highest copy
  bool valid = true;  ///< false when the budget ran out before every forward found free bytes (maps incomplete)
};

/// @brief In which order pack_maps places the microbatches of the schedule that sets the layout.
enum class packing_order {
  start,     ///< by forward time, as the schedule replays (online first fit: equal frames reach the live bound)
  size,      ///< largest chunk first, then longest lifetime
  lifetime,  ///< longest lifetime first, then largest chunk
  area,      ///< bytes x lifetime, largest first
};

/// @brief One way pack_maps lays copies out (dynamic storage allocation on the schedule's intervals).
struct packing {
  packing_order order = packing_order::start;
  bool split_layers = true;  ///< a new copy's layers go one by one into gaps (else back to back, as one block)
  bool best_fit = false;     ///< the smallest gap that holds a block (else the lowest)
  int search_steps = 0;      ///< squeaky-wheel steps: microbatches that set the footprint move earlier
};

namespace detail {

using byte_range = std::pair<std::size_t, std::size_t>;  // [start, end)

/// The lowest (or the smallest) gap of `taken` (sorted by start) that holds `bytes`; the top when none does.
[[nodiscard]] inline std::size_t find_gap(const std::vector<byte_range>& taken, std::size_t bytes, bool best_fit) {
  if (bytes == 0) return 0;
  std::size_t cursor = 0;
  std::size_t chosen = static_cast<std::size_t>(-1);
  std::size_t chosen_gap = static_cast<std::size_t>(-1);
  for (const byte_range& r : taken) {
    if (r.first >= cursor + bytes) {
      if (!best_fit) return cursor;
      if (r.first - cursor < chosen_gap) {
        chosen = cursor;
        chosen_gap = r.first - cursor;
      }
    }
    cursor = std::max(cursor, r.second);
  }
  return chosen == static_cast<std::size_t>(-1) ? cursor : chosen;
}

/// Every copy laid out so far (of every chunk), and which copies share bytes.
class copy_table {
 public:
  explicit copy_table(const std::vector<std::vector<std::size_t>>& frame_bytes)
      : frame_bytes_(&frame_bytes), by_chunk_(frame_bytes.size()) {}

  [[nodiscard]] std::size_t size() const noexcept { return chunk_.size(); }
  [[nodiscard]] int chunk(std::size_t id) const noexcept { return chunk_[id]; }
  [[nodiscard]] int index(std::size_t id) const noexcept { return index_[id]; }
  [[nodiscard]] std::size_t top(std::size_t id) const noexcept { return top_[id]; }
  [[nodiscard]] const std::vector<std::size_t>& of_chunk(int c) const { return by_chunk_[static_cast<std::size_t>(c)]; }
  [[nodiscard]] const std::vector<std::size_t>& overlapping(std::size_t id) const { return overlapping_[id]; }
  [[nodiscard]] const std::vector<byte_range>& blocks(std::size_t id) const { return blocks_[id]; }
  [[nodiscard]] const std::vector<std::size_t>& offsets(std::size_t id) const { return offsets_[id]; }

  /// Where a new copy of chunk `c` would go around `taken` (sorted: the bytes alive beside it), per layer.
  [[nodiscard]] std::vector<std::size_t> lay_out(int c, std::vector<byte_range> taken, bool split_layers,
                                                 bool best_fit) const {
    const std::vector<std::size_t>& layers = (*frame_bytes_)[static_cast<std::size_t>(c)];
    std::vector<std::size_t> placed(layers.size(), 0);
    if (split_layers) {
      std::vector<std::size_t> largest_first(layers.size());
      for (std::size_t l = 0; l < layers.size(); ++l) largest_first[l] = l;
      std::stable_sort(largest_first.begin(), largest_first.end(),
                       [&](std::size_t a, std::size_t b) { return layers[a] > layers[b]; });
      for (std::size_t l : largest_first) {
        if (layers[l] == 0) continue;
        placed[l] = find_gap(taken, layers[l], best_fit);
        const byte_range mine{placed[l], placed[l] + layers[l]};
        taken.insert(std::upper_bound(taken.begin(), taken.end(), mine), mine);
      }
    } else {
      std::size_t cursor = find_gap(taken, std::accumulate(layers.begin(), layers.end(), std::size_t{0}), best_fit);
      for (std::size_t l = 0; l < layers.size(); ++l) {
        placed[l] = layers[l] == 0 ? 0 : cursor;
        cursor += layers[l];
      }
    }
    return placed;
  }

  /// The top of a copy of chunk `c` at `placed` (per layer).
  [[nodiscard]] std::size_t top_of(int c, const std::vector<std::size_t>& placed) const {
    const std::vector<std::size_t>& layers = (*frame_bytes_)[static_cast<std::size_t>(c)];
    std::size_t top = 0;
    for (std::size_t l = 0; l < layers.size(); ++l) top = layers[l] == 0 ? top : std::max(top, placed[l] + layers[l]);
    return top;
  }

  /// Adds a copy of chunk `c` at `placed` (per layer); returns its id.
  std::size_t add(int c, std::vector<std::size_t> placed) {
    const std::vector<std::size_t>& layers = (*frame_bytes_)[static_cast<std::size_t>(c)];
    const std::size_t id = chunk_.size();
    std::vector<byte_range> mine;
    std::size_t top = 0;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      if (layers[l] == 0) continue;
      mine.emplace_back(placed[l], placed[l] + layers[l]);
      top = std::max(top, placed[l] + layers[l]);
    }
    std::sort(mine.begin(), mine.end());
    overlapping_.emplace_back();
    for (std::size_t other = 0; other < id; ++other) {
      if (share_bytes(mine, blocks_[other])) {
        overlapping_[other].push_back(id);
        overlapping_.back().push_back(other);
      }
    }
    overlapping_.back().push_back(id);  // a copy alive blocks itself
    chunk_.push_back(c);
    index_.push_back(static_cast<int>(by_chunk_[static_cast<std::size_t>(c)].size()));
    by_chunk_[static_cast<std::size_t>(c)].push_back(id);
    top_.push_back(top);
    blocks_.push_back(std::move(mine));
    offsets_.push_back(std::move(placed));
    return id;
  }

 private:
  static bool share_bytes(const std::vector<byte_range>& a, const std::vector<byte_range>& b) {
    std::size_t i = 0;
    std::size_t j = 0;
    while (i < a.size() && j < b.size()) {
      if (a[i].first < b[j].second && b[j].first < a[i].second) return true;
      if (a[i].second <= b[j].second) ++i; else ++j;
    }
    return false;
  }

  const std::vector<std::vector<std::size_t>>* frame_bytes_;  // [chunk][layer]
  std::vector<std::vector<std::size_t>> by_chunk_;
  std::vector<int> chunk_;
  std::vector<int> index_;
  std::vector<std::size_t> top_;
  std::vector<std::vector<byte_range>> blocks_;
  std::vector<std::vector<std::size_t>> offsets_;
  std::vector<std::vector<std::size_t>> overlapping_;
};

/// One microbatch of one chunk in one schedule: alive from event `start` to event `end`.
struct lifetime {
  int chunk = 0;
  int microbatch = 0;
  std::size_t start = 0;
  std::size_t end = 0;
};

[[nodiscard]] inline std::vector<lifetime> lifetimes_of(const schedule& s) {
  std::vector<lifetime> result;
  std::vector<std::vector<std::size_t>> open(static_cast<std::size_t>(s.chunks()));
  const std::vector<event>& events = s.events();
  for (std::size_t i = 0; i < events.size(); ++i) {
    const event& e = events[i];
    if (e.kind == phase::forward) {
      open[static_cast<std::size_t>(e.chunk)].push_back(result.size());
      result.push_back({e.chunk, e.microbatch, i, events.size()});
    } else {
      for (std::size_t k : open[static_cast<std::size_t>(e.chunk)]) {
        if (result[k].microbatch == e.microbatch && result[k].end == events.size()) result[k].end = i;
      }
    }
  }
  return result;
}

/// Picks the copy of `chunk` for a microbatch whose neighbours in time block the copies counted in
/// `blocked` (by copy id): the free copy of lowest top when it stays within `footprint`, else a new copy
/// laid out around `taken()` when the budget allows and it ends lower, else the free copy. -1: none.
template <class Taken>
[[nodiscard]] std::ptrdiff_t choose_copy(copy_table& copies, int chunk, const std::vector<int>& blocked,
                                         std::size_t footprint, int budget, const packing& how, Taken taken) {
  std::ptrdiff_t reuse = -1;
  for (std::size_t id : copies.of_chunk(chunk)) {
    if (blocked[id] == 0 && (reuse < 0 || copies.top(id) < copies.top(static_cast<std::size_t>(reuse)))) {
      reuse = static_cast<std::ptrdiff_t>(id);
    }
  }
  if (reuse >= 0 && copies.top(static_cast<std::size_t>(reuse)) <= footprint) return reuse;
  if (static_cast<int>(copies.of_chunk(chunk).size()) >= budget) return reuse;
  std::vector<std::size_t> placed = copies.lay_out(chunk, taken(), how.split_layers, how.best_fit);
  if (reuse >= 0 && copies.top_of(chunk, placed) >= copies.top(static_cast<std::size_t>(reuse))) return reuse;
  return static_cast<std::ptrdiff_t>(copies.add(chunk, std::move(placed)));
}

}  // namespace detail
namespace detail {

/// The anchor schedule's microbatches placed in `order` (each against those alive beside it, wherever
/// they were placed): a fresh copy table, each microbatch's copy id (-1: a chunk of no bytes), the footprint.
struct anchor_layout {
  copy_table copies;
  std::vector<std::ptrdiff_t> copy_of;
  std::size_t footprint = 0;
  bool valid = true;
};

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
    std::size_t now = 0;
    for (const event& e : schedules[k].events()) {
      now = e.kind == phase::forward ? now + chunk_bytes[static_cast<std::size_t>(e.chunk)]
                                     : now - chunk_bytes[static_cast<std::size_t>(e.chunk)];
      live[k] = std::max(live[k], now);
    }
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
        break;
    }
    return items[a].start < items[b].start;
  });
  detail::anchor_layout best = detail::place_anchor(frame_bytes, chunk_bytes, items, order, budget, how);
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
  std::vector<int> blocked(copies.size(), 0);
  for (std::size_t k = 1; k < by_weight.size(); ++k) {
    const schedule& s = schedules[by_weight[k]];
    slot_map& map = result.maps[by_weight[k]];
    map = slot_map{s.name(), s.microbatches(), {}};
    for (int c = 0; c < s.chunks(); ++c) map.slots.emplace_back(static_cast<std::size_t>(s.microbatches()), -1);
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

/// @return the number of copies per chunk `maps` use: one more than the largest copy index.
[[nodiscard]] inline int copies_used(const std::vector<slot_map>& maps) {
  int copies = 1;
  for (const slot_map& map : maps) {
    for (const std::vector<int>& row : map.slots) {
      for (int copy : row) copies = std::max(copies, copy + 1);
    }
  }
  return copies;
}

}  // namespace graphpool::plan
