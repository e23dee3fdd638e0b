#pragma once
/// @file region_maps.hpp
/// @brief Slot maps by regions: each forward takes a memory region no other microbatch holds, by start
/// time, so one schedule needs as many regions as the most microbatches alive at once. Host-only: no
/// CUDA header.

#include <algorithm>
#include <cstddef>
#include <vector>

#include "graphpool/plan/schedule.hpp"
#include "graphpool/plan/slot_map.hpp"

namespace graphpool::plan {

/// @brief How schedule_maps picks among the memory regions free when a forward starts.
enum class region_choice {
  lowest,     ///< the lowest free region: optimal by count (interval graphs), blind to bytes
  best_fit,   ///< the free region whose bytes so far fit the chunk most tightly, else the one that grows least
};

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


}  // namespace graphpool::plan
