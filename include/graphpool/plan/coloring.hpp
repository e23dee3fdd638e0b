#pragma once
/// @file coloring.hpp
/// @brief Arena assignment by coloring: frames that conflict get different arenas (colors); an
/// arena is as large as its largest frame. Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include "graphpool/plan/conflict_graph.hpp"

namespace graphpool::plan {

/// @brief A color (arena) per vertex, and what the arenas cost.
struct coloring {
  std::vector<std::size_t> colors;       ///< per vertex
  std::vector<std::size_t> arena_bytes;  ///< per color: its heaviest vertex
  std::size_t bytes = 0;                 ///< sum of arena_bytes

  [[nodiscard]] std::size_t arenas() const noexcept { return arena_bytes.size(); }
};

/// @return `colors` with the arena sizes and total filled in from `weights`.
[[nodiscard]] inline coloring make_coloring(std::vector<std::size_t> colors, const std::vector<std::size_t>& weights) {
  coloring result;
  result.colors = std::move(colors);
  for (std::size_t v = 0; v < result.colors.size(); ++v) {
    const std::size_t c = result.colors[v];
    if (c >= result.arena_bytes.size()) result.arena_bytes.resize(c + 1, 0);
    result.arena_bytes[c] = std::max(result.arena_bytes[c], weights[v]);
  }
  result.bytes = std::accumulate(result.arena_bytes.begin(), result.arena_bytes.end(), std::size_t{0});
  return result;
}

/// @brief Greedy DSATUR (Brélaz): color next the vertex with the most distinct neighbor colors, ties
/// broken by most uncolored neighbors, then lowest index; give it the lowest free color.
/// This is the baseline that Megatron-LM's planner uses; it minimizes the number of arenas, not bytes.
[[nodiscard]] inline coloring dsatur(const conflict_graph& graph, const std::vector<std::size_t>& weights) {
  const std::size_t n = graph.size();
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<std::size_t> colors(n, none);
  // Per vertex, its neighbors' colors as bits: `stride` words each, doubled as colors outgrow them.
  std::size_t stride = 1;
  std::vector<std::uint64_t> neighbor_colors(n * stride, 0);
  std::vector<std::size_t> saturation(n, 0);
  std::vector<std::size_t> uncolored_degree(n);
  for (std::size_t v = 0; v < n; ++v) uncolored_degree[v] = graph.degree(v);
  std::vector<std::uint64_t> uncolored(graph.words(), 0);  // as bits
  for (std::size_t v = 0; v < n; ++v) uncolored[v / 64] |= std::uint64_t{1} << (v % 64);
  // The uncolored vertices by saturation: the next one is in the fullest bucket.
  std::vector<std::vector<std::size_t>> by_saturation(1, std::vector<std::size_t>(n));
  std::vector<std::size_t> position(n);  // in its bucket
  std::iota(by_saturation[0].begin(), by_saturation[0].end(), std::size_t{0});
  std::iota(position.begin(), position.end(), std::size_t{0});
  auto take_out = [&](std::size_t v) {
    std::vector<std::size_t>& bucket = by_saturation[saturation[v]];
    const std::size_t last = bucket.back();
    bucket[position[v]] = last;
    position[last] = position[v];
    bucket.pop_back();
  };
  std::size_t fullest = 0;
  for (std::size_t step = 0; step < n; ++step) {
    while (by_saturation[fullest].empty()) --fullest;
    std::size_t pick = none;
    for (std::size_t v : by_saturation[fullest]) {
      if (pick == none || uncolored_degree[v] > uncolored_degree[pick] ||
          (uncolored_degree[v] == uncolored_degree[pick] && v < pick)) {
        pick = v;
      }
    }
    take_out(pick);
    uncolored[pick / 64] &= ~(std::uint64_t{1} << (pick % 64));
    std::size_t color = stride * 64;  // the lowest color no neighbor has
    for (std::size_t w = 0; w < stride; ++w) {
      const std::uint64_t free = ~neighbor_colors[pick * stride + w];
      if (free != 0) {
        color = w * 64 + static_cast<std::size_t>(__builtin_ctzll(free));
        break;
      }
    }
    colors[pick] = color;
    if (color / 64 >= stride) {  // more colors than the bits hold: twice the words per vertex
      std::vector<std::uint64_t> wider(n * stride * 2, 0);
      for (std::size_t v = 0; v < n; ++v) {
        std::copy_n(neighbor_colors.begin() + static_cast<std::ptrdiff_t>(v * stride), stride,
                    wider.begin() + static_cast<std::ptrdiff_t>(v * stride * 2));
      }
      neighbor_colors = std::move(wider);
      stride *= 2;
    }
    const std::uint64_t bit = std::uint64_t{1} << (color % 64);
    const std::uint64_t* row = graph.row(pick);
    for (std::size_t w = 0; w < uncolored.size(); ++w) {  // the uncolored neighbors
      for (std::uint64_t bits = row[w] & uncolored[w]; bits != 0; bits &= bits - 1) {
        const std::size_t u = w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
        --uncolored_degree[u];
        std::uint64_t& word = neighbor_colors[u * stride + color / 64];
        if ((word & bit) != 0) continue;
        word |= bit;
        take_out(u);
        ++saturation[u];
        if (saturation[u] >= by_saturation.size()) by_saturation.emplace_back();
        position[u] = by_saturation[saturation[u]].size();
        by_saturation[saturation[u]].push_back(u);
        fullest = std::max(fullest, saturation[u]);
      }
    }
  }
  return make_coloring(std::move(colors), weights);
}

/// @brief Colors vertices in `order`, each with the lowest color none of its colored neighbors has.
[[nodiscard]] inline coloring first_fit(const conflict_graph& graph, const std::vector<std::size_t>& weights,
                                        const std::vector<std::size_t>& order) {
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<std::size_t> colors(graph.size(), none);
  // taken_by[c] == v + 1: a neighbor of v has color c (no color exceeds the vertices before it).
  std::vector<std::size_t> taken_by(graph.size() + 1, 0);
  for (std::size_t v : order) {
    graph.for_each_neighbor(v, [&](std::size_t u) {
      if (colors[u] != none) taken_by[colors[u]] = v + 1;
    });
    std::size_t color = 0;
    while (taken_by[color] == v + 1) ++color;
    colors[v] = color;
  }
  return make_coloring(std::move(colors), weights);
}

/// @brief Culberson's iterated greedy: recolor first-fit, taking whole color classes in a new order
/// (heaviest arena first, then the reverse of the current order); the number of colors never grows.
[[nodiscard]] inline coloring iterated_greedy(const conflict_graph& graph, const std::vector<std::size_t>& weights,
                                              coloring start, int rounds) {
  coloring best = start;
  coloring current = std::move(start);
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::size_t> classes(current.arenas());
    std::iota(classes.begin(), classes.end(), std::size_t{0});
    if (round % 2 == 0) {
      std::stable_sort(classes.begin(), classes.end(), [&](std::size_t a, std::size_t b) {
        return current.arena_bytes[a] > current.arena_bytes[b];
      });
    } else {
      std::reverse(classes.begin(), classes.end());
    }
    std::vector<std::size_t> rank(classes.size());
    for (std::size_t i = 0; i < classes.size(); ++i) rank[classes[i]] = i;
    std::vector<std::size_t> order(graph.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (rank[current.colors[a]] != rank[current.colors[b]]) return rank[current.colors[a]] < rank[current.colors[b]];
      return weights[a] > weights[b];
    });
    current = first_fit(graph, weights, order);
    if (current.bytes < best.bytes || (current.bytes == best.bytes && current.arenas() < best.arenas())) best = current;
  }
  return best;
}

/// @brief The coloring of fewest bytes found among DSATUR, first-fit by weight and iterated greedy
/// from each, never with more arenas than DSATUR.
[[nodiscard]] inline coloring best_coloring(const conflict_graph& graph, const std::vector<std::size_t>& weights,
                                            const coloring& baseline) {
  std::vector<std::size_t> by_weight(graph.size());
  std::iota(by_weight.begin(), by_weight.end(), std::size_t{0});
  std::stable_sort(by_weight.begin(), by_weight.end(), [&](std::size_t a, std::size_t b) {
    if (weights[a] != weights[b]) return weights[a] > weights[b];
    return graph.degree(a) > graph.degree(b);
  });
  coloring best = baseline;
  for (coloring candidate : {iterated_greedy(graph, weights, baseline, 8),
                             iterated_greedy(graph, weights, first_fit(graph, weights, by_weight), 8)}) {
    if (candidate.arenas() > baseline.arenas()) continue;
    if (candidate.bytes < best.bytes || (candidate.bytes == best.bytes && candidate.arenas() < best.arenas())) {
      best = std::move(candidate);
    }
  }
  return best;
}

}  // namespace graphpool::plan
