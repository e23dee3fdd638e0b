#pragma once
/// @file single_lowering.hpp
/// @brief The searches make_plan runs on a single schedule's lowest packed layout with no copy limit
/// while it is above the live bound: where it is far above, the sweep again with more effort; the rising
/// search at heights under it, ruin and recreate, then the conflict-driven search over which frame lies
/// below which. Each microbatch may open a copy of its own
/// there; with a copy limit the copies the moved frames open rarely fit it. Host-only: no CUDA header.

#include <cstddef>
#include <utility>

#include "graphpool/plan/copy_table.hpp"
#include "graphpool/plan/frame_intervals.hpp"
#include "graphpool/plan/frame_sizes.hpp"
#include "graphpool/plan/learned_lower.hpp"
#include "graphpool/plan/lowered_maps.hpp"
#include "graphpool/plan/packed_maps.hpp"
#include "graphpool/plan/recreate_layout.hpp"
#include "graphpool/plan/rising_layout.hpp"
#include "graphpool/plan/schedule.hpp"
#include "graphpool/plan/slot_map.hpp"

namespace graphpool::plan {

/// @brief A single schedule's lowest layout after every packing, where more than 1 / this above the live bound
/// (5%: issue 8's target for single schedules), is laid out again by squeaky_sweep with longer_sweep_factor
/// times its effort.
inline constexpr std::size_t longer_sweep_margin = 20;

/// @brief The sweep from the start with the squeaky wheel and every noisy restart: one of make_plan's packings
/// (layout_packings), and the one laid out again with longer_sweep_factor times its effort.
inline constexpr packing squeaky_sweep{packing_order::sweep, true, false, 0, 240'000'000, 4, true};

/// @brief How many times squeaky_sweep's effort the sweep laid out again has: its squeaky wheel runs out of
/// effort on long schedules (PP 8 rank 1 VPP 4 of 77, 40, 40 and 188 MiB: 1.045 of the live bound at M 96,
/// 1.081 at M 128; with four times the effort 1.057, and 1.041 after the searches below). About 10-25 s more
/// on PP 8 VPP 4 M 128 (512 frames) where it runs.
inline constexpr std::size_t longer_sweep_factor = 4;

/// @brief Sections the rising search may look at (rising_lower) over the heights it tries under the lowest
/// layout of a single schedule above the live bound with no copy limit: 16 heights, about 3 s at most.
inline constexpr std::size_t rising_lower_effort = 16 * detail::rising_height_effort;

/// @brief Frames ruin and recreate may look at (recreate_layout.hpp) on a single schedule above the live
/// bound with no copy limit: about 3 s on PP 8 VPP 4 M 128 (512 frames), which take 15-25 s before it.
inline constexpr std::size_t recreate_effort = 60'000'000;

/// @brief Frames and clauses the conflict-driven search may look at (learned_layout.hpp) after ruin and
/// recreate, over the heights it lowers the layout through (in runs of detail::learned_run_effort): at most
/// about 2 s on this machine.
inline constexpr std::size_t learned_effort = 150'000'000;

/// @brief One more run where those give up at a height, for a proof (which the plan's lower bound reports):
/// at most about 0.6 s more.
inline constexpr std::size_t learned_proof_effort = 60'000'000;

/// @brief The most frames it searches: it keeps every pair of frames alive together.
inline constexpr std::size_t learned_frames_limit = 640;

namespace detail {

/// Whether layout `a` is valid and lower than `b` (or as low with fewer copies): how make_plan ranks layouts.
[[nodiscard]] inline bool smaller_layout(const packed_maps& a, const packed_maps& b) {
  return a.valid && (!b.valid || a.footprint < b.footprint ||
                     (a.footprint == b.footprint && copies_used(a.maps) < copies_used(b.maps)));
}

/// `least`, the lowest packed layout of the single schedule `s` (frames of `sizes`, at most `budget` copies
/// a chunk), where more than a twentieth above `live_bound` replaced by squeaky_sweep's layout with
/// longer_sweep_factor times its effort if that is lower, then lowered: by ruin and recreate (a few frames out
/// and back in, many times), from `least` and,
/// where the rising search at heights between `live_bound` and its top finds a lower layout, from that one
/// too, whose path is kept only where it ends lower (from a lower start the later stages can end higher: PP
/// 2 rank 0 VPP 2 M 24 of eight layers, 2508 against 2505 MiB; PP 4 rank 0 VPP 4 M 24 of three layers, where
/// the windows lower only the packed path's layout); then by the conflict-driven
/// search from the layout left, a unit under its top at a time, which finds layouts near a given one that
/// moving a few frames does not. Where that search proves no layout lower, `least_saved` becomes its top.
[[nodiscard]] inline packed_maps lowered_single(const schedule& s, const frame_sizes& sizes, int budget,
                                                packed_maps least, std::size_t live_bound,
                                                std::size_t& least_saved) {
  if (least.footprint > live_bound + live_bound / longer_sweep_margin) {
    packing longer = squeaky_sweep;
    longer.search_effort *= longer_sweep_factor;
    packed_maps swept = pack_maps({s}, sizes.bytes, budget, longer);
    if (smaller_layout(swept, least)) least = std::move(swept);
  }
  auto recreated = [&](const packed_maps& from) {
    return lowered_maps(s, sizes, budget, from, [&](const auto& frames, auto offsets) {
      return recreate_lower(frames, std::move(offsets), live_bound, recreate_effort);
    });
  };
  // lowered_maps returns a valid layout only where it is lower than the one it was given.
  packed_maps rising = lowered_maps(s, sizes, budget, least, [&](const auto& frames, auto offsets) {
    return rising_lower(frames, std::move(offsets), live_bound, rising_lower_effort);
  });
  if (rising.valid) {
    packed_maps from_rising = recreated(rising);
    if (smaller_layout(from_rising, rising)) rising = std::move(from_rising);
  }
  packed_maps lowered = recreated(least);
  if (smaller_layout(lowered, least)) least = std::move(lowered);
  if (rising.valid && rising.footprint < least.footprint) least = std::move(rising);
  lowered = lowered_maps(s, sizes, budget, least, [&](const auto& frames, auto offsets) {
    if (frames.size() > learned_frames_limit) return offsets;
    bool proven = false;
    offsets = learned_lower(frames, std::move(offsets), live_bound, learned_effort, &proven, learned_run_effort,
                            learned_proof_effort);
    if (proven) least_saved = top_of(frames, offsets);
    return offsets;
  });
  if (smaller_layout(lowered, least)) least = std::move(lowered);
  return least;
}

}  // namespace detail

}  // namespace graphpool::plan
