#pragma once
/// @file frame_placement.hpp
/// @brief Offsets for the vertices of a conflict graph (frames, or (chunk, slot) groups) as the planner
/// searches them: seed orders, a placement search of bounded effort, the coloring stacked as a fallback;
/// and the conflict graph of a plan's frames. Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <utility>
#include <vector>

#include "graphpool/plan/coloring.hpp"
#include "graphpool/plan/conflict_graph.hpp"
#include "graphpool/plan/liveness.hpp"
#include "graphpool/plan/placement.hpp"
#include "graphpool/plan/problem.hpp"

namespace graphpool::plan {

namespace detail {

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
  std::vector<std::size_t> group_of(frames.size());
  for (std::size_t f = 0; f < frames.size(); ++f) group_of[f] = live.group(frames[f].chunk, frames[f].slot);
  return live.saved.expanded(group_of);
}

}  // namespace graphpool::plan
