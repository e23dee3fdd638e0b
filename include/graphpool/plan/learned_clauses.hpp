#pragma once
/// @file learned_clauses.hpp
/// @brief The clauses the conflict-driven search (learned_layout.hpp) learns from its conflicts, each
/// watched by two of its literals: a clause is looked at only when one of those fails, and then watches
/// another literal, forces the one literal left open, or is a conflict. Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace graphpool::plan::detail {

/// A literal is 2 * pair + side (frame_pairs); it holds or fails once its pair's order is set. `side`:
/// per pair, its order (0 or 1), -1 while open.
[[nodiscard]] inline bool literal_holds(const std::vector<int>& side, int lit) {
  return side[static_cast<std::size_t>(lit >> 1)] == (lit & 1);
}
[[nodiscard]] inline bool literal_fails(const std::vector<int>& side, int lit) {
  return side[static_cast<std::size_t>(lit >> 1)] == (~lit & 1);
}

/// Learned clauses (each: at least one of its literals must hold), each watched by its first two literals.
class learned_clauses {
 public:
  /// No clause, and no watches, for literals 0 to `literals` - 1.
  void reset(std::size_t literals) {
    clauses_.clear();
    watches_.assign(literals, {});
  }

  /// Keeps `clause` (two literals or more), watched by its first two.
  void learn(const std::vector<int>& clause) {
    const auto id = static_cast<int>(clauses_.size());
    watches_[static_cast<std::size_t>(clause[0])].push_back(id);
    watches_[static_cast<std::size_t>(clause[1])].push_back(id);
    clauses_.push_back(clause);
  }

  /// The clauses watching `lit`, now false under `side`: each finds another literal to watch, or forces
  /// its other with `force(literal, clause)`; `spend(n)` is told of each clause's n literals looked at.
  /// @return the clause whose every literal fails (a conflict), or null.
  template <class Force, class Spend>
  const std::vector<int>* watched(int lit, const std::vector<int>& side, Force&& force, Spend&& spend) {
    std::vector<int>& list = watches_[static_cast<std::size_t>(lit)];
    std::size_t kept = 0;
    for (std::size_t w = 0; w < list.size(); ++w) {
      std::vector<int>& clause = clauses_[static_cast<std::size_t>(list[w])];
      spend(clause.size());
      if (clause[0] == lit) std::swap(clause[0], clause[1]);
      auto other = std::find_if(clause.begin() + 2, clause.end(), [&](int l) { return !literal_fails(side, l); });
      if (!literal_holds(side, clause[0]) && other != clause.end()) {
        std::swap(clause[1], *other);
        watches_[static_cast<std::size_t>(clause[1])].push_back(list[w]);
        continue;
      }
      list[kept++] = list[w];
      if (literal_holds(side, clause[0])) continue;
      if (literal_fails(side, clause[0])) {
        while (++w < list.size()) list[kept++] = list[w];
        list.resize(kept);
        return &clause;
      }
      force(clause[0], clause);
    }
    list.resize(kept);
    return nullptr;
  }

 private:
  std::vector<std::vector<int>> clauses_;
  std::vector<std::vector<int>> watches_;  // per literal: the clauses watching it
};

}  // namespace graphpool::plan::detail
