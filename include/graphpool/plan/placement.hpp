#pragma once
/// @file placement.hpp
/// @brief Offset assignment: every vertex gets a byte offset in one pool, and no two conflicting
/// vertices overlap. Several cheap orders are tried and the smallest kept, then a squeaky-wheel
/// search moves the vertices that set the footprint earlier. Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "graphpool/plan/conflict_graph.hpp"

namespace graphpool::plan {

/// @brief Offsets per vertex and the pool size they need.
struct placement {
  std::vector<std::size_t> offsets;
  std::size_t footprint = 0;
};

/// @brief Where a vertex goes among the gaps its placed neighbors leave.
enum class fit {
  first,  ///< the lowest gap that holds it
  best,   ///< the smallest gap that holds it (the top of the pool when none does)
};

/// @brief Places vertices one by one in `order`, each in a gap between its already placed neighbors.
[[nodiscard]] inline placement place_in_order(const conflict_graph& graph, const std::vector<std::size_t>& weights,
                                              const std::vector<std::size_t>& order, fit rule) {
  placement result;
  result.offsets.assign(graph.size(), 0);
  // The placed vertices of any bytes by [offset, end): a vertex's placed neighbors are those of them it
  // conflicts with, already in order.
  std::vector<std::size_t> by_offset;
  auto lower = [&](std::size_t u, const std::pair<std::size_t, std::size_t>& at) {
    return std::make_pair(result.offsets[u], result.offsets[u] + weights[u]) < at;
  };
  for (std::size_t v : order) {
    const std::size_t need = weights[v];
    std::size_t cursor = 0;
    std::size_t chosen = static_cast<std::size_t>(-1);
    std::size_t chosen_gap = static_cast<std::size_t>(-1);
    for (std::size_t u : by_offset) {
      if (!graph.conflicts(v, u)) continue;
      const std::size_t start = result.offsets[u];
      const std::size_t end = start + weights[u];
      if (start >= cursor + need && need > 0) {
        const std::size_t gap = start - cursor;
        if (rule == fit::first) {
          chosen = cursor;
          break;
        }
        if (gap < chosen_gap) {
          chosen = cursor;
          chosen_gap = gap;
        }
      }
      cursor = std::max(cursor, end);
    }
    if (chosen == static_cast<std::size_t>(-1)) chosen = need == 0 ? 0 : cursor;
    result.offsets[v] = chosen;
    if (need > 0) {
      by_offset.insert(std::lower_bound(by_offset.begin(), by_offset.end(), std::make_pair(chosen, chosen + need), lower),
                       v);
    }
    result.footprint = std::max(result.footprint, chosen + need);
  }
  return result;
}

/// @brief How hard best_placement searches.
struct placement_search {
  std::size_t iterations = 400;   ///< squeaky-wheel moves tried after the seed orders
  std::uint32_t random_seed = 1;  ///< the search is deterministic for a given seed
};

/// @brief The smallest placement found: every order in `orders` with both fit rules, then a
/// squeaky-wheel search from the best (a vertex that sets the footprint moves earlier; the move is
/// kept when the footprint does not grow). Stops early when it reaches `lower_bound`.
[[nodiscard]] inline placement best_placement(const conflict_graph& graph, const std::vector<std::size_t>& weights,
                                              const std::vector<std::vector<std::size_t>>& orders,
                                              std::size_t lower_bound, placement_search search = {}) {
  placement best;
  std::vector<std::size_t> best_order;
  fit best_rule = fit::first;
  bool have = false;
  for (const std::vector<std::size_t>& order : orders) {
    for (fit rule : {fit::first, fit::best}) {
      placement candidate = place_in_order(graph, weights, order, rule);
      if (!have || candidate.footprint < best.footprint) {
        best = std::move(candidate);
        best_order = order;
        best_rule = rule;
        have = true;
      }
    }
  }
  if (!have || best.footprint <= lower_bound || graph.size() < 2) return best;

  std::mt19937 random(search.random_seed);
  std::vector<std::size_t> order = best_order;
  std::size_t current = best.footprint;
  placement last = best;
  std::vector<std::size_t> position(graph.size());
  std::vector<std::size_t> critical;
  for (std::size_t step = 0; step < search.iterations && best.footprint > lower_bound; ++step) {
    for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
    critical.clear();
    for (std::size_t v = 0; v < graph.size(); ++v) {
      if (weights[v] > 0 && last.offsets[v] + weights[v] == last.footprint) critical.push_back(v);
    }
    std::vector<std::size_t> next = order;
    if (critical.empty() || random() % 4 == 0) {
      // A random swap keeps the search from cycling on one plateau.
      std::swap(next[random() % next.size()], next[random() % next.size()]);
    } else {
      const std::size_t v = critical[random() % critical.size()];
      const std::size_t from = position[v];
      if (from == 0) continue;
      const std::size_t to = static_cast<std::size_t>(random() % from);
      next.erase(next.begin() + static_cast<std::ptrdiff_t>(from));
      next.insert(next.begin() + static_cast<std::ptrdiff_t>(to), v);
    }
    placement candidate = place_in_order(graph, weights, next, best_rule);
    if (candidate.footprint <= current) {
      current = candidate.footprint;
      order = std::move(next);
      last = candidate;
      if (candidate.footprint < best.footprint) best = std::move(candidate);
    }
  }
  return best;
}

}  // namespace graphpool::plan
