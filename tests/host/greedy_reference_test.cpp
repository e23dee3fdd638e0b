// The planner's greedy colorings and placements (DSATUR, first fit, placement in order) and the frames'
// graph expanded from their groups' against their definitions worked out the slow way: the fast versions
// keep bit sets and a list of placed vertices by offset, and must give exactly what the definitions give,
// on graphs of more than 64 vertices and colors (several words of bits) as well as small ones.

#include <algorithm>
#include <cstddef>
#include <random>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "graphpool/plan/coloring.hpp"
#include "graphpool/plan/placement.hpp"

using namespace graphpool::plan;

namespace {

constexpr std::size_t none = static_cast<std::size_t>(-1);

// The lowest color no colored neighbor of `v` has.
std::size_t lowest_free(const conflict_graph& graph, const std::vector<std::size_t>& colors, std::size_t v) {
  for (std::size_t color = 0;; ++color) {
    bool taken = false;
    for (std::size_t u = 0; u < graph.size() && !taken; ++u) taken = graph.conflicts(v, u) && colors[u] == color;
    if (!taken) return color;
  }
}

// DSATUR by its definition: most distinct neighbor colors, then most uncolored neighbors, then lowest index.
std::vector<std::size_t> reference_dsatur(const conflict_graph& graph) {
  std::vector<std::size_t> colors(graph.size(), none);
  for (std::size_t step = 0; step < graph.size(); ++step) {
    std::size_t pick = none;
    std::size_t pick_saturation = 0;
    std::size_t pick_uncolored = 0;
    for (std::size_t v = 0; v < graph.size(); ++v) {
      if (colors[v] != none) continue;
      std::vector<std::size_t> seen;
      std::size_t uncolored = 0;
      for (std::size_t u = 0; u < graph.size(); ++u) {
        if (!graph.conflicts(v, u)) continue;
        if (colors[u] == none) ++uncolored;
        else if (std::find(seen.begin(), seen.end(), colors[u]) == seen.end()) seen.push_back(colors[u]);
      }
      if (pick == none || seen.size() > pick_saturation || (seen.size() == pick_saturation && uncolored > pick_uncolored)) {
        pick = v;
        pick_saturation = seen.size();
        pick_uncolored = uncolored;
      }
    }
    colors[pick] = lowest_free(graph, colors, pick);
  }
  return colors;
}

// Placement in order by its definition: the placed neighbors' byte ranges sorted, the first (or the
// smallest) gap between them that holds the vertex, else the top of the highest.
std::vector<std::size_t> reference_place(const conflict_graph& graph, const std::vector<std::size_t>& weights,
                                         const std::vector<std::size_t>& order, fit rule) {
  std::vector<std::size_t> offsets(graph.size(), 0);
  std::vector<bool> placed(graph.size(), false);
  for (std::size_t v : order) {
    std::vector<std::pair<std::size_t, std::size_t>> taken;
    for (std::size_t u = 0; u < graph.size(); ++u) {
      if (placed[u] && weights[u] > 0 && graph.conflicts(v, u)) taken.emplace_back(offsets[u], offsets[u] + weights[u]);
    }
    std::sort(taken.begin(), taken.end());
    std::size_t cursor = 0;
    std::size_t chosen = none;
    std::size_t chosen_gap = none;
    for (const auto& [start, end] : taken) {
      if (weights[v] > 0 && start >= cursor + weights[v] && (chosen == none || (rule == fit::best && start - cursor < chosen_gap))) {
        chosen = cursor;
        chosen_gap = start - cursor;
        if (rule == fit::first) break;
      }
      cursor = std::max(cursor, end);
    }
    offsets[v] = chosen != none ? chosen : weights[v] == 0 ? 0 : cursor;
    placed[v] = true;
  }
  return offsets;
}

// `n` vertices, each pair conflicting with probability `density` in 16ths.
conflict_graph random_graph(std::mt19937& random, std::size_t n, unsigned density) {
  conflict_graph graph(n);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a + 1; b < n; ++b) {
      if (random() % 16 < density) graph.add_conflict(a, b);
    }
  }
  return graph;
}

}  // namespace

TEST_CASE("DSATUR, first fit and placement in order choose exactly what their definitions choose",
          "[plan][coloring]") {
  std::mt19937 random(11);
  std::size_t most_colors = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const std::size_t n = trial < 40 ? 1 + random() % 40 : 100 + random() % 120;
    const conflict_graph graph = random_graph(random, n, 2 + static_cast<unsigned>(trial % 14));
    std::vector<std::size_t> weights(n);
    for (std::size_t& w : weights) w = random() % 4 == 0 ? 0 : 1 + random() % 50;
    INFO("trial " << trial << ", " << n << " vertices");

    const coloring fast = dsatur(graph, weights);
    CHECK(fast.colors == reference_dsatur(graph));
    most_colors = std::max(most_colors, fast.arenas());

    std::vector<std::size_t> order(n);
    for (std::size_t v = 0; v < n; ++v) order[v] = v;
    std::shuffle(order.begin(), order.end(), random);
    std::vector<std::size_t> greedy(n, none);
    for (std::size_t v : order) greedy[v] = lowest_free(graph, greedy, v);
    CHECK(first_fit(graph, weights, order).colors == greedy);

    for (fit rule : {fit::first, fit::best}) {
      const placement placed = place_in_order(graph, weights, order, rule);
      const std::vector<std::size_t> expected = reference_place(graph, weights, order, rule);
      CHECK(placed.offsets == expected);
      std::size_t top = 0;
      for (std::size_t v = 0; v < n; ++v) top = std::max(top, expected[v] + weights[v]);
      CHECK(placed.footprint == top);
    }
  }
  CHECK(most_colors > 64);  // the color sets spanned more than one word of bits
}

TEST_CASE("a graph expanded from its groups' conflicts: two vertices conflict when their groups are one or conflict",
          "[plan][coloring]") {
  std::mt19937 random(5);
  for (int trial = 0; trial < 20; ++trial) {
    const std::size_t groups = 1 + random() % 90;
    const conflict_graph graph = random_graph(random, groups, 1 + static_cast<unsigned>(trial % 15));
    std::vector<std::size_t> group_of(random() % 200);
    for (std::size_t& g : group_of) g = random() % groups;
    const conflict_graph expanded = graph.expanded(group_of);
    REQUIRE(expanded.size() == group_of.size());
    for (std::size_t a = 0; a < group_of.size(); ++a) {
      for (std::size_t b = 0; b < group_of.size(); ++b) {
        const bool expected = a != b && (group_of[a] == group_of[b] || graph.conflicts(group_of[a], group_of[b]));
        if (expanded.conflicts(a, b) != expected) FAIL("trial " << trial << ": vertices " << a << " and " << b);
      }
    }
  }
}
