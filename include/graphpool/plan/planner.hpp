#pragma once
/// @file planner.hpp
/// @brief The planner: frames of a pipeline model, their sizes per branch, and where each goes.
///
/// Input: schedules (every one that will be replayed), layers per chunk, and bytes per branch.
/// Output: a plan — every frame's arena and offset, every arena's size, and the figures to judge
/// it by (naive sum, coloring baseline, clique and live lower bounds). Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/detail/format.hpp"
#include "graphpool/alignment.hpp"
#include "graphpool/error.hpp"
#include "graphpool/plan/coloring.hpp"
#include "graphpool/plan/conflict_graph.hpp"
#include "graphpool/plan/gradient_parity.hpp"
#include "graphpool/plan/liveness.hpp"
#include "graphpool/plan/placement.hpp"
#include "graphpool/plan/schedule.hpp"
#include "graphpool/plan/packed_maps.hpp"
#include "graphpool/plan/region_maps.hpp"
#include "graphpool/plan/slot_map.hpp"

namespace graphpool::plan {

/// @brief One branch (variant) and what each of its frames needs.
struct branch_sizes {
  std::string name;
  std::size_t saved_per_layer = 0;  ///< bytes a layer saves for its backward (and its outputs)
  std::size_t grad_per_slot = 0;    ///< bytes of the input gradients a (chunk, slot) backward returns
};

/// @brief Saved bytes of one (chunk, layer) in one branch, instead of the branch's per-layer figure.
struct saved_bytes_override {
  int chunk = 0;
  int layer = 0;
  std::string branch;
  std::size_t saved = 0;
};

/// @brief The most bytes one frame (or returned gradient) may need: 1 TiB.
inline constexpr std::size_t max_frame_bytes = std::size_t{1} << 40;

/// @brief How frames are given memory.
enum class assignment {
  coloring,  ///< an arena per color: conflicting frames get different arenas, each sized by its largest frame
  offsets,   ///< one pool: every frame an offset; conflicting frames never overlap in bytes
};

/// @brief problem::max_copies when none is given: at most twice the copies m mod S uses.
inline constexpr int twice_modulo_copies = -1;

/// @brief Everything the planner needs.
struct problem {
  std::vector<schedule> schedules;             ///< every schedule that will be replayed (same chunks)
  std::vector<int> layers_per_chunk;           ///< one entry (every chunk) or one per chunk; 0 = no frames
  std::vector<branch_sizes> branches;          ///< at least one
  std::vector<saved_bytes_override> overrides;
  int slots = 0;                 ///< physical slots of the mod rule; 0 = the peak over the schedules
  slot_rule rule = slot_rule::mod;  ///< how microbatches are bound to captured copies (slots)
  /// Schedule rule: at most this many copies per chunk (0 = no limit). The default allows twice the
  /// copies of m mod S and never gives a footprint above the m mod S plan's.
  int max_copies = twice_modulo_copies;
  std::size_t alignment = 256;   ///< every frame's bytes are rounded up to this (a power of two)
};

/// @brief A frame and its memory; indices are 0-based.
struct planned_frame {
  int chunk = 0;
  int slot = 0;
  int layer = 0;
  std::size_t arena = 0;   ///< coloring: its arena; offsets: 0 (the one pool)
  std::size_t offset = 0;  ///< within the arena
  std::size_t bytes = 0;   ///< the max over branches, rounded up to the alignment
  std::size_t color = 0;   ///< its arena in the coloring (what TransformerEngine's saved_arena takes)
};

/// @brief The input gradients one (chunk, slot) backward returns, and their memory.
struct planned_grad {
  int chunk = 0;
  int slot = 0;
  std::size_t arena = 0;
  std::size_t offset = 0;
  std::size_t bytes = 0;
  std::size_t color = 0;
};

/// @brief The figures a plan is judged by.
struct plan_figures {
  std::size_t footprint_bytes = 0;    ///< what the plan takes
  std::size_t lower_bound_bytes = 0;  ///< heaviest set of pairwise conflicting frames: no placement is smaller
  bool lower_bound_exact = false;     ///< the clique search finished (otherwise a valid, weaker bound)
  std::size_t live_bound_bytes = 0;   ///< most bytes alive at once, ignoring the m mod S slot rule
  std::size_t naive_bytes = 0;        ///< a pool per branch: every branch's frames, summed
  std::size_t coloring_bytes = 0;     ///< greedy DSATUR's arenas, summed (the baseline)
  std::size_t coloring_arenas = 0;    ///< how many arenas DSATUR uses
  std::size_t arenas = 0;             ///< how many arenas the plan uses

  /// @return footprint / lower bound (1 when both are 0).
  [[nodiscard]] double ratio() const noexcept {
    return lower_bound_bytes == 0 ? 1.0 : static_cast<double>(footprint_bytes) / static_cast<double>(lower_bound_bytes);
  }
};

/// @brief The planner's answer.
struct plan {
  assignment mode = assignment::offsets;
  slot_rule rule = slot_rule::mod;  ///< the rule asked for (its maps may still be m mod S when those are best)
  int chunks = 0;
  int slots = 0;  ///< captured copies per chunk; frames[].slot and slot_maps index them
  int microbatches = 0;  ///< the most microbatches of any schedule given
  std::vector<int> layers_per_chunk;
  std::vector<std::string> branches;
  std::vector<planned_frame> frames;  ///< chunk-major, then slot, then layer
  std::vector<slot_map> slot_maps;    ///< one per schedule given, in order
  std::vector<std::size_t> arena_bytes;
  plan_figures saved;
  std::vector<planned_grad> grads;  ///< chunk-major, then slot; chunks without layers have none
  std::vector<std::size_t> grad_arena_bytes;
  plan_figures grad;
};

namespace detail {

inline void validate(const problem& p, int chunks) {
  if (p.branches.empty()) throw error("planner: no branch given; give at least one (name and saved bytes per layer)");
  if (!is_valid_alignment(p.alignment)) {
    throw error("planner: alignment " + std::to_string(p.alignment) + " is not a power of two");
  }
  if (p.layers_per_chunk.size() != 1 && p.layers_per_chunk.size() != static_cast<std::size_t>(chunks)) {
    throw error("planner: " + std::to_string(p.layers_per_chunk.size()) + " layer counts given for " +
                std::to_string(chunks) + " chunk(s); give one for every chunk, or one for all");
  }
  for (std::size_t c = 0; c < p.layers_per_chunk.size(); ++c) {
    if (p.layers_per_chunk[c] < 0) {
      throw error("planner: chunk " + std::to_string(c) + " has " + std::to_string(p.layers_per_chunk[c]) +
                  " layers; a layer count cannot be negative");
    }
  }
  // Sizes stay far from overflow: sums over every frame of every branch fit in 64 bits.
  auto check_size = [](std::size_t bytes, const std::string& what) {
    if (bytes > max_frame_bytes) {
      throw error("planner: " + what + " of " + std::to_string(bytes) + " bytes is more than the " +
                  std::to_string(max_frame_bytes) + " (1 TiB) one frame may hold");
    }
  };
  for (const saved_bytes_override& o : p.overrides) check_size(o.saved, "override for branch '" + o.branch + "'");
  check_size(p.alignment, "alignment");
  for (std::size_t b = 0; b < p.branches.size(); ++b) {
    check_size(p.branches[b].saved_per_layer, "branch '" + p.branches[b].name + "' saved bytes");
    check_size(p.branches[b].grad_per_slot, "branch '" + p.branches[b].name + "' gradient bytes");
    if (p.branches[b].name.empty()) throw error("planner: branch " + std::to_string(b) + " has no name");
    for (std::size_t o = 0; o < b; ++o) {
      if (p.branches[o].name == p.branches[b].name) {
        throw error("planner: two branches are named '" + p.branches[b].name + "'; branch names must differ");
      }
    }
  }
}

/// Orders the squeaky-wheel search starts from: by size, by conflicting weight, by lifetime, by
/// area (size x lifetime), by color class, by slot (a slot map's regions, lowest first), and the
/// natural order.
[[nodiscard]] inline std::vector<std::vector<std::size_t>> seed_orders(const conflict_graph& graph,
                                                                       const std::vector<std::size_t>& weights,
                                                                       const std::vector<std::size_t>& lifetimes,
                                                                       const coloring& colors,
                                                                       const std::vector<std::size_t>& slots) {
  const std::size_t n = graph.size();
  std::vector<std::size_t> natural(n);
  std::iota(natural.begin(), natural.end(), std::size_t{0});
  std::vector<std::size_t> neighbor_weight(n, 0);
  for (std::size_t v = 0; v < n; ++v) {
    neighbor_weight[v] = weights[v];
    graph.for_each_neighbor(v, [&](std::size_t u) { neighbor_weight[v] += weights[u]; });
  }
  auto sorted = [&](auto key) {
    std::vector<std::size_t> order = natural;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) > key(b); });
    return order;
  };
  using key_pair = std::pair<std::size_t, std::size_t>;
  return {
      sorted([&](std::size_t v) { return key_pair{weights[v], neighbor_weight[v]}; }),
      sorted([&](std::size_t v) { return key_pair{neighbor_weight[v], weights[v]}; }),
      sorted([&](std::size_t v) { return key_pair{lifetimes[v], weights[v]}; }),
      sorted([&](std::size_t v) { return key_pair{weights[v] * (lifetimes[v] + 1), weights[v]}; }),
      sorted([&](std::size_t v) { return key_pair{n - colors.colors[v], weights[v]}; }),
      sorted([&](std::size_t v) { return key_pair{n - slots[v], weights[v]}; }),
      natural,
  };
}

/// True when no two conflicting vertices of `graph` share a color in `colors`.
[[nodiscard]] inline bool is_proper(const conflict_graph& graph, const std::vector<std::size_t>& colors) {
  for (std::size_t v = 0; v < graph.size(); ++v) {
    bool clash = false;
    graph.for_each_neighbor(v, [&](std::size_t u) { clash = clash || colors[u] == colors[v]; });
    if (clash) return false;
  }
  return true;
}

/// True when two conflicting vertices of `graph` share bytes at `offsets`.
[[nodiscard]] inline bool overlaps_a_conflict(const conflict_graph& graph, const std::vector<std::size_t>& weights,
                                              const std::vector<std::size_t>& offsets) {
  for (std::size_t v = 0; v < graph.size(); ++v) {
    bool overlap = false;
    graph.for_each_neighbor(v, [&](std::size_t u) {
      overlap = overlap || (weights[u] > 0 && weights[v] > 0 && offsets[u] < offsets[v] + weights[v] &&
                            offsets[v] < offsets[u] + weights[u]);
    });
    if (overlap) return true;
  }
  return false;
}

/// Where each arena starts when the arenas are laid end to end.
[[nodiscard]] inline std::vector<std::size_t> stacked_offsets(const std::vector<std::size_t>& arena_bytes) {
  std::vector<std::size_t> offsets(arena_bytes.size(), 0);
  for (std::size_t a = 1; a < offsets.size(); ++a) offsets[a] = offsets[a - 1] + arena_bytes[a - 1];
  return offsets;
}

/// How much work one plan's searches may do: counted in steps, not seconds, so a plan is the same on
/// every machine and its time is bounded.
struct search_effort {
  std::size_t clique = default_clique_effort;  ///< candidate pairs the clique search may test
  std::size_t placement = 8'000'000;           ///< neighbor visits one placement search may make
  bool refine_coloring = true;  ///< offsets mode: iterated greedy on the frame coloring (a seed and a fallback)
};

/// The effort for plans that must be the best the planner finds (the m mod S plan, which every other
/// candidate of the schedule rule is measured against).
inline constexpr search_effort full_effort{};

/// The effort for the schedule rule's other candidates: their layouts come with their maps, the live
/// bound is a lower bound already, and there are several of them.
inline constexpr search_effort candidate_effort{1'000'000, 1'000'000, false};

/// The effort for a plan whose layout is given and already searched (the same frames at the same bytes,
/// on more copies): the clique and the placement each take one greedy pass.
inline constexpr search_effort given_effort{0, 0, false};

/// Offsets for `weights` over `graph`: the best seeded search, or the coloring's arenas stacked,
/// whichever is smaller (so offsets never lose to the coloring).
[[nodiscard]] inline placement place(const conflict_graph& graph, const std::vector<std::size_t>& weights,
                                     const std::vector<std::size_t>& lifetimes, const coloring& colors,
                                     const std::vector<std::size_t>& slots, std::size_t lower_bound,
                                     std::size_t effort) {
  if (graph.size() == 0) return placement{};
  // Each search step re-places every vertex against its placed neighbors: fewer steps on larger,
  // denser graphs (a fixed budget of neighbor visits keeps the plan deterministic and quick).
  std::size_t visits_per_step = graph.size();
  for (std::size_t v = 0; v < graph.size(); ++v) visits_per_step += graph.degree(v);
  // Each seed order is placed twice (first and best fit); the steps left after the seeds go to the search.
  const std::size_t steps = std::max<std::size_t>(effort / visits_per_step, 2);
  std::vector<std::vector<std::size_t>> orders = seed_orders(graph, weights, lifetimes, colors, slots);
  orders.resize(std::min(orders.size(), steps / 2));
  placement_search search;
  search.iterations = std::min<std::size_t>(steps - 2 * orders.size(), 600);
  placement searched = best_placement(graph, weights, orders, lower_bound, search);
  if (searched.footprint <= colors.bytes) return searched;
  placement stacked;
  const std::vector<std::size_t> arena_offset = stacked_offsets(colors.arena_bytes);
  stacked.offsets.resize(graph.size());
  for (std::size_t v = 0; v < graph.size(); ++v) stacked.offsets[v] = arena_offset[colors.colors[v]];
  stacked.footprint = colors.bytes;
  return stacked;
}

}  // namespace detail

/// @return the conflicts between `frames` (vertex i is frames[i]): frames of one (chunk, slot) always
/// conflict; frames of two (chunk, slot) groups when `live` says the groups do.
[[nodiscard]] inline conflict_graph frame_conflicts(const liveness& live, const std::vector<planned_frame>& frames) {
  conflict_graph graph(frames.size());
  for (std::size_t a = 0; a < frames.size(); ++a) {
    const std::size_t ga = live.group(frames[a].chunk, frames[a].slot);
    for (std::size_t b = a + 1; b < frames.size(); ++b) {
      const std::size_t gb = live.group(frames[b].chunk, frames[b].slot);
      if (ga == gb || live.saved.conflicts(ga, gb)) graph.add_conflict(a, b);
    }
  }
  return graph;
}

namespace detail {

/// Every frame's bytes (the max over its branches, rounded up to the alignment) per (chunk, layer).
struct frame_sizes {
  std::vector<int> layers_per_chunk;
  std::vector<std::string> branches;
  std::vector<std::vector<std::size_t>> bytes;  ///< [chunk][layer]
  std::vector<std::size_t> chunk_bytes;         ///< a (chunk, slot) group: the sum over its layers
  std::size_t naive_per_slot = 0;               ///< every branch's own bytes of one slot of every chunk
};

[[nodiscard]] inline frame_sizes size_frames(const problem& p, int chunks) {
  frame_sizes sizes;
  for (int c = 0; c < chunks; ++c) {
    sizes.layers_per_chunk.push_back(p.layers_per_chunk.size() == 1 ? p.layers_per_chunk[0]
                                                                    : p.layers_per_chunk[static_cast<std::size_t>(c)]);
  }
  for (const branch_sizes& b : p.branches) sizes.branches.push_back(b.name);
  // Saved bytes per (chunk, layer, branch).
  std::vector<std::vector<std::vector<std::size_t>>> saved(static_cast<std::size_t>(chunks));
  for (int c = 0; c < chunks; ++c) {
    for (int l = 0; l < sizes.layers_per_chunk[static_cast<std::size_t>(c)]; ++l) {
      std::vector<std::size_t> per_branch;
      for (const branch_sizes& b : p.branches) per_branch.push_back(b.saved_per_layer);
      saved[static_cast<std::size_t>(c)].push_back(per_branch);
    }
  }
  for (const saved_bytes_override& o : p.overrides) {
    if (o.chunk < 0 || o.chunk >= chunks) {
      throw error("planner: override for chunk " + std::to_string(o.chunk) + ": the schedules have " +
                  std::to_string(chunks) + " chunk(s) (0-based)");
    }
    const int layers = sizes.layers_per_chunk[static_cast<std::size_t>(o.chunk)];
    if (o.layer < 0 || o.layer >= layers) {
      throw error("planner: override for chunk " + std::to_string(o.chunk) + " layer " + std::to_string(o.layer) +
                  ": the chunk has " + std::to_string(layers) + " layer(s) (0-based)");
    }
    const auto found = std::find(sizes.branches.begin(), sizes.branches.end(), o.branch);
    if (found == sizes.branches.end()) {
      throw error("planner: override for chunk " + std::to_string(o.chunk) + " layer " + std::to_string(o.layer) +
                  " names branch '" + o.branch + "', which is not declared");
    }
    saved[static_cast<std::size_t>(o.chunk)][static_cast<std::size_t>(o.layer)]
         [static_cast<std::size_t>(found - sizes.branches.begin())] = o.saved;
  }
  for (int c = 0; c < chunks; ++c) {
    std::vector<std::size_t>& row = sizes.bytes.emplace_back();
    for (const std::vector<std::size_t>& per_branch : saved[static_cast<std::size_t>(c)]) {
      row.push_back(align_up(*std::max_element(per_branch.begin(), per_branch.end()), p.alignment));
      for (std::size_t bytes : per_branch) sizes.naive_per_slot += align_up(bytes, p.alignment);
    }
    sizes.chunk_bytes.push_back(std::accumulate(row.begin(), row.end(), std::size_t{0}));
  }
  return sizes;
}

/// The plan of `p` once microbatches are bound to `slots` copies per chunk by `maps`; `layout`
/// (offsets[chunk][copy][layer], may be empty) is a placement the maps were built with, kept in
/// offsets mode when it is valid and smaller than what the placement search finds.
[[nodiscard]] inline plan plan_with_maps(const problem& p, assignment mode, const frame_sizes& sizes,
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
  const liveness live = analyze(p.schedules, maps, slots, modulo);

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
  result.saved.lower_bound_bytes = heaviest.weight;
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

}  // namespace detail

namespace detail {

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
    layout.resize(has_layers.size());
    for (std::size_t c = 0; c < layout.size(); ++c) {
      for (int source : split.source[c]) {
        std::vector<std::size_t>& copy = layout[c].emplace_back();
        for (const planned_frame& f : chosen.frames) {
          if (f.chunk == static_cast<int>(c) && f.slot == source) copy.push_back(f.offset);
        }
      }
    }
  }
  plan candidate = plan_with_maps(p, mode, sizes, std::move(split.maps), split.copies, false,
                                  mode == assignment::offsets ? given_effort : candidate_effort, layout);
  const bool better = candidate.saved.footprint_bytes <= chosen.saved.footprint_bytes &&
                      candidate.grad.footprint_bytes < chosen.grad.footprint_bytes;
  return better ? candidate : chosen;
}

}  // namespace detail

/// @brief The layouts make_plan tries for the schedule rule, in order, until one reaches the live bound:
/// by forward time with layers apart (equal frames reach the live bound), then offline orders with
/// whole chunks best-fit, each refined by a squeaky-wheel search, then frames under a height, backing up
/// where one does not fit (unequal frames: it finds packings no greedy order reaches).
inline constexpr packing layout_packings[] = {
    {packing_order::start, true, false, 0},   {packing_order::size, false, true, 40},
    {packing_order::area, false, true, 40},   {packing_order::lifetime, false, false, 40},
    {packing_order::size, true, true, 40},    {packing_order::start, false, true, 40},
    {packing_order::bounded, true, true, 0, 4'000'000},
};

/// @brief Plans the frames of `p` with `mode`.
///
/// With the mod rule, microbatch m replays slot m mod S. With the schedule rule, m mod S and maps
/// chosen from the schedules (regions by start time, lowest or best-fitting, or copies laid out byte
/// by byte as the schedules replay) are planned, and the
/// smallest footprint within the copies budget wins (then the fewest copies); the search stops at the
/// live bound, which no map can beat.
/// @throws graphpool::error for bad input (naming the schedule, entry, chunk, layer or branch), and
/// "slot period is shorter than the schedule's liveness" when `p.slots` is too small.
[[nodiscard]] inline plan make_plan(const problem& p, assignment mode) {
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
  const int period = count_slots(p.schedules);
  if (p.max_copies < 0 && p.max_copies != twice_modulo_copies) {
    throw error("planner: max_copies " + std::to_string(p.max_copies) + " cannot be negative; give 0 for no limit");
  }
  if (p.max_copies > 0 && p.max_copies < period) {
    throw error("planner: max_copies " + std::to_string(p.max_copies) + " is below the " + std::to_string(period) +
                " microbatches one chunk holds at once; allow at least " + std::to_string(period) +
                " copies (0 = no limit)");
  }
  int budget = p.max_copies == twice_modulo_copies ? 2 * period : p.max_copies;
  if (budget == 0) {
    budget = 1;
    for (const schedule& s : p.schedules) budget = std::max(budget, s.microbatches() * chunks);
  }
  // Saved bytes first (so never above m mod S's), then returned-gradient bytes, then the fewest copies.
  auto better = [](const plan& a, const plan& b) {
    if (a.saved.footprint_bytes != b.saved.footprint_bytes) return a.saved.footprint_bytes < b.saved.footprint_bytes;
    if (a.grad.footprint_bytes != b.grad.footprint_bytes) return a.grad.footprint_bytes < b.grad.footprint_bytes;
    return a.slots < b.slots;
  };
  auto modulo = [&] {
    return detail::plan_with_maps(p, mode, sizes, modulo_maps(p.schedules, period), period, false, detail::full_effort);
  };
  // Maps laid out as dynamic storage allocation on the schedules' intervals, several ways; the
  // smallest layout (then the fewest copies) is planned. At the live bound no map can do better.
  const std::size_t live_bound = peak_live_bytes(p.schedules, sizes.chunk_bytes);
  packed_maps packed;
  packed.valid = false;
  // Equal frames: the packing by forward time fits the most alive at once with the fewest copies; the
  // height-bounded search cannot do better and opens more copies.
  std::size_t largest = 0;
  for (const std::vector<std::size_t>& layers : sizes.bytes) {
    for (std::size_t bytes : layers) largest = std::max(largest, bytes);
  }
  bool equal_frames = true;
  for (const std::vector<std::size_t>& layers : sizes.bytes) {
    for (std::size_t bytes : layers) equal_frames = equal_frames && (bytes == 0 || bytes == largest);
  }
  for (const packing& how : layout_packings) {
    if (how.order == packing_order::bounded && equal_frames) continue;
    packed_maps candidate = pack_maps(p.schedules, sizes.bytes, budget, how);
    if (candidate.valid && (!packed.valid || candidate.footprint < packed.footprint ||
                            (candidate.footprint == packed.footprint && copies_used(candidate.maps) < copies_used(packed.maps)))) {
      packed = std::move(candidate);
    }
    if (packed.valid && packed.footprint <= live_bound) break;
  }
  if (packed.valid && packed.footprint <= live_bound) {
    const int copies = copies_used(packed.maps);
    plan best = detail::plan_with_maps(p, mode, sizes, std::move(packed.maps), copies, false, detail::candidate_effort,
                                       packed.offsets);
    if (best.grad.footprint_bytes <= best.grad.live_bound_bytes) return best;
    // Gradients above their bound: the copies split by backward parity, or m mod S where it holds as few
    // saved bytes (with fewer copies).
    for (plan candidate : {detail::with_gradient_parity(p, mode, sizes, best, budget), modulo()}) {
      if (better(candidate, best)) best = std::move(candidate);
    }
    return best;
  }
  // Above the live bound: m mod S (the fewest copies, and the footprint every map must beat, searched as
  // hard as the mod rule's plan so never above it), regions by start time, and the layout, each through
  // a placement search of bounded effort; the smallest wins.
  plan best = modulo();
  for (region_choice choice : {region_choice::lowest, region_choice::best_fit}) {
    if (best.saved.footprint_bytes <= best.saved.live_bound_bytes) break;
    std::vector<slot_map> maps = schedule_maps(p.schedules, sizes.chunk_bytes, budget, choice);
    const int copies = copies_used(maps);
    plan candidate = detail::plan_with_maps(p, mode, sizes, std::move(maps), copies, false, detail::candidate_effort);
    if (better(candidate, best)) best = std::move(candidate);
  }
  if (packed.valid && best.saved.footprint_bytes > best.saved.live_bound_bytes) {
    const int copies = copies_used(packed.maps);
    plan candidate = detail::plan_with_maps(p, mode, sizes, std::move(packed.maps), copies, false,
                                            detail::candidate_effort, packed.offsets);
    if (better(candidate, best)) best = std::move(candidate);
  }
  plan split = detail::with_gradient_parity(p, mode, sizes, best, budget);
  return better(split, best) ? split : best;
}

/// @return the microbatch counts `p` has slot maps for, as "8, 4" ("none" without a map), for messages.
[[nodiscard]] inline std::string planned_microbatches(const plan& p) {
  std::string planned;
  for (const slot_map& map : p.slot_maps) planned += (planned.empty() ? "" : ", ") + std::to_string(map.microbatches);
  return planned.empty() ? std::string("none") : planned;
}

/// @return the slot map of `p` for a schedule of `microbatches` microbatches (the first one planned).
/// @throws graphpool::error naming the counts the plan was made for when none matches.
[[nodiscard]] inline const slot_map& find_slot_map(const plan& p, int microbatches) {
  for (const slot_map& map : p.slot_maps) {
    if (map.microbatches == microbatches) return map;
  }
  throw error("no slot map for a schedule of " + std::to_string(microbatches) +
              " microbatch(es): the plan was made for " + planned_microbatches(p) +
              "; plan with every schedule you replay");
}

}  // namespace graphpool::plan
