#pragma once
/// @file liveness.hpp
/// @brief Physical slots and frame lifetimes over a set of schedules: which frames may share memory.
///
/// A frame is (chunk, slot, layer); microbatch m of a chunk uses the slot its schedule's slot map
/// gives (m mod S by default). All layers of one (chunk, slot) live from its forward to its backward,
/// so liveness is computed per (chunk, slot) "group" and a frame inherits its group's conflicts.
/// Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graphpool/error.hpp"
#include "graphpool/plan/conflict_graph.hpp"
#include "graphpool/plan/schedule.hpp"
#include "graphpool/plan/slot_map.hpp"

namespace graphpool::plan {

/// @brief The most frames, or (chunk, slot) groups, one plan may hold: conflicts are a bit matrix.
inline constexpr std::size_t max_frames = 16384;

/// @brief Conflicts between (chunk, slot) groups over every schedule given; vertex = chunk * slots + slot.
struct liveness {
  int chunks = 0;
  int slots = 0;
  conflict_graph saved;  ///< alive (forward to backward) at the same time in some schedule
  conflict_graph grads;  ///< returned input gradients: backward events consecutive in some schedule
  std::vector<std::size_t> alive_events;  ///< per group: events it is alive for, summed over schedules

  [[nodiscard]] std::size_t group(int chunk, int slot) const noexcept {
    return static_cast<std::size_t>(chunk) * static_cast<std::size_t>(slots) + static_cast<std::size_t>(slot);
  }
};

/// @return the number of chunks shared by `schedules`.
/// @throws graphpool::error when there is no schedule or two schedules differ in chunks.
[[nodiscard]] inline int common_chunks(const std::vector<schedule>& schedules) {
  if (schedules.empty()) throw error("planner: no schedule given; give at least one schedule or order");
  for (const schedule& s : schedules) {
    if (s.chunks() != schedules.front().chunks()) {
      throw error("planner: schedule '" + s.name() + "' has " + std::to_string(s.chunks()) + " chunk(s) but '" +
                  schedules.front().name() + "' has " + std::to_string(schedules.front().chunks()) +
                  "; every schedule of one plan runs the same model chunks");
    }
  }
  return schedules.front().chunks();
}

/// @return the physical slots needed: the peak number of forwards waiting for their backward, max
/// over chunks and over every schedule.
[[nodiscard]] inline int count_slots(const std::vector<schedule>& schedules) {
  const int chunks = common_chunks(schedules);
  int peak = 1;
  for (const schedule& s : schedules) {
    std::vector<int> pending(static_cast<std::size_t>(chunks), 0);
    for (const event& e : s.events()) {
      int& p = pending[static_cast<std::size_t>(e.chunk)];
      p += e.kind == phase::forward ? 1 : -1;
      peak = std::max(peak, p);
    }
  }
  return peak;
}

/// @return the most bytes alive at once in `s` when each pending microbatch of chunk c holds
/// `chunk_bytes[c]`.
[[nodiscard]] inline std::size_t peak_live_bytes(const schedule& s, const std::vector<std::size_t>& chunk_bytes) {
  std::size_t peak = 0;
  std::size_t live = 0;
  for (const event& e : s.events()) {
    const std::size_t bytes = chunk_bytes[static_cast<std::size_t>(e.chunk)];
    live = e.kind == phase::forward ? live + bytes : live - bytes;
    peak = std::max(peak, live);
  }
  return peak;
}

/// @return the most bytes alive at once over every schedule when each pending microbatch of chunk c
/// holds `chunk_bytes[c]`: what any layout could reach if microbatches were not bound to slots.
[[nodiscard]] inline std::size_t peak_live_bytes(const std::vector<schedule>& schedules,
                                                 const std::vector<std::size_t>& chunk_bytes) {
  std::size_t peak = 0;
  for (const schedule& s : schedules) peak = std::max(peak, peak_live_bytes(s, chunk_bytes));
  return peak;
}

/// @brief Lifetimes of every (chunk, slot) over `schedules`, microbatches bound to slots by `maps`
/// (one per schedule, in order) over `slots` slots per chunk.
/// @throws graphpool::error naming the schedule, the entry and the frame when a forward lands on a
/// slot whose previous microbatch is still alive: with `modulo` maps, "slot period is shorter than
/// the schedule's liveness"; otherwise the map is invalid for the schedule.
[[nodiscard]] inline liveness analyze(const std::vector<schedule>& schedules, const std::vector<slot_map>& maps,
                                      int slots, bool modulo) {
  liveness result;
  result.chunks = common_chunks(schedules);
  result.slots = slots;
  const std::size_t groups = static_cast<std::size_t>(result.chunks) * static_cast<std::size_t>(result.slots);
  if (groups > max_frames) {
    throw error("planner: " + std::to_string(result.chunks) + " chunk(s) x " + std::to_string(result.slots) +
                " slot(s) is more than the " + std::to_string(max_frames) + " (chunk, slot) pairs one plan may hold");
  }
  if (maps.size() != schedules.size()) {
    throw error("planner: " + std::to_string(maps.size()) + " slot map(s) for " + std::to_string(schedules.size()) +
                " schedule(s); give one map per schedule");
  }
  result.saved = conflict_graph(groups);
  result.grads = conflict_graph(groups);
  result.alive_events.assign(groups, 0);
  // Per group, the groups alive at any of its forwards (bits, a row per group): recorded as conflicts
  // once at the end, as the schedules repeat the same pairs many times over.
  const std::size_t words = result.saved.words();
  std::vector<std::uint64_t> born_beside(groups * words, 0);

  for (std::size_t k = 0; k < schedules.size(); ++k) {
    const schedule& s = schedules[k];
    const slot_map& map = maps[k];
    if (map.microbatches != s.microbatches() || map.slots.size() != static_cast<std::size_t>(result.chunks)) {
      throw error("planner: the slot map for schedule '" + s.name() + "' is for " + std::to_string(map.microbatches) +
                  " microbatch(es) of " + std::to_string(map.slots.size()) + " chunk(s), not " +
                  std::to_string(s.microbatches()) + " of " + std::to_string(result.chunks));
    }
    std::vector<int> holder(groups, -1);       // microbatch alive in each group, -1 when free
    std::vector<std::size_t> since(groups, 0);  // event index of that microbatch's forward
    std::vector<std::uint64_t> alive(words, 0);  // groups alive now, as bits
    std::size_t previous_backward = groups;     // group of the last backward, none yet
    const std::vector<event>& events = s.events();
    for (std::size_t i = 0; i < events.size(); ++i) {
      const event& e = events[i];
      const std::vector<int>& row = map.slots[static_cast<std::size_t>(e.chunk)];
      const int slot = static_cast<std::size_t>(e.microbatch) < row.size() ? row[static_cast<std::size_t>(e.microbatch)] : -1;
      if (slot < 0 || slot >= result.slots) {
        throw error("planner: the slot map for schedule '" + s.name() + "' sends chunk " + std::to_string(e.chunk) +
                    " microbatch " + std::to_string(e.microbatch) + " to slot " + std::to_string(slot) +
                    ", outside [0, " + std::to_string(result.slots) + ")");
      }
      const std::size_t g = result.group(e.chunk, slot);
      if (e.kind == phase::forward) {
        if (holder[g] >= 0) {
          throw error("schedule '" + s.name() + "', entry " + std::to_string(i) + " (order id " +
                      std::to_string(e.chunk + 1) + "): the forward of chunk " + std::to_string(e.chunk) + " microbatch " +
                      std::to_string(e.microbatch) + " lands on frame (chunk " + std::to_string(e.chunk) +
                      ", slot " + std::to_string(slot) + ") still alive for microbatch " + std::to_string(holder[g]) +
                      (modulo ? ": slot period is shorter than the schedule's liveness; use at least " +
                                    std::to_string(count_slots(schedules)) + " slots"
                              : std::string(": the slot map is invalid for this schedule")));
        }
        for (std::size_t w = 0; w < words; ++w) born_beside[g * words + w] |= alive[w];
        holder[g] = e.microbatch;
        since[g] = i;
        alive[g / 64] |= std::uint64_t{1} << (g % 64);
      } else {
        holder[g] = -1;
        result.alive_events[g] += i - since[g] + 1;
        alive[g / 64] &= ~(std::uint64_t{1} << (g % 64));
        if (previous_backward != groups) result.grads.add_conflict(g, previous_backward);
        previous_backward = g;
      }
    }
  }
  for (std::size_t g = 0; g < groups; ++g) {
    for (std::size_t w = 0; w < words; ++w) {
      for (std::uint64_t bits = born_beside[g * words + w]; bits != 0; bits &= bits - 1) {
        result.saved.add_conflict(g, w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)));
      }
    }
  }
  return result;
}

/// @brief Lifetimes of every (chunk, slot) over `schedules` with microbatch m on slot m mod `slots`
/// (0: count_slots()).
/// @throws graphpool::error "slot period is shorter than the schedule's liveness" naming the schedule,
/// the entry and the frame when a forward lands on a slot whose previous microbatch is still alive.
[[nodiscard]] inline liveness analyze(const std::vector<schedule>& schedules, int slots = 0) {
  const int period = slots == 0 ? count_slots(schedules) : slots;
  if (period < 1) throw error("planner: slots must be at least 1, not " + std::to_string(period));
  return analyze(schedules, modulo_maps(schedules, period), period, true);
}

}  // namespace graphpool::plan
