#pragma once
/// @file lowest_sweep.hpp
/// @brief The sweep (sweep_layout.hpp) run at heights from a floor up until one is reached, exact and
/// with noisy restarts, then lowered by the squeaky wheel, and the anchor schedule's copies laid out
/// from it. Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <vector>

#include "graphpool/plan/copy_table.hpp"
#include "graphpool/plan/frame_intervals.hpp"
#include "graphpool/plan/sweep_layout.hpp"

namespace graphpool::plan::detail {

/// The noise (events) of the sweeps tried at a height after the two exact ones.
inline constexpr std::size_t sweep_noise = 8;

/// `permille` (up to 1000) thousandths of `value`, rounded down, without overflow for any `value`.
[[nodiscard]] constexpr std::size_t permille_of(std::size_t value, std::size_t permille) noexcept {
  return value / 1000 * permille + value % 1000 * permille / 1000;
}

/// Whether `effort` affords `restarts` noisy sweeps (64 passes each) besides the exact ones at a height.
[[nodiscard]] inline bool affords_restarts(const sweep_layout& sweep, std::size_t effort, unsigned restarts) {
  return 64 * sweep.pass() * (2 + restarts) <= effort;
}

/// A layout the sweep found: offsets per frame (empty: none), and the height, wall rule and choices
/// that gave it (to start a schedule that begins the same way from).
struct swept_layout {
  std::vector<std::size_t> offsets;
  std::size_t height = 0;
  wall_rule walls = wall_rule::never;
  unsigned seed = 0;       // the ranking's noise (sweep_layout::perturb)
  std::size_t spread = 0;
  std::vector<std::size_t> choices;
  std::size_t spent = 0;   // the effort the search for it took (found or not)
};

// lowest_sweep's search over the heights, spending from `effort`.
[[nodiscard]] inline swept_layout sweep_heights(sweep_layout& sweep, const std::vector<frame_interval>& frames,
                                                std::size_t floor, std::size_t limit, std::size_t& effort,
                                                unsigned restarts, const swept_layout* hint) {
  swept_layout found;
  auto keep = [&](std::size_t height, wall_rule walls, unsigned seed, std::size_t spread) {
    found.height = height;
    found.walls = walls;
    found.seed = seed;
    found.spread = spread;
    found.choices = sweep.choices();
  };
  // Sweeps ranked with a little noise where the effort affords them at every height (small schedules).
  const unsigned attempts = affords_restarts(sweep, effort, restarts) ? 2 + restarts : 2;
  auto at = [&](std::size_t height) {
    // Each wall rule, then the noisy sweeps (64 passes each); a height the sweep cannot reach takes a
    // share of what is left, so higher ones keep their chance.
    for (unsigned attempt = 0; attempt < attempts && effort > 0; ++attempt) {
      const wall_rule walls = attempt % 2 == 0 ? wall_rule::never : wall_rule::at_the_end;
      const std::size_t spread = attempt < 2 ? 0 : sweep_noise;
      sweep.perturb(attempt, spread);
      const std::size_t share = attempt < 2 ? std::max(effort / 3, 2 * sweep.pass()) : 64 * sweep.pass();
      std::size_t slice = std::min(effort, share);
      effort -= slice;
      found.offsets = sweep.under(height, walls, slice);
      effort += slice;
      if (!found.offsets.empty()) {
        keep(height, walls, attempt, spread);
        return true;
      }
    }
    return false;
  };
  if (hint != nullptr) {
    std::size_t half = effort / 2;
    effort -= half;
    sweep.perturb(hint->seed, hint->spread);
    found.offsets = sweep.under(floor, hint->walls, half, hint->choices);
    effort += half;
    if (!found.offsets.empty()) {
      keep(floor, hint->walls, hint->seed, hint->spread);
      return found;
    }
  }
  std::size_t missed = floor;  // the highest height missed below the one reached (floor: none tried)
  bool reached = false;
  for (std::size_t permille : {0, 25, 50, 100, 200, 500, 1000}) {
    const std::size_t above = permille_of(floor, permille);
    const std::size_t height = permille == 1000 ? limit : std::min(limit, floor + above);
    if (effort == 0) break;
    if (permille > 0 && height <= missed) continue;
    reached = at(height);
    if (reached) break;
    missed = height;
    if (height == limit) break;
  }
  if (!reached) return {};
  const swept_layout best = found;
  const std::size_t top = top_of(frames, best.offsets);
  const std::size_t step = std::max<std::size_t>(floor / 200, 1);
  for (std::size_t height = missed + step; height < top && missed < top && effort > 0; height += step) {
    if (at(height)) return found;
  }
  return best;
}

/// @return the lowest layout the sweep finds for `frames` at heights from `floor` to `limit`, within
/// `effort` neighbours looked at, never less than 32 passes (`spent` says how much it took); no offsets
/// when none was found. At each height: both wall rules, then `restarts` sweeps ranked with noise (when
/// the effort affords them at every height). With a `hint`, its wall rule, noise and choices are tried
/// first, at `floor`, with half the effort. Heights go up coarsely (2.5%, 5%, 10%, 20%, 50% above
/// `floor`, then `limit`) until one is reached, then up from the last one missed in steps of floor / 200.
/// `sweep` was built over `frames`.
[[nodiscard]] inline swept_layout lowest_sweep(sweep_layout& sweep, const std::vector<frame_interval>& frames,
                                               std::size_t floor, std::size_t limit, std::size_t effort,
                                               unsigned restarts = 0, const swept_layout* hint = nullptr) {
  effort = std::max(effort, 32 * sweep.pass());
  const std::size_t given = effort;
  swept_layout found = sweep_heights(sweep, frames, floor, limit, effort, restarts, hint);
  found.spent = given - effort;
  return found;
}

/// The same, over a sweep built here.
[[nodiscard]] inline swept_layout lowest_sweep(const std::vector<frame_interval>& frames, std::size_t floor,
                                               std::size_t limit, std::size_t effort, unsigned restarts = 0,
                                               const swept_layout* hint = nullptr) {
  sweep_layout sweep(frames);
  return lowest_sweep(sweep, frames, floor, limit, effort, restarts, hint);
}

/// The squeaky wheel's settings: how many positions earlier in its order the frame a sweep got stuck
/// at moves, and how far back the sweeps revisit choices (less than the default: the order does the rest).
struct squeaky_setting {
  std::size_t move = 16;
  std::size_t revisit_reach = 30;
};

/// The settings the squeaky packing tries on a single schedule, each with the whole effort; the lowest
/// layout is kept. The wheel is erratic: a setting that lowers one schedule leaves another higher (each
/// of these was the lowest on some schedule of the planner-quality corpus when it was added, and with
/// half the effort the gains were gone). A union tries the first only: its footprint is set by the counts
/// replayed over the anchor's layout, not by that layout alone (a lower anchor left 4 unions higher), and
/// each setting costs as much.
inline constexpr squeaky_setting squeaky_settings[] = {{16, 30}, {8, 120}, {32, 30}, {16, 120}, {12, 60}};

/// Lowers `found` (a layout of `frames` that `sweep` found, or none) with the squeaky wheel: heights
/// below its top in steps of floor / 200, each with a third of the effort left; where both wall rules
/// get stuck, the frame they got stuck at moves `move` positions earlier in the sweep's order and
/// the sweep runs again (at most once per frame at a height). Stops at the first height not reached
/// within its share, or at `floor`.
inline void squeeze(sweep_layout& sweep, const std::vector<frame_interval>& frames, std::size_t floor,
                    std::size_t& effort, swept_layout& found, std::size_t move) {
  if (found.offsets.empty()) return;
  const std::size_t step = std::max<std::size_t>(floor / 200, 1);
  std::size_t top = top_of(frames, found.offsets);
  while (top >= floor + step && effort > 0) {
    const std::size_t height = top - step;
    std::size_t share = effort / 3;
    effort -= share;
    bool reached = false;
    for (std::size_t moves = 0; !reached && share > 0 && moves <= frames.size(); ++moves) {
      for (wall_rule walls : {wall_rule::never, wall_rule::at_the_end}) {
        std::vector<std::size_t> offsets = sweep.under(height, walls, share);
        if (offsets.empty()) continue;
        found.offsets = std::move(offsets);
        found.height = height;
        found.walls = walls;
        found.seed = 0;
        found.spread = 0;
        found.choices.clear();  // they rank offsets in the promoted order, which another sweep does not have
        reached = true;
        break;
      }
      if (!reached) sweep.promote(sweep.stuck(), move);
    }
    effort += share;
    if (!reached) return;
    top = top_of(frames, found.offsets);
  }
}

/// The anchor schedule's frames laid out by the sweep, from `floor` up to half again above it: a
/// microbatch takes the copy of its chunk whose layers sit at the same offsets, else a new one (invalid
/// past `budget` copies per chunk, or when no height up to there was reached within `effort`).
/// `swept` gets the sweep's layout (for the schedules replayed after it); `restarts` as lowest_sweep's,
/// and invalid when the effort does not afford them (the exact sweep is the same layout then);
/// `squeaky`: how many of squeaky_settings (from the first) then lower the layout (squeeze), each with
/// `effort`, where it fits the budget, to one that does; the lowest is kept. `begin_permille`: where the
/// sweep begins (sweep_layout's `from`), in permille of the schedule's events.
[[nodiscard]] inline anchor_layout sweep_anchor(const std::vector<std::vector<std::size_t>>& frame_bytes,
                                                const std::vector<lifetime>& items, std::size_t floor, int budget,
                                                std::size_t effort, unsigned restarts, std::size_t squeaky,
                                                swept_layout& swept, unsigned begin_permille = 0) {
  anchor_layout result{copy_table(frame_bytes), std::vector<std::ptrdiff_t>(items.size(), -1), 0, true};
  const std::vector<frame_interval> frames = frames_of(frame_bytes, items);
  if (frames.empty()) return result;
  result.valid = false;
  std::size_t events = 0;
  for (const frame_interval& frame : frames) events = std::max(events, frame.end);
  const std::size_t from = permille_of(events, begin_permille);
  // One sweep per revisit reach; with the squeaky wheel, each setting of that reach lowers its layout.
  const std::size_t settings = std::min(squeaky, std::size(squeaky_settings));
  std::vector<std::size_t> reaches;
  if (settings == 0) reaches.push_back(sweep_layout::default_revisit_reach);
  for (std::size_t k = 0; k < settings; ++k) {
    const std::size_t reach = squeaky_settings[k].revisit_reach;
    if (std::find(reaches.begin(), reaches.end(), reach) == reaches.end()) reaches.push_back(reach);
  }
  auto keep = [&](anchor_layout&& layout, const swept_layout& source) {
    if (result.valid && layout.footprint >= result.footprint) return;
    result = std::move(layout);
    swept = source;
  };
  for (std::size_t reach : reaches) {
    if (result.valid && result.footprint <= floor) break;
    sweep_layout sweep(frames, reach, from);
    if (restarts > 0 && !affords_restarts(sweep, effort, restarts)) return result;
    const swept_layout found = lowest_sweep(sweep, frames, floor, floor + floor / 2, effort, restarts);
    if (found.offsets.empty()) continue;
    anchor_layout candidate = anchor_of(frame_bytes, items, frames, found.offsets, budget);
    if (!candidate.valid) continue;
    keep(std::move(candidate), found);
    // Where the layout fits the copies budget: a lower one that fits it too.
    for (std::size_t k = 0; k < settings && result.footprint > floor; ++k) {
      const squeaky_setting& setting = squeaky_settings[k];
      if (setting.revisit_reach != reach) continue;
      sweep_layout wheel = sweep;
      std::size_t left = effort > found.spent ? effort - found.spent : 0;
      swept_layout lower = found;
      squeeze(wheel, frames, floor, left, lower, setting.move);
      if (top_of(frames, lower.offsets) >= result.footprint) continue;
      anchor_layout squeezed = anchor_of(frame_bytes, items, frames, lower.offsets, budget);
      if (squeezed.valid) keep(std::move(squeezed), lower);
    }
  }
  return result;
}

}  // namespace graphpool::plan::detail
