#pragma once
/// @file learned_layout.hpp
/// @brief A layout of one schedule's frames under a height, found by conflict-driven search over which
/// frame lies below which. Host-only: no CUDA header.
///
/// Two frames alive together need an order: one lies wholly below the other. Every choice of orders
/// that has no chain of frames, each below the next, taller than the height is a layout (each frame at
/// the tallest chain under it), and every layout is such a choice. The search chooses orders one at a
/// time, keeping for every frame the lowest and highest offset the orders so far leave it; an order
/// that would push a frame past its highest is forced the other way, and a frame whose lowest passes its
/// highest is a conflict, whose cause (the two chains that met at it) is learned as a clause no later
/// choice may repeat: the way SAT solvers learn (first unique implication point, activity-ordered
/// choices, restarts). Only frames that overlap at their lowest offsets are ordered by choice, so the
/// layout it returns is every frame at its lowest offset. Choices follow a given layout where they can:
/// from the planner's layout a unit under its top, it finds the layouts near it that the searches which
/// place frames whole do not. On PP 2 rank 0 VPP 4, M 24, chunks of 43, 247, 157 and 23 MiB: the planner's
/// other searches 1.068 of the live bound, this one 1.003, and it proves no layout lower (CP-SAT proves
/// the same optimum).

#include <algorithm>
#include <cstddef>
#include <random>
#include <utility>
#include <vector>

#include "graphpool/plan/activity_heap.hpp"
#include "graphpool/plan/frame_intervals.hpp"
#include "graphpool/plan/learned_clauses.hpp"
#include "graphpool/plan/order_bounds.hpp"

namespace graphpool::plan::detail {

/// What order_search::under found.
enum class order_verdict {
  found,    ///< a layout under the height
  none,     ///< proven: no layout under the height
  unknown,  ///< the effort ran out first
};

/// Conflict-driven search for a layout of one schedule's frames under a height.
class order_search {
 public:
  /// `frames`: alive from `start` to `end` (events); frames alive at one event may share no bytes.
  explicit order_search(const std::vector<frame_interval>& frames)
      : frames_(frames), most_alive_(most_bytes_alive(frames)), pairs_(frames), bounds_(frames, pairs_) {}
  order_search(const order_search&) = delete;  // its bounds refer to its own pairs
  order_search& operator=(const order_search&) = delete;

  /// Searches for a layout under `height`, within `effort` (frames and clauses looked at, spent from).
  /// `hint`: offsets of any layout of the frames (any height; empty: none), whose orders it tries first.
  /// `offsets` receives the layout when found. `seed` other than 0 breaks the first choices' ties at random.
  /// `pinned` (one entry per frame; null: none): frames held at the offset it gives, at any height, the
  /// others (`unpinned`) under `height` around them.
  order_verdict under(std::size_t height, const std::vector<std::size_t>& hint, std::size_t& effort,
                      std::vector<std::size_t>& offsets, unsigned seed = 0,
                      const std::vector<std::size_t>* pinned = nullptr) {
    // The bytes alive at once do not fit (nor, then, a frame taller than the height); pinned frames may
    // sit above it.
    if (pinned == nullptr && most_alive_ > height) return order_verdict::none;
    reset(height, hint, effort, seed, pinned);
    auto is_free = [&](int f) { return pinned == nullptr || (*pinned)[static_cast<std::size_t>(f)] == unpinned; };
    // Free frames alike (lifetime and bytes) are interchangeable: the first lies below.
    for (std::size_t pair = 0; pair < pairs_.size(); ++pair) {
      const int first = pairs_.first(static_cast<int>(pair)), second = pairs_.second(static_cast<int>(pair));
      const frame_interval& a = frames_[static_cast<std::size_t>(first)];
      const frame_interval& b = frames_[static_cast<std::size_t>(second)];
      if (a.start == b.start && a.end == b.end && a.bytes == b.bytes && is_free(first) && is_free(second)) {
        choose(static_cast<int>(2 * pair), {});
      }
    }
    std::size_t conflicts = 0;
    std::size_t restart_at = restart_unit;
    std::size_t restarts = 0;
    for (;;) {
      if (!propagate()) {
        if (levels_.empty()) return order_verdict::none;
        std::vector<int> learnt = analyze();
        backjump(learnt.size() == 1 ? 0 : level_[static_cast<std::size_t>(learnt[1] >> 1)]);
        if (learnt.size() > 1) clauses_.learn(learnt);
        choose(learnt[0], learnt);
        heap_.grow_step();
        if (++conflicts >= restart_at) {
          backjump(0);
          restart_at = conflicts + restart_unit * luby(++restarts);
        }
      } else if (const int pair = next_choice(); pair >= 0) {
        levels_.push_back({trail_.size(), bounds_.trail()});
        choose(2 * pair + phase_[static_cast<std::size_t>(pair)], {});
      } else {
        offsets.assign(bounds_.lows().begin(), bounds_.lows().end());
        return order_verdict::found;
      }
      if (*effort_ == 0) return order_verdict::unknown;
    }
  }

 private:
  struct level_start {
    std::size_t trail, bounds;
  };
  static constexpr std::size_t restart_unit = 100;  // conflicts between restarts, times Luby's sequence

  // Whether a literal (learned_clauses.hpp) holds under the orders set so far.
  [[nodiscard]] bool holds(int lit) const { return literal_holds(side_, lit); }
  // Luby's sequence 1, 1, 2, 1, 1, 2, 4, ...: restarts mostly short, some long.
  static std::size_t luby(std::size_t x) {
    std::size_t size = 1, power = 0;
    while (size < x + 1) size = 2 * size + 1, ++power;
    while (size - 1 != x) size = (size - 1) / 2, --power, x %= size;
    return std::size_t{1} << power;
  }
  void spend(std::size_t cost) { *effort_ = cost > *effort_ ? 0 : *effort_ - cost; }

  void reset(std::size_t height, const std::vector<std::size_t>& hint, std::size_t& effort, unsigned seed,
             const std::vector<std::size_t>* pinned) {
    const std::size_t pairs = pairs_.size();
    effort_ = &effort;
    side_.assign(pairs, -1);
    level_.assign(pairs, 0);
    reason_.assign(pairs, {});
    phase_.assign(pairs, 0);
    std::vector<double> activity(pairs, 0.0);
    for (std::size_t pair = 0; pair < pairs && !hint.empty(); ++pair) {
      // The hint's order (by middles, so overlapping frames of a layout above the height get one too);
      // its lower pairs are chosen first.
      const auto a = static_cast<std::size_t>(pairs_.first(static_cast<int>(pair)));
      const auto b = static_cast<std::size_t>(pairs_.second(static_cast<int>(pair)));
      phase_[pair] = 2 * hint[a] + frames_[a].bytes <= 2 * hint[b] + frames_[b].bytes ? 0 : 1;
      activity[pair] = 1.0 - static_cast<double>(std::min(hint[a], hint[b])) / static_cast<double>(height + 1);
    }
    if (seed != 0) {
      std::mt19937 random(seed);
      for (double& a : activity) a += static_cast<double>(random() % 1024) / 1024.0;
    }
    heap_.reset(std::move(activity));
    bounds_.reset(height, pinned);
    trail_.clear();
    levels_.clear();
    parked_.clear();
    clauses_.reset(2 * pairs);
    done_ = 0;
    seen_.assign(pairs, 0);
  }

  void choose(int lit, const std::vector<int>& why) {
    const auto pair = static_cast<std::size_t>(lit >> 1);
    side_[pair] = lit & 1;
    level_[pair] = static_cast<int>(levels_.size());
    reason_[pair] = why;
    trail_.push_back(lit);
  }
  bool propagate() {
    while (done_ < trail_.size()) {
      const int lit = trail_[done_++];
      if (!watched(lit ^ 1)) return false;
      const int a = pairs_.lower_of(lit), b = pairs_.upper_of(lit);
      if (!bounds_.raise(b, bounds_.low(a) + bounds_.bytes(a), lit) ||
          !bounds_.lower(a, bounds_.high(b) - bounds_.bytes(a), lit) || !settle()) {
        bounds_.drop_changed();
        const int at = bounds_.conflict_frame();
        conflict_ = bounds_.chains(-1, at, at);
        return false;
      }
    }
    return true;
  }
  // The learned clauses watching `lit`, now false: each finds another literal to watch, or forces its other.
  bool watched(int lit) {
    auto force = [&](int other, const std::vector<int>& why) { choose(other, why); };
    const std::vector<int>* conflict = clauses_.watched(lit, side_, force, [&](std::size_t cost) { spend(cost); });
    if (conflict != nullptr) conflict_ = *conflict;
    return conflict == nullptr;
  }
  // Carries raised lowest and lowered highest offsets to the frames ordered with them; forces the orders
  // left open that no longer fit one way. False: conflict.
  bool settle() {
    int u = 0;
    bool rose = false;
    while (bounds_.next_changed(u, rose)) {
      spend(pairs_.beside(u).size());
      for (const frame_pairs::neighbour& n : pairs_.beside(u)) {
        const int w = n.frame;
        const int lit = rose ? pairs_.below(u, n.pair) : pairs_.below(w, n.pair);  // u below w; w below u
        if (side_[static_cast<std::size_t>(n.pair)] >= 0) {
          if (holds(lit) && !(rose ? bounds_.raise(w, bounds_.low(u) + bounds_.bytes(u), lit)
                                   : bounds_.lower(w, bounds_.high(u) - bounds_.bytes(w), lit))) {
            return false;
          }
        } else if (rose ? bounds_.low(u) + bounds_.bytes(u) > bounds_.high(w)
                        : bounds_.low(w) + bounds_.bytes(w) > bounds_.high(u)) {
          choose(lit ^ 1, rose ? bounds_.chains(lit ^ 1, u, w) : bounds_.chains(lit ^ 1, w, u));
        } else if (rose && !heap_.contains(n.pair) && !bounds_.apart(n.pair)) {
          heap_.push(n.pair);  // overlapping again at their lowest: a choice to make
        }
      }
    }
    return true;
  }
  // First unique implication point: the learned clause, its literal of the conflict's level first and
  // one of the next highest level second.
  std::vector<int> analyze() {
    const int current = static_cast<int>(levels_.size());
    std::vector<int> learnt{-1};
    std::vector<int> clause = conflict_;
    std::size_t at = trail_.size();
    int open = 0;
    int lit = -1;
    for (;;) {
      for (int q : clause) {
        const auto pair = static_cast<std::size_t>(q >> 1);
        if (q == lit || seen_[pair] || level_[pair] == 0) continue;
        seen_[pair] = 1;
        heap_.bump(q >> 1);
        if (level_[pair] >= current) ++open; else learnt.push_back(q);
      }
      do --at; while (!seen_[static_cast<std::size_t>(trail_[at] >> 1)]);
      lit = trail_[at];
      seen_[static_cast<std::size_t>(lit >> 1)] = 0;
      if (--open == 0) break;
      clause = reason_[static_cast<std::size_t>(lit >> 1)];
    }
    learnt[0] = lit ^ 1;
    for (std::size_t k = 1; k < learnt.size(); ++k) {
      seen_[static_cast<std::size_t>(learnt[k] >> 1)] = 0;
      if (level_[static_cast<std::size_t>(learnt[k] >> 1)] > level_[static_cast<std::size_t>(learnt[1] >> 1)]) std::swap(learnt[1], learnt[k]);
    }
    heap_.rescale();
    return learnt;
  }
  void backjump(int level) {
    if (static_cast<int>(levels_.size()) <= level) return;
    const level_start start = levels_[static_cast<std::size_t>(level)];
    for (std::size_t k = trail_.size(); k-- > start.trail;) {
      const auto pair = static_cast<std::size_t>(trail_[k] >> 1);
      phase_[pair] = side_[pair];
      side_[pair] = -1;
      if (!heap_.contains(static_cast<int>(pair))) heap_.push(static_cast<int>(pair));
    }
    trail_.resize(start.trail);
    done_ = start.trail;
    bounds_.undo(start.bounds);
    // Pairs set aside as apart at a deeper level may overlap at the lower offsets restored.
    for (; !parked_.empty() && parked_.back().second > level; parked_.pop_back()) {
      if (!heap_.contains(parked_.back().first)) heap_.push(parked_.back().first);
    }
    levels_.resize(static_cast<std::size_t>(level));
  }
  // The most active open pair that overlaps at the lowest offsets; -1: none (a layout).
  int next_choice() {
    while (!heap_.empty()) {
      const int pair = heap_.pop();
      if (side_[static_cast<std::size_t>(pair)] >= 0) continue;
      if (!bounds_.apart(pair)) return pair;
      parked_.emplace_back(pair, static_cast<int>(levels_.size()));
    }
    return -1;
  }

  const std::vector<frame_interval>& frames_;
  std::size_t most_alive_;                         // the most bytes alive at once
  frame_pairs pairs_;                              // the frames alive together: one order each
  offset_bounds bounds_;                           // what the orders so far leave of each frame's offsets
  activity_heap heap_;                             // open pairs, the most active first
  std::size_t* effort_ = nullptr;
  std::vector<int> side_, level_, phase_;          // per pair: its order (-1 open), level chosen at, last order
  std::vector<std::vector<int>> reason_;           // per pair: the clause that forced it (empty: chosen)
  std::vector<int> trail_;                          // orders in the order taken
  std::vector<level_start> levels_;
  std::vector<std::pair<int, int>> parked_;         // open pairs found apart, and the level they were found at
  learned_clauses clauses_;                         // what the conflicts taught, each watched by two literals
  std::size_t done_ = 0;                            // orders of the trail carried to the offsets
  std::vector<char> seen_;
  std::vector<int> conflict_;
};

}  // namespace graphpool::plan::detail
