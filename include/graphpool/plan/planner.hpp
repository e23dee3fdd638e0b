#pragma once
/// @file planner.hpp
/// @brief The planner: frames of a pipeline model, their sizes per branch, and where each goes.
///
/// Input: schedules (every one that will be replayed), layers per chunk, and bytes per branch
/// (problem.hpp). Output: a plan — every frame's arena and offset, every arena's size, and the figures
/// to judge it by (naive sum, coloring baseline, clique and live lower bounds). make_plan picks the slot
/// maps (m mod S, or maps chosen from the schedules) and plans them (plan_with_maps.hpp).
/// Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/error.hpp"
#include "graphpool/plan/frame_placement.hpp"
#include "graphpool/plan/frame_sizes.hpp"
#include "graphpool/plan/liveness.hpp"
#include "graphpool/plan/lowered_maps.hpp"
#include "graphpool/plan/packed_maps.hpp"
#include "graphpool/plan/plan_with_maps.hpp"
#include "graphpool/plan/problem.hpp"
#include "graphpool/plan/region_maps.hpp"
#include "graphpool/plan/schedule.hpp"
#include "graphpool/plan/single_lowering.hpp"
#include "graphpool/plan/slot_map.hpp"
#include "graphpool/plan/window_layout.hpp"

namespace graphpool::plan {

/// @brief The layouts make_plan tries for the schedule rule, in order, until one reaches the live bound: by
/// forward time with layers apart (equal frames reach the live bound); then, for unequal frames of a single
/// schedule, frames lowest first at the live bound (exact within its effort, so it reaches the live bound on
/// small schedules where the time sweeps miss it; beyond a few hundred frames it finds it rarely, and those
/// give it up quickly); then the sweep (each frame beside the neighbour that dies nearest its own end,
/// earlier choices revisited where one finds no room: the exchange of interleaved schedules), exact and with
/// noisy restarts, where those run out of copies on a union with even shares of effort for its counts, and
/// lowered by the squeaky wheel (frames a sweep gets stuck at are placed earlier the next time) from the
/// exact sweep's layout and, apart, from the noisy sweeps' (the wheel is erratic: over the planner-quality
/// corpus's unequal frames each start left 35 of 504 plans lower than the other), and the same begun a
/// quarter into the schedule (its steady state laid out first, the warmup fitted around it after: 4 of those
/// 504 plans lower, one of them from above issue 8's target to below); offline orders with whole chunks
/// best-fit, each refined by a squeaky-wheel search; the steady state laid out on a ring of a few periods and
/// repeated, each chunk's layers as one block, then apart where the blocks stay above the live bound
/// (periodic_layout.hpp: kept only where lower than every layout before it, so it stops early
/// elsewhere; a union's counts with a short last group have that tail laid out afresh, periodic_replay.hpp);
/// and frames under a height, backing up where one does not fit. A single schedule with no copy limit still
/// above the live bound after them has its lowest layout (where 5% above, squeaky_sweep again with
/// longer_sweep_factor times its effort) lowered by the rising search at heights under it (rising_lower_effort),
/// by ruin and recreate (recreate_effort), then by the conflict-driven search over which frame lies below which.
inline constexpr packing layout_packings[] = {
    {packing_order::start, true, false, 0},
    {packing_order::rising, true, false, 0, 200'000'000},
    {packing_order::sweep, true, false, 0, 60'000'000, 4},
    {packing_order::sweep, true, false, 6, 60'000'000, 4},
    {packing_order::sweep, true, false, 0, 60'000'000, 0},
    squeaky_sweep,
    {packing_order::sweep, true, false, 4, 240'000'000, 4, true},
    {packing_order::sweep, true, false, 4, 240'000'000, 4, true, 250},
    {packing_order::size, false, true, 40},
    {packing_order::area, false, true, 40},
    {packing_order::lifetime, false, false, 40},
    {packing_order::size, true, true, 40},
    {packing_order::start, false, true, 40},
    {packing_order::periodic, true, false, 0, 20'000'000},
    {packing_order::bounded, true, true, 0, 4'000'000},
};

/// @brief Steps the window search may take (window_layout.hpp) in each of its rounds on the chosen plan
/// of a single schedule with no copy limit still above its bound, each round followed by ruin and recreate
/// (recreate_effort): in all at most about 20 s on PP 8 VPP 4 M 128 (512 frames), which take 15-25 s before.
inline constexpr std::size_t window_effort = 300'000'000;
inline constexpr int window_rounds = 3;

/// @brief Plans the frames of `p` with `mode`.
///
/// With the mod rule, microbatch m replays slot m mod S. With the schedule rule, m mod S and maps
/// chosen from the schedules (regions by start time, lowest or best-fitting, or copies laid out byte
/// by byte as the schedules replay) are planned, and the
/// smallest footprint within the copies budget wins (then the fewest copies); the search stops at the
/// live bound, which no map can beat. The schedule rule's saved lower bound is over every map: the live
/// bound, or the footprint itself where the conflict-driven search proves no layout lower (so a plan at
/// its lower bound is optimal under either rule). A single schedule with no copy limit whose chosen plan is
/// still above that bound has its layout lowered last by windows of time laid out anew (window_layout.hpp).
/// With the schedule rule, schedules of one microbatch count must run in one order (a runtime picks the
/// map by the count); one given twice gets the same map twice.
/// @throws graphpool::error for bad input (naming the schedule, entry, chunk, layer or branch), two
/// schedules of one count in different orders under the schedule rule, and "slot period is shorter than
/// the schedule's liveness" when `p.slots` is too small.
[[nodiscard]] inline plan make_plan(const problem& p, assignment mode) {
  if (mode != assignment::offsets && mode != assignment::coloring) {
    throw error("planner: assignment " + std::to_string(static_cast<int>(mode)) + " is neither offsets nor coloring");
  }
  if (p.rule != slot_rule::mod && p.rule != slot_rule::schedule) {
    throw error("planner: slot rule " + std::to_string(static_cast<int>(p.rule)) + " is neither mod nor schedule");
  }
  const int chunks = common_chunks(p.schedules);
  detail::validate(p, chunks);
  const detail::frame_sizes sizes = detail::size_frames(p, chunks);
  if (p.rule == slot_rule::mod) {
    if (p.max_copies != twice_modulo_copies) {
      throw error("planner: max_copies " + std::to_string(p.max_copies) +
                  " applies to the schedule slot rule; with the mod rule give slots instead");
    }
    const int slots = p.slots == 0 ? count_slots(p.schedules) : p.slots;
    if (slots < 1) throw error("planner: slots must be at least 1, not " + std::to_string(slots));
    return detail::plan_with_maps(p, mode, sizes, modulo_maps(p.schedules, slots), slots, true,
                                  detail::full_effort);
  }
  if (p.slots != 0) {
    throw error("planner: slots " + std::to_string(p.slots) +
                " applies to the mod slot rule; with the schedule rule give max_copies instead");
  }
  // A runtime picks a plan's slot map by microbatch count (find_slot_map), so a count has one map: two
  // schedules of one count in different orders cannot share a plan, and one given twice is planned once.
  std::vector<schedule> distinct;
  std::vector<std::size_t> distinct_of;  // per schedule given: its entry in distinct
  for (const schedule& s : p.schedules) {
    std::size_t k = 0;
    while (k < distinct.size() && distinct[k].microbatches() != s.microbatches()) ++k;
    if (k < distinct.size() && distinct[k].order() != s.order()) {
      throw error("planner: schedules '" + distinct[k].name() + "' and '" + s.name() + "' both run " +
                  std::to_string(s.microbatches()) + " microbatch(es), in different orders; a runtime picks a plan's "
                  "slot map by its microbatch count, so with the schedule slot rule each count has one schedule: "
                  "plan them apart, or use the mod rule (m mod S serves both)");
    }
    if (k == distinct.size()) distinct.push_back(s);
    distinct_of.push_back(k);
  }
  if (distinct.size() < p.schedules.size()) {
    problem once = p;
    once.schedules = std::move(distinct);
    plan result = make_plan(once, mode);
    std::vector<slot_map> maps;
    for (std::size_t i = 0; i < p.schedules.size(); ++i) {
      maps.push_back(result.slot_maps[distinct_of[i]]);
      maps.back().schedule = p.schedules[i].name();
    }
    result.slot_maps = std::move(maps);
    return result;
  }
  const int period = count_slots(p.schedules);
  if (p.max_copies < 0 && p.max_copies != twice_modulo_copies) {
    throw error("planner: max_copies " + std::to_string(p.max_copies) +
                " (problem::max_copies; --max-copies in graphpool-plan) cannot be negative; give 0 for no limit");
  }
  if (p.max_copies > 0 && p.max_copies < period) {
    // Named as graphpool-plan's --max-copies spells it too, so a user of either finds the one to change.
    throw error("planner: max_copies " + std::to_string(p.max_copies) +
                " (problem::max_copies; --max-copies in graphpool-plan) is below the " + std::to_string(period) +
                " microbatches one chunk holds at once; allow at least " + std::to_string(period) +
                " copies (0 = no limit)");
  }
  int budget = p.max_copies == twice_modulo_copies ? 2 * period : p.max_copies;
  if (budget == 0) {  // each microbatch of each schedule a copy of its own, twice (split by backward parity)
    budget = 1;
    for (const schedule& s : p.schedules) budget += 2 * s.microbatches();
  }
  // No more copies than one plan holds frames for (max_frames over every chunk's layers), nor fewer
  // than m mod S's.
  std::size_t layers_total = 0;
  for (int layers : sizes.layers_per_chunk) layers_total += static_cast<std::size_t>(layers);
  budget = std::max(period, std::min(budget, static_cast<int>(max_frames / std::max<std::size_t>(layers_total, 1))));
  // Saved bytes first (so never above m mod S's), then returned-gradient bytes, then the fewest copies.
  auto better = [](const plan& a, const plan& b) {
    if (a.saved.footprint_bytes != b.saved.footprint_bytes) return a.saved.footprint_bytes < b.saved.footprint_bytes;
    if (a.grad.footprint_bytes != b.grad.footprint_bytes) return a.grad.footprint_bytes < b.grad.footprint_bytes;
    return a.slots < b.slots;
  };
  // The same between candidates, whose returned gradients are placed only where their saved bytes tie.
  auto better_candidate = [&](detail::candidate_plan& a, detail::candidate_plan& b) {
    if (a.saved().saved.footprint_bytes != b.saved().saved.footprint_bytes) {
      return a.saved().saved.footprint_bytes < b.saved().saved.footprint_bytes;
    }
    return better(a.whole(), b.whole());
  };
  auto modulo = [&] {
    return detail::plan_saved(p, mode, sizes, modulo_maps(p.schedules, period), period, false, detail::full_effort);
  };
  // Maps laid out as dynamic storage allocation on the schedules' intervals, several ways; the
  // smallest layout (then the fewest copies) of each family is kept: the sweep's, and the others'. At
  // the live bound no map can do better.
  const std::size_t live_bound = peak_live_bytes(p.schedules, sizes.chunk_bytes);
  packed_maps packed[2];  // [0]: greedy orders and the bounded search; [1]: the sweep
  packed[0].valid = packed[1].valid = false;
  // Equal frames: the packing by forward time fits the most alive at once with the fewest copies; the
  // height-bounded search cannot do better and opens more copies.
  std::size_t first_bytes = 0;  // of the first frame that has any
  bool equal_frames = true;
  for (const std::vector<std::size_t>& layers : sizes.bytes) {
    for (std::size_t bytes : layers) {
      if (bytes == 0) continue;
      if (first_bytes == 0) first_bytes = bytes;
      equal_frames = equal_frames && bytes == first_bytes;
    }
  }
  for (const packing& how : layout_packings) {
    if ((how.order == packing_order::bounded || how.order == packing_order::sweep ||
         how.order == packing_order::rising || how.order == packing_order::periodic) && equal_frames) continue;
    // Frames laid out lowest first at the live bound: a single schedule (a union's counts replay with an
    // effort of their own kind).
    if (how.order == packing_order::rising && p.schedules.size() > 1) continue;
    // The sweep with even shares for the counts of a union only where the others ran out of copies.
    if (how.order == packing_order::sweep && how.own_layout_share == 0 && packed[1].valid) continue;
    // The sweep begun in the steady state: a single schedule with no copy limit only (a union's counts
    // start from the anchor's choices, which a sweep begun elsewhere does not rank alike; at the default
    // budget it lowered none of the planner-quality corpus's unequal-frame plans and took 45% longer).
    if (how.begin_permille > 0 && (p.schedules.size() > 1 || p.max_copies != 0)) continue;
    // With no copy limit, a union's counts laid out by themselves may take their frames' layout where it
    // is lower than their blocks' (frames open about a copy per microbatch: at the default budget a first
    // version, frames first wherever lower, lowered none of the corpus's plans and left one higher).
    packing here = how;
    here.lower_own_frames = how.order == packing_order::sweep && p.max_copies == 0;
    // The periodic layout is kept only where lower than every layout found: it stops once it is not.
    if (how.order == packing_order::periodic) {
      for (const packed_maps& found : packed) {
        if (found.valid && (here.below == 0 || found.footprint < here.below)) here.below = found.footprint;
      }
    }
    packed_maps candidate = pack_maps(p.schedules, sizes.bytes, budget, here);
    packed_maps& kept = packed[how.order == packing_order::sweep ? 1 : 0];
    if (detail::smaller_layout(candidate, kept)) kept = std::move(candidate);
    if (kept.valid && kept.footprint <= live_bound) break;
  }
  packed_maps& least = detail::smaller_layout(packed[1], packed[0]) ? packed[1] : packed[0];
  // The schedule rule's saved-frame bound holds for every map, not only for the chosen copies (their
  // heaviest clique bounds only the placement of those copies, which came from the layout itself): no map
  // lays the frames out under the live bound, nor under a height the conflict-driven search proves least.
  std::size_t least_saved = live_bound;
  auto bounded = [&](plan chosen) {
    chosen.saved.lower_bound_bytes = least_saved;
    chosen.saved.lower_bound_exact = true;
    return chosen;
  };
  // A single schedule with no copy limit still above the live bound: its layout lowered by the searches of
  // single_lowering.hpp (each microbatch may open a copy of its own there; with a limit the copies the moved
  // frames open rarely fit it).
  if (least.valid && least.footprint > live_bound && p.schedules.size() == 1 && p.max_copies == 0) {
    least = detail::lowered_single(p.schedules.front(), sizes, budget, std::move(least), live_bound, least_saved);
  }
  if (least.valid && least.footprint <= live_bound) {
    const int copies = copies_used(least.maps);
    plan best = detail::plan_with_maps(p, mode, sizes, std::move(least.maps), copies, false, detail::candidate_effort,
                                       least.offsets);
    // Offsets lay the saved frames out at the layout's height; arenas by coloring may need more.
    if (best.saved.footprint_bytes <= live_bound && best.grad.footprint_bytes <= best.grad.live_bound_bytes) {
      return bounded(std::move(best));
    }
    // Gradients above their bound, or the coloring's arenas above the layout: the copies split by backward
    // parity, or m mod S where it holds as few saved bytes (with fewer copies; so never above its plan).
    for (plan candidate : {detail::with_gradient_parity(p, mode, sizes, best, budget), std::move(modulo().whole())}) {
      if (better(candidate, best)) best = std::move(candidate);
    }
    return bounded(std::move(best));
  }
  // Above the live bound: m mod S (the fewest copies, and the footprint every map must beat, searched as
  // hard as the mod rule's plan so never above it), regions by start time, and the layout, each through
  // a placement search of bounded effort; the smallest wins.
  detail::candidate_plan best = modulo();
  for (region_choice choice : {region_choice::lowest, region_choice::best_fit}) {
    if (best.saved().saved.footprint_bytes <= live_bound) break;
    std::vector<slot_map> maps = schedule_maps(p.schedules, sizes.chunk_bytes, budget, choice);
    const int copies = copies_used(maps);
    detail::candidate_plan candidate =
        detail::plan_saved(p, mode, sizes, std::move(maps), copies, false, detail::candidate_effort);
    if (better_candidate(candidate, best)) best = std::move(candidate);
  }
  // Both families' layouts: the sweep's many copies can leave the placement search less room than a
  // layout a little higher.
  for (packed_maps& layout : packed) {
    if (!layout.valid || best.saved().saved.footprint_bytes <= live_bound) continue;
    const int copies = copies_used(layout.maps);
    detail::candidate_plan candidate = detail::plan_saved(p, mode, sizes, std::move(layout.maps), copies, false,
                                                          detail::candidate_effort, layout.offsets);
    if (better_candidate(candidate, best)) best = std::move(candidate);
  }
  plan chosen = std::move(best.whole());
  // A single schedule with no copy limit: the chosen layout (the placement search's may be lower than every
  // packed one) lowered by windows of time laid out anew, the rest pinned, and ruin and recreate after them.
  if (mode == assignment::offsets && p.schedules.size() == 1 && p.max_copies == 0 &&
      chosen.saved.footprint_bytes > least_saved) {
    packed_maps lowered = detail::lowered_maps(
        p.schedules.front(), sizes, budget, detail::layout_of(chosen), [&](const auto& frames, auto offsets) {
          return detail::window_rounds_lower(frames, std::move(offsets), live_bound, window_effort, recreate_effort,
                                             window_rounds);
        });
    if (lowered.valid) {
      const int copies = copies_used(lowered.maps);
      plan candidate = detail::plan_with_maps(p, mode, sizes, std::move(lowered.maps), copies, false,
                                              detail::given_effort, lowered.offsets);
      if (better(candidate, chosen)) chosen = std::move(candidate);
    }
  }
  plan split = detail::with_gradient_parity(p, mode, sizes, chosen, budget);
  return bounded(better(split, chosen) ? std::move(split) : std::move(chosen));
}

}  // namespace graphpool::plan
