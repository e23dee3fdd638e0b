#pragma once
/// @file conflict_graph.hpp
/// @brief Which frames may not share bytes, and the heaviest set of frames that pairwise conflict.
///
/// Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace graphpool::plan {

/// @brief An undirected graph over vertices 0..n-1, stored as one bitset row per vertex.
///
/// Vertices are frames (or groups of frames); an edge says the two are alive at the same time in
/// some schedule, so they need disjoint bytes. Not thread-safe to modify; const use is.
class conflict_graph {
 public:
  conflict_graph() = default;
  /// @brief A graph of `vertices` vertices and no edges.
  explicit conflict_graph(std::size_t vertices)
      : size_(vertices), words_((vertices + 63) / 64), rows_(vertices * words_, 0) {}

  /// @brief Records that `a` and `b` conflict (symmetric; a vertex never conflicts with itself).
  void add_conflict(std::size_t a, std::size_t b) noexcept {
    if (a == b) return;
    rows_[a * words_ + b / 64] |= std::uint64_t{1} << (b % 64);
    rows_[b * words_ + a / 64] |= std::uint64_t{1} << (a % 64);
  }

  /// @return true when `a` and `b` conflict.
  [[nodiscard]] bool conflicts(std::size_t a, std::size_t b) const noexcept {
    return (rows_[a * words_ + b / 64] >> (b % 64)) & 1U;
  }

  /// @return the number of vertices.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// @return the number of 64-bit words in a row.
  [[nodiscard]] std::size_t words() const noexcept { return words_; }
  /// @return vertex `a`'s row: bit b set when a and b conflict.
  [[nodiscard]] const std::uint64_t* row(std::size_t a) const noexcept { return rows_.data() + a * words_; }

  /// @return how many vertices conflict with `a`.
  [[nodiscard]] std::size_t degree(std::size_t a) const noexcept {
    std::size_t count = 0;
    for (std::size_t w = 0; w < words_; ++w) count += static_cast<std::size_t>(__builtin_popcountll(row(a)[w]));
    return count;
  }

  /// @return the vertices that conflict with `a`, ascending.
  [[nodiscard]] std::vector<std::size_t> neighbors(std::size_t a) const {
    std::vector<std::size_t> result;
    for_each_neighbor(a, [&](std::size_t b) { result.push_back(b); });
    return result;
  }

  /// @return the graph induced by `keep`: vertex i of the result is vertex keep[i] of this one.
  [[nodiscard]] conflict_graph subgraph(const std::vector<std::size_t>& keep) const {
    conflict_graph result(keep.size());
    for (std::size_t i = 0; i < keep.size(); ++i) {
      for (std::size_t j = i + 1; j < keep.size(); ++j) {
        if (conflicts(keep[i], keep[j])) result.add_conflict(i, j);
      }
    }
    return result;
  }

  /// @return the graph whose vertex i stands for vertex group_of[i] of this one: two of its vertices
  /// conflict exactly when they stand for the same vertex or for two that conflict (the frames of
  /// (chunk, copy) groups, from the groups' conflicts).
  [[nodiscard]] conflict_graph expanded(const std::vector<std::size_t>& group_of) const {
    conflict_graph result(group_of.size());
    const std::size_t words = result.words_;
    std::vector<std::uint64_t> members(size_ * words, 0);  // per vertex of this graph: the result's that stand for it
    for (std::size_t i = 0; i < group_of.size(); ++i) members[group_of[i] * words + i / 64] |= std::uint64_t{1} << (i % 64);
    std::vector<std::uint64_t> beside(words);
    for (std::size_t g = 0; g < size_; ++g) {
      const std::uint64_t* own = members.data() + g * words;
      std::copy(own, own + words, beside.begin());
      for_each_neighbor(g, [&](std::size_t h) {
        const std::uint64_t* other = members.data() + h * words;
        for (std::size_t w = 0; w < words; ++w) beside[w] |= other[w];
      });
      for (std::size_t w = 0; w < words; ++w) {
        for (std::uint64_t bits = own[w]; bits != 0; bits &= bits - 1) {
          const std::size_t i = w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
          std::uint64_t* row = result.rows_.data() + i * words;
          std::copy(beside.begin(), beside.end(), row);
          row[i / 64] &= ~(std::uint64_t{1} << (i % 64));  // a vertex never conflicts with itself
        }
      }
    }
    return result;
  }

  /// @brief Calls `visit(b)` for every b that conflicts with `a`, ascending.
  template <class Visit>
  void for_each_neighbor(std::size_t a, Visit&& visit) const {
    for (std::size_t w = 0; w < words_; ++w) {
      for (std::uint64_t bits = row(a)[w]; bits != 0; bits &= bits - 1) {
        visit(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)));
      }
    }
  }

 private:
  std::size_t size_ = 0;
  std::size_t words_ = 0;
  std::vector<std::uint64_t> rows_;
};

/// @brief A set of vertices that pairwise conflict, and its weight.
struct clique {
  std::vector<std::size_t> vertices;
  std::size_t weight = 0;
  bool exact = false;  ///< true when the search proved no heavier clique exists
};

namespace detail {

class clique_search {
 public:
  clique_search(const conflict_graph& graph, const std::vector<std::size_t>& weights, std::size_t effort_limit,
                std::size_t upper_bound)
      : graph_(graph), weights_(weights), effort_limit_(effort_limit), upper_bound_(upper_bound) {}

  clique run() {
    const std::size_t n = graph_.size();
    // Start from a greedy clique (heaviest vertex first) so the bound prunes from the first node.
    std::vector<std::size_t> by_weight(n);
    std::iota(by_weight.begin(), by_weight.end(), std::size_t{0});
    std::stable_sort(by_weight.begin(), by_weight.end(),
                     [&](std::size_t a, std::size_t b) { return weights_[a] > weights_[b]; });
    for (std::size_t i = 0; i < std::min<std::size_t>(n, 64); ++i) {
      const std::size_t start = by_weight[i];
      std::vector<std::size_t> members{start};
      std::size_t weight = weights_[start];
      for (std::size_t v : by_weight) {
        if (v == start) continue;
        bool fits = true;
        for (std::size_t m : members) fits = fits && graph_.conflicts(v, m);
        if (fits) {
          members.push_back(v);
          weight += weights_[v];
        }
      }
      if (weight > best_.weight || best_.vertices.empty()) best_ = clique{members, weight, false};
    }
    std::vector<std::size_t> candidates(by_weight);
    std::vector<std::size_t> current;
    if (best_.weight < upper_bound_) expand(current, 0, candidates);
    best_.exact = effort_ <= effort_limit_ || best_.weight >= upper_bound_;
    std::sort(best_.vertices.begin(), best_.vertices.end());
    return best_;
  }

 private:
  // Branch and bound: colour the candidates greedily; a colour class holds pairwise non-conflicting
  // vertices, so a clique takes at most one of each, and its heaviest member bounds what it adds.
  void expand(std::vector<std::size_t>& current, std::size_t weight, std::vector<std::size_t>& candidates) {
    // A node colours its candidates twice, each pass up to candidates^2 pair tests: that is its effort.
    effort_ += 1 + candidates.size() * candidates.size();
    if (effort_ > effort_limit_ || best_.weight >= upper_bound_) return;
    if (candidates.empty()) {
      if (weight > best_.weight) best_ = clique{current, weight, false};
      return;
    }
    std::vector<std::size_t> order;
    std::vector<std::size_t> bound;
    order.reserve(candidates.size());
    bound.reserve(candidates.size());
    // Two colorings of the candidates; the one with the smaller total bound is used. Mixed: heaviest
    // first, a class costs its heaviest member. Pure: a class holds one weight, so it costs exactly
    // that (far tighter when a few weights repeat, as frames of one chunk do). Lightest classes come
    // first in the order, so the heavy ones are branched on first.
    color_classes(candidates, false, order, bound);
    std::vector<std::size_t> pure_order;
    std::vector<std::size_t> pure_bound;
    color_classes(candidates, true, pure_order, pure_bound);
    if (!pure_bound.empty() && pure_bound.back() < bound.back()) {
      order.swap(pure_order);
      bound.swap(pure_bound);
    }
    for (std::size_t i = order.size(); i-- > 0;) {
      if (weight + bound[i] <= best_.weight) return;
      const std::size_t v = order[i];
      std::vector<std::size_t> next;
      for (std::size_t j = 0; j < i; ++j) {
        if (graph_.conflicts(v, order[j])) next.push_back(order[j]);
      }
      current.push_back(v);
      expand(current, weight + weights_[v], next);
      current.pop_back();
      if (effort_ > effort_limit_) return;
    }
  }

  void color_classes(const std::vector<std::size_t>& candidates, bool pure, std::vector<std::size_t>& order,
                     std::vector<std::size_t>& bound) const {
    std::vector<std::size_t> uncoloured = candidates;
    std::stable_sort(uncoloured.begin(), uncoloured.end(), [&](std::size_t a, std::size_t b) {
      return pure ? weights_[a] < weights_[b] : weights_[a] > weights_[b];
    });
    std::vector<std::vector<std::size_t>> classes;
    while (!uncoloured.empty()) {
      std::vector<std::size_t> klass;
      std::vector<std::size_t> rest;
      for (std::size_t v : uncoloured) {
        bool independent = !pure || weights_[v] == weights_[uncoloured.front()];
        for (std::size_t k : klass) independent = independent && !graph_.conflicts(v, k);
        (independent ? klass : rest).push_back(v);
      }
      classes.push_back(std::move(klass));
      uncoloured.swap(rest);
    }
    // A class costs its heaviest member; order the classes lightest first.
    std::vector<std::size_t> cost;
    for (const auto& klass : classes) {
      std::size_t heaviest = 0;
      for (std::size_t v : klass) heaviest = std::max(heaviest, weights_[v]);
      cost.push_back(heaviest);
    }
    std::vector<std::size_t> by_cost(classes.size());
    std::iota(by_cost.begin(), by_cost.end(), std::size_t{0});
    std::stable_sort(by_cost.begin(), by_cost.end(), [&](std::size_t a, std::size_t b) { return cost[a] < cost[b]; });
    std::size_t cumulative = 0;
    for (std::size_t k : by_cost) {
      cumulative += cost[k];
      for (std::size_t v : classes[k]) {
        order.push_back(v);
        bound.push_back(cumulative);
      }
    }
  }

  const conflict_graph& graph_;
  const std::vector<std::size_t>& weights_;
  std::size_t effort_limit_;
  std::size_t upper_bound_;
  std::size_t effort_ = 0;
  clique best_;
};

}  // namespace detail

/// @brief How much work max_weight_clique does by default, in candidate pairs tested (a few ns each):
/// enough to finish on most plans, and a bound on the time of the rest.
inline constexpr std::size_t default_clique_effort = 50'000'000;

/// @brief The heaviest clique (vertices that pairwise conflict) of `graph` under `weights`.
///
/// Exact branch and bound up to `effort_limit` candidate pairs tested; past that the heaviest clique
/// found so far is returned with `exact = false` — still a valid lower bound for any placement. A
/// clique that reaches `upper_bound` (known to bound every clique, e.g. the bytes of a valid coloring)
/// ends the search as proven heaviest.
[[nodiscard]] inline clique max_weight_clique(const conflict_graph& graph, const std::vector<std::size_t>& weights,
                                              std::size_t effort_limit = default_clique_effort,
                                              std::size_t upper_bound = static_cast<std::size_t>(-1)) {
  if (graph.size() == 0) return clique{{}, 0, true};
  return detail::clique_search(graph, weights, effort_limit, upper_bound).run();
}

}  // namespace graphpool::plan
