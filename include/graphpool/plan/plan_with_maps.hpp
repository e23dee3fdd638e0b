#pragma once
/// @file plan_with_maps.hpp
/// @brief One plan for given slot maps: liveness of the (chunk, copy) groups, the bounds, the coloring,
/// the offsets (a given layout, whole groups or frames one by one, whichever is smallest) and the
/// returned gradients (placed only when asked: between candidates they count only at equal saved bytes);
/// and the same maps with copies split by backward parity. Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/alignment.hpp"
#include "graphpool/error.hpp"
#include "graphpool/plan/coloring.hpp"
#include "graphpool/plan/conflict_graph.hpp"
#include "graphpool/plan/frame_placement.hpp"
#include "graphpool/plan/frame_sizes.hpp"
#include "graphpool/plan/gradient_parity.hpp"
#include "graphpool/plan/liveness.hpp"
#include "graphpool/plan/lowered_maps.hpp"
#include "graphpool/plan/problem.hpp"

namespace graphpool::plan::detail {

/// A plan whose saved frames are placed, and whose returned gradients are placed on the first call of
/// whole(): candidates are compared by saved bytes first, so most never need theirs.
class candidate_plan {
 public:
  candidate_plan(plan saved, liveness live, const problem& p, assignment mode, const search_effort& effort)
      : plan_(std::move(saved)), live_(std::move(live)), problem_(&p), mode_(mode), effort_(effort) {}

  /// @return the plan, returned gradients not yet placed unless whole() was called.
  [[nodiscard]] const plan& saved() const noexcept { return plan_; }
  /// @return the whole plan, returned gradients placed.
  [[nodiscard]] plan& whole();

 private:
  plan plan_;
  liveness live_;
  const problem* problem_;
  assignment mode_;
  search_effort effort_;
  bool grads_placed_ = false;
};

/// The plan of `p` once microbatches are bound to `slots` copies per chunk by `maps`, returned gradients
/// placed on demand; `layout` (offsets[chunk][copy][layer], may be empty) is a placement the maps were
/// built with, kept in offsets mode when it is valid and smaller than what the placement search finds.
[[nodiscard]] inline candidate_plan plan_saved(const problem& p, assignment mode, const frame_sizes& sizes,
                                               std::vector<slot_map> maps, int slots, bool modulo,
                                               const search_effort& effort,
                                               const std::vector<std::vector<std::vector<std::size_t>>>& layout = {}) {
  const int chunks = static_cast<int>(sizes.layers_per_chunk.size());
  std::size_t frame_count = 0;
  for (int layers : sizes.layers_per_chunk) frame_count += static_cast<std::size_t>(layers) * static_cast<std::size_t>(slots);
  if (frame_count > max_frames) {
    throw error("planner: " + std::to_string(frame_count) + " frames (" + std::to_string(chunks) + " chunk(s) x " +
                std::to_string(slots) + " slot(s) x layers) is more than the " + std::to_string(max_frames) +
                " one plan may hold; plan fewer layers or chunks at a time");
  }
  liveness live = analyze(p.schedules, maps, slots, modulo);

  plan result;
  result.mode = mode;
  result.rule = p.rule;
  result.chunks = chunks;
  result.slots = live.slots;
  for (const schedule& s : p.schedules) result.microbatches = std::max(result.microbatches, s.microbatches());
  result.layers_per_chunk = sizes.layers_per_chunk;
  result.branches = sizes.branches;
  result.slot_maps = std::move(maps);
  result.saved.naive_bytes = sizes.naive_per_slot * static_cast<std::size_t>(live.slots);
  const std::vector<std::size_t>& chunk_weight = sizes.chunk_bytes;

  // Frames and their weights; groups (chunk, slot) weigh the sum of their layers.
  const std::size_t groups = static_cast<std::size_t>(chunks) * static_cast<std::size_t>(live.slots);
  std::vector<std::size_t> frame_weights;
  for (int c = 0; c < chunks; ++c) {
    for (int s = 0; s < live.slots; ++s) {
      std::size_t inside = 0;
      for (int l = 0; l < result.layers_per_chunk[static_cast<std::size_t>(c)]; ++l) {
        const std::size_t bytes = sizes.bytes[static_cast<std::size_t>(c)][static_cast<std::size_t>(l)];
        planned_frame f;
        f.chunk = c;
        f.slot = s;
        f.layer = l;
        f.bytes = bytes;
        f.offset = inside;  // within the group, for now
        inside += bytes;
        result.frames.push_back(f);
        frame_weights.push_back(bytes);
      }
    }
  }
  std::vector<std::size_t> group_weights(groups);
  for (std::size_t g = 0; g < groups; ++g) group_weights[g] = chunk_weight[g / static_cast<std::size_t>(live.slots)];

  const std::size_t n = result.frames.size();
  const conflict_graph frame_graph = frame_conflicts(live, result.frames);

  // Bounds: a clique of groups is a clique of all their frames, so the group graph gives the clique bound.
  // Any valid coloring of the groups bounds every clique from above: the search stops when it meets one.
  const coloring group_coloring = best_coloring(live.saved, group_weights, dsatur(live.saved, group_weights));
  std::vector<std::size_t> group_slots(groups);
  for (std::size_t g = 0; g < groups; ++g) group_slots[g] = g % static_cast<std::size_t>(live.slots);
  std::size_t clique_ceiling = group_coloring.bytes;
  if (detail::is_proper(live.saved, group_slots)) {
    clique_ceiling = std::min(clique_ceiling, make_coloring(group_slots, group_weights).bytes);
  }
  placement given;  // the layout the maps came with, when it holds every frame and no conflicting two overlap
  if (!layout.empty()) {
    given.offsets.resize(n);
    for (std::size_t f = 0; f < n; ++f) {
      const planned_frame& frame = result.frames[f];
      const auto& copies = layout[static_cast<std::size_t>(frame.chunk)];
      // A copy no map uses (another chunk needed more) is never alive: its layers back to back from 0.
      given.offsets[f] = static_cast<std::size_t>(frame.slot) < copies.size()
                             ? copies[static_cast<std::size_t>(frame.slot)][static_cast<std::size_t>(frame.layer)]
                             : frame.offset;
      given.footprint = std::max(given.footprint, given.offsets[f] + frame_weights[f]);
    }
    if (detail::overlaps_a_conflict(frame_graph, frame_weights, given.offsets)) given = placement{};
    if (!given.offsets.empty()) clique_ceiling = std::min(clique_ceiling, given.footprint);
  }
  result.saved.live_bound_bytes = peak_live_bytes(p.schedules, chunk_weight);
  // A given layout at the live bound cannot be beaten, and the groups alive at the peak are a clique as
  // heavy as it: the clique bound is the live bound, with no search, and neither placement nor colors search.
  const bool given_optimal = !given.offsets.empty() && given.footprint <= result.saved.live_bound_bytes;
  const clique heaviest = given_optimal ? clique{{}, result.saved.live_bound_bytes, true}
                                        : max_weight_clique(live.saved, group_weights, effort.clique, clique_ceiling);
  // The groups alive at the peak are a clique: a search stopped early by its effort may have found a lighter one.
  result.saved.lower_bound_bytes = std::max(heaviest.weight, result.saved.live_bound_bytes);
  result.saved.lower_bound_exact = heaviest.exact;
  const coloring baseline = dsatur(frame_graph, frame_weights);
  // A given layout is kept without a search at the live bound, or when the effort allows no placement search.
  const bool keep_given = given_optimal || (!given.offsets.empty() && effort.placement == 0);
  const bool refine = !keep_given && (mode == assignment::coloring || effort.refine_coloring);
  const coloring colors = refine ? best_coloring(frame_graph, frame_weights, baseline) : baseline;
  result.saved.coloring_bytes = baseline.bytes;
  result.saved.coloring_arenas = baseline.arenas();
  for (std::size_t f = 0; f < n; ++f) result.frames[f].color = colors.colors[f];

  if (mode == assignment::coloring) {
    for (std::size_t f = 0; f < n; ++f) {
      result.frames[f].arena = colors.colors[f];
      result.frames[f].offset = 0;
    }
    result.arena_bytes = colors.arena_bytes;
    result.saved.footprint_bytes = colors.bytes;
  } else {
    // Whole groups placed (a group's layers back to back), frames placed one by one (they can pack
    // where whole groups cannot, around an odd cycle of groups), and the frame coloring stacked (so
    // offsets never take more than the coloring): the smallest wins.
    const placement groups_placed =
        keep_given ? placement{std::vector<std::size_t>(groups, 0), given.footprint}
                      : detail::place(live.saved, group_weights, live.alive_events, group_coloring, group_slots,
                                      heaviest.weight, effort.placement);
    std::size_t footprint = groups_placed.footprint;
    for (std::size_t f = 0; f < n; ++f) {
      result.frames[f].offset += groups_placed.offsets[live.group(result.frames[f].chunk, result.frames[f].slot)];
    }
    if (footprint > heaviest.weight && !keep_given) {
      std::vector<std::size_t> frame_lifetimes(n);
      std::vector<std::size_t> frame_slots(n);
      for (std::size_t f = 0; f < n; ++f) {
        frame_lifetimes[f] = live.alive_events[live.group(result.frames[f].chunk, result.frames[f].slot)];
        frame_slots[f] = static_cast<std::size_t>(result.frames[f].slot);
      }
      const placement frames_placed =
          detail::place(frame_graph, frame_weights, frame_lifetimes, colors, frame_slots, heaviest.weight,
                        effort.placement);
      if (frames_placed.footprint < footprint) {
        footprint = frames_placed.footprint;
        for (std::size_t f = 0; f < n; ++f) result.frames[f].offset = frames_placed.offsets[f];
      }
    }
    if (!given.offsets.empty() && (given.footprint < footprint || keep_given)) {
      footprint = given.footprint;
      for (std::size_t f = 0; f < n; ++f) result.frames[f].offset = given.offsets[f];
    }
    result.saved.footprint_bytes = footprint;
    for (planned_frame& f : result.frames) f.arena = 0;
    result.arena_bytes = {result.saved.footprint_bytes};
  }
  result.saved.arenas = result.arena_bytes.size();
  return candidate_plan(std::move(result), std::move(live), p, mode, effort);
}

inline plan& candidate_plan::whole() {
  if (grads_placed_) return plan_;
  grads_placed_ = true;
  const problem& p = *problem_;
  const liveness& live = live_;
  const assignment mode = mode_;
  const search_effort& effort = effort_;
  plan& result = plan_;
  const int chunks = result.chunks;
  // Returned input gradients: one per (chunk, slot) of a chunk with layers; their graph is the
  // grad conflicts among those groups only.
  std::size_t grad_bytes = 0;
  for (const branch_sizes& b : p.branches) grad_bytes = std::max(grad_bytes, align_up(b.grad_per_slot, p.alignment));
  std::vector<std::size_t> grad_groups;
  for (int c = 0; c < chunks; ++c) {
    if (result.layers_per_chunk[static_cast<std::size_t>(c)] == 0) continue;
    for (int s = 0; s < live.slots; ++s) grad_groups.push_back(live.group(c, s));
    for (const branch_sizes& b : p.branches) {
      result.grad.naive_bytes += align_up(b.grad_per_slot, p.alignment) * static_cast<std::size_t>(live.slots);
    }
  }
  const conflict_graph grad_graph = live.grads.subgraph(grad_groups);
  const std::vector<std::size_t> grad_weights(grad_groups.size(), grad_bytes);
  std::vector<std::size_t> grad_lifetimes;
  std::vector<std::size_t> grad_slots;
  for (std::size_t g : grad_groups) {
    grad_lifetimes.push_back(live.alive_events[g]);
    grad_slots.push_back(g % static_cast<std::size_t>(live.slots));
  }
  const clique grad_clique = max_weight_clique(grad_graph, grad_weights, effort.clique);
  result.grad.lower_bound_bytes = grad_clique.weight;
  result.grad.lower_bound_exact = grad_clique.exact;
  result.grad.live_bound_bytes = grad_groups.empty() ? 0 : grad_bytes;
  for (std::size_t g = 0; g < grad_groups.size(); ++g) {
    if (grad_graph.degree(g) > 0) result.grad.live_bound_bytes = 2 * grad_bytes;  // two returned at once
  }
  const coloring grad_baseline = dsatur(grad_graph, grad_weights);
  const coloring grad_colors = best_coloring(grad_graph, grad_weights, grad_baseline);
  result.grad.coloring_bytes = grad_baseline.bytes;
  result.grad.coloring_arenas = grad_baseline.arenas();
  const placement grads_placed =
      mode == assignment::offsets
          ? detail::place(grad_graph, grad_weights, grad_lifetimes, grad_colors, grad_slots, grad_clique.weight,
                          effort.placement)
          : placement{};
  for (std::size_t i = 0; i < grad_groups.size(); ++i) {
    planned_grad grad;
    grad.chunk = static_cast<int>(grad_groups[i] / static_cast<std::size_t>(live.slots));
    grad.slot = static_cast<int>(grad_groups[i] % static_cast<std::size_t>(live.slots));
    grad.bytes = grad_bytes;
    grad.color = grad_colors.colors[i];
    grad.arena = mode == assignment::coloring ? grad.color : 0;
    grad.offset = mode == assignment::coloring ? 0 : grads_placed.offsets[i];
    result.grads.push_back(grad);
  }
  if (mode == assignment::coloring) {
    result.grad_arena_bytes = grad_colors.arena_bytes;
    result.grad.footprint_bytes = grad_colors.bytes;
  } else {
    result.grad_arena_bytes = {grads_placed.footprint};
    result.grad.footprint_bytes = grads_placed.footprint;
  }
  result.grad.arenas = result.grad_arena_bytes.size();
  return result;
}

/// The whole plan of `p` with `maps` (plan_saved, returned gradients placed).
[[nodiscard]] inline plan plan_with_maps(const problem& p, assignment mode, const frame_sizes& sizes,
                                         std::vector<slot_map> maps, int slots, bool modulo,
                                         const search_effort& effort,
                                         const std::vector<std::vector<std::vector<std::size_t>>>& layout = {}) {
  return std::move(plan_saved(p, mode, sizes, std::move(maps), slots, modulo, effort, layout).whole());
}


/// The schedule rule's `chosen` plan, or the same with its copies split by backward parity
/// (gradient_parity.hpp) when that needs fewer gradient bytes, no more saved bytes and at most `budget`
/// copies: the frames keep their offsets (in offsets mode), so the split costs captures only.
[[nodiscard]] inline plan with_gradient_parity(const problem& p, assignment mode, const frame_sizes& sizes, plan chosen,
                                               int budget) {
  if (chosen.grad.footprint_bytes <= chosen.grad.live_bound_bytes) return chosen;
  std::vector<bool> has_layers;
  for (int layers : sizes.layers_per_chunk) has_layers.push_back(layers > 0);
  parity_maps split = split_by_backward_parity(p.schedules, chosen.slot_maps, chosen.slots, has_layers);
  if (split.copies == chosen.slots || split.copies > budget) return chosen;
  std::vector<std::vector<std::vector<std::size_t>>> layout;  // offsets[chunk][copy][layer], as chosen placed them
  if (mode == assignment::offsets) {
    const packed_maps placed = layout_of(chosen);
    layout.resize(has_layers.size());
    for (std::size_t c = 0; c < layout.size(); ++c) {
      for (int source : split.source[c]) {
        layout[c].push_back(c < placed.offsets.size() && static_cast<std::size_t>(source) < placed.offsets[c].size()
                                ? placed.offsets[c][static_cast<std::size_t>(source)]
                                : std::vector<std::size_t>{});
      }
    }
  }
  plan candidate = plan_with_maps(p, mode, sizes, std::move(split.maps), split.copies, false,
                                  mode == assignment::offsets ? given_effort : candidate_effort, layout);
  const bool better = candidate.saved.footprint_bytes <= chosen.saved.footprint_bytes &&
                      candidate.grad.footprint_bytes < chosen.grad.footprint_bytes;
  return better ? candidate : chosen;
}


}  // namespace graphpool::plan::detail
