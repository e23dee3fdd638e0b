#pragma once
/// @file slot_map.hpp
/// @brief Which captured copy (slot) each microbatch replays: the fixed rule m mod S, or maps chosen
/// from the schedules so that memory never sits idle between a copy's lifetimes.
///
/// A copy's frames have fixed addresses, so two microbatches of one chunk may share a copy only when
/// they are never alive together. With m mod S every copy is alive in several windows and one period
/// folds the lifetimes of all chunks into a ring; maps chosen from the schedule (region_maps.hpp,
/// packed_maps.hpp) pack the (chunk, microbatch) lifetimes of one schedule like intervals instead.
/// Host-only: no CUDA header.

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

/// @brief Gives the microbatches a chunk never runs in its schedule (an order whose chunks run
/// different counts) copy 0: every entry of a map is then a valid copy, and none of those is launched.
inline void fill_unused(slot_map& map) {
  for (std::vector<int>& row : map.slots) {
    for (int& copy : row) copy = copy < 0 ? 0 : copy;
  }
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
