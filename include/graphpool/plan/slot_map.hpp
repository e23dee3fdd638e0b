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
  bool valid = true;  ///< false when the budget ran out before every forward found free bytes (maps incomplete)
};

/// @return maps whose copies are laid out while the schedules are replayed: a forward reuses the first
/// copy of its chunk whose bytes no live frame holds, else (under `budget` copies per chunk) opens a
/// new copy whose layers go one by one into the lowest gap among the live frames. `frame_bytes` is
/// [chunk][layer]. Frames of unequal bytes pack where regions of one size per index cannot.
[[nodiscard]] inline packed_maps pack_maps(const std::vector<schedule>& schedules,
                                           const std::vector<std::vector<std::size_t>>& frame_bytes, int budget) {
  using range = std::pair<std::size_t, std::size_t>;  // [start, end)
  packed_maps result;
  result.offsets.resize(frame_bytes.size());
  result.maps.resize(schedules.size());
  // The longest schedules first: they set the layout the shorter ones then reuse.
  std::vector<std::size_t> by_length(schedules.size());
  for (std::size_t k = 0; k < by_length.size(); ++k) by_length[k] = k;
  std::stable_sort(by_length.begin(), by_length.end(), [&](std::size_t a, std::size_t b) {
    return schedules[a].microbatches() > schedules[b].microbatches();
  });
  for (std::size_t index : by_length) {
    const schedule& s = schedules[index];
    slot_map map{s.name(), s.microbatches(), {}};
    for (int c = 0; c < s.chunks(); ++c) map.slots.emplace_back(static_cast<std::size_t>(s.microbatches()), -1);
    std::vector<std::pair<int, int>> alive;  // (chunk, copy) alive now
    auto live_ranges = [&]() {
      std::vector<range> taken;
      for (const auto& [chunk, copy] : alive) {
        const auto& layers = frame_bytes[static_cast<std::size_t>(chunk)];
        for (std::size_t l = 0; l < layers.size(); ++l) {
          const std::size_t start = result.offsets[static_cast<std::size_t>(chunk)][static_cast<std::size_t>(copy)][l];
          if (layers[l] > 0) taken.emplace_back(start, start + layers[l]);
        }
      }
      std::sort(taken.begin(), taken.end());
      return taken;
    };
    for (const event& e : s.events()) {
      const std::size_t chunk = static_cast<std::size_t>(e.chunk);
      int& copy = map.slots[chunk][static_cast<std::size_t>(e.microbatch)];
      if (e.kind == phase::backward) {
        alive.erase(std::find(alive.begin(), alive.end(), std::make_pair(e.chunk, copy)));
        continue;
      }
      const std::vector<range> taken = live_ranges();
      auto free_at = [&](std::size_t start, std::size_t bytes) {
        for (const range& r : taken) {
          if (bytes > 0 && r.first < start + bytes && start < r.second) return false;
        }
        return true;
      };
      auto held = [&](int k) { return std::find(alive.begin(), alive.end(), std::make_pair(e.chunk, k)) != alive.end(); };
      const auto& layers = frame_bytes[chunk];
      auto& copies = result.offsets[chunk];
      copy = -1;
      for (int k = 0; k < static_cast<int>(copies.size()) && copy < 0; ++k) {
        bool fits = !held(k);
        for (std::size_t l = 0; l < layers.size() && fits; ++l) fits = free_at(copies[static_cast<std::size_t>(k)][l], layers[l]);
        if (fits) copy = k;
      }
      if (copy < 0 && static_cast<int>(copies.size()) < budget) {
        std::vector<range> around = taken;
        std::vector<std::size_t>& placed = copies.emplace_back();
        for (std::size_t bytes : layers) {
          std::sort(around.begin(), around.end());
          std::size_t cursor = 0;
          for (const range& r : around) {
            if (bytes > 0 && r.first >= cursor + bytes) break;
            cursor = std::max(cursor, r.second);
          }
          if (bytes == 0) cursor = 0;
          placed.push_back(cursor);
          if (bytes > 0) around.emplace_back(cursor, cursor + bytes);
        }
        copy = static_cast<int>(copies.size()) - 1;
      }
      if (copy < 0) {  // the budget is spent and every free copy overlaps live bytes: no layout
        result.valid = false;
        return result;
      }
      alive.emplace_back(e.chunk, copy);
    }
    fill_unused(map);
    result.maps[index] = std::move(map);
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
