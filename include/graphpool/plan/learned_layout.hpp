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
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "graphpool/plan/frame_intervals.hpp"

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
  explicit order_search(const std::vector<frame_interval>& frames) : frames_(frames), beside_(frames.size()) {
    for (std::size_t a = 0; a < frames.size(); ++a) {
      for (std::size_t b = a + 1; b < frames.size(); ++b) {
        if (frames[a].start >= frames[b].end || frames[b].start >= frames[a].end) continue;
        const int pair = static_cast<int>(first_.size());
        first_.push_back(static_cast<int>(a));
        second_.push_back(static_cast<int>(b));
        beside_[a].push_back({static_cast<int>(b), pair});
        beside_[b].push_back({static_cast<int>(a), pair});
      }
    }
    for (const frame_interval& f : frames) {  // the most bytes alive at once: alive at some frame's start
      std::size_t alive = 0;
      for (const frame_interval& g : frames) alive += g.start <= f.start && f.start < g.end ? g.bytes : 0;
      most_alive_ = std::max(most_alive_, alive);
    }
  }

  /// Searches for a layout under `height`, within `effort` (frames and clauses looked at, spent from).
  /// `hint`: offsets of any layout of the frames (any height; empty: none), whose orders it tries first.
  /// `offsets` receives the layout when found. `seed` other than 0 breaks the first choices' ties at random.
  order_verdict under(std::size_t height, const std::vector<std::size_t>& hint, std::size_t& effort,
                      std::vector<std::size_t>& offsets, unsigned seed = 0) {
    // The bytes alive at once do not fit (nor, then, a frame taller than the height).
    if (most_alive_ > height) return order_verdict::none;
    reset(height, hint, effort, seed);
    // Frames alike (lifetime and bytes) are interchangeable: the first lies below.
    for (std::size_t pair = 0; pair < first_.size(); ++pair) {
      const frame_interval& a = frames_[static_cast<std::size_t>(first_[pair])];
      const frame_interval& b = frames_[static_cast<std::size_t>(second_[pair])];
      if (a.start == b.start && a.end == b.end && a.bytes == b.bytes) choose(static_cast<int>(2 * pair), {});
    }
    std::size_t conflicts = 0;
    std::size_t restart_at = restart_unit;
    std::size_t restarts = 0;
    for (;;) {
      if (!propagate()) {
        if (levels_.empty()) return order_verdict::none;
        std::vector<int> learnt = analyze();
        backjump(learnt.size() == 1 ? 0 : level_[static_cast<std::size_t>(learnt[1] >> 1)]);
        if (learnt.size() > 1) {
          const auto id = static_cast<int>(clauses_.size());
          watches_[static_cast<std::size_t>(learnt[0])].push_back(id);
          watches_[static_cast<std::size_t>(learnt[1])].push_back(id);
          clauses_.push_back(learnt);
        }
        choose(learnt[0], learnt);
        bump_ *= 1.05;
        if (++conflicts >= restart_at) {
          backjump(0);
          restart_at = conflicts + restart_unit * luby(++restarts);
        }
      } else if (const int pair = next_choice(); pair >= 0) {
        levels_.push_back({trail_.size(), bounds_.size()});
        choose(2 * pair + phase_[static_cast<std::size_t>(pair)], {});
      } else {
        offsets.assign(low_.begin(), low_.end());
        return order_verdict::found;
      }
      if (*effort_ == 0) return order_verdict::unknown;
    }
  }

 private:
  struct neighbour {
    int frame;
    int pair;
  };
  struct bound_change {
    int frame;
    bool high;
    std::int64_t was;
    int why;
  };
  struct level_start {
    std::size_t trail, bounds;
  };
  static constexpr std::size_t restart_unit = 100;  // conflicts between restarts, times Luby's sequence

  // A literal is 2 * pair + side: side 0 puts the pair's first frame below its second, side 1 the reverse.
  [[nodiscard]] int lower_of(int lit) const { return (lit & 1) ? second_[lit >> 1] : first_[lit >> 1]; }
  [[nodiscard]] int upper_of(int lit) const { return (lit & 1) ? first_[lit >> 1] : second_[lit >> 1]; }
  [[nodiscard]] int below(int lower, int pair) const { return 2 * pair + (first_[pair] == lower ? 0 : 1); }
  [[nodiscard]] bool holds(int lit) const { return side_[static_cast<std::size_t>(lit >> 1)] == (lit & 1); }
  [[nodiscard]] bool fails(int lit) const { return side_[static_cast<std::size_t>(lit >> 1)] == (~lit & 1); }
  [[nodiscard]] std::int64_t bytes(int f) const { return static_cast<std::int64_t>(frames_[static_cast<std::size_t>(f)].bytes); }
  [[nodiscard]] bool apart(int pair) const {
    const int a = first_[pair], b = second_[pair];
    return low_[a] + bytes(a) <= low_[b] || low_[b] + bytes(b) <= low_[a];
  }
  // Luby's sequence 1, 1, 2, 1, 1, 2, 4, ...: restarts mostly short, some long.
  static std::size_t luby(std::size_t x) {
    std::size_t size = 1, power = 0;
    while (size < x + 1) size = 2 * size + 1, ++power;
    while (size - 1 != x) size = (size - 1) / 2, --power, x %= size;
    return std::size_t{1} << power;
  }
  void spend(std::size_t cost) { *effort_ = cost > *effort_ ? 0 : *effort_ - cost; }

  void reset(std::size_t height, const std::vector<std::size_t>& hint, std::size_t& effort, unsigned seed) {
    const std::size_t pairs = first_.size(), count = frames_.size();
    effort_ = &effort;
    side_.assign(pairs, -1);
    level_.assign(pairs, 0);
    reason_.assign(pairs, {});
    phase_.assign(pairs, 0);
    activity_.assign(pairs, 0.0);
    bump_ = 1.0;
    for (std::size_t pair = 0; pair < pairs && !hint.empty(); ++pair) {
      // The hint's order (by middles, so overlapping frames of a layout above the height get one too);
      // its lower pairs are chosen first.
      const auto a = static_cast<std::size_t>(first_[pair]), b = static_cast<std::size_t>(second_[pair]);
      phase_[pair] = 2 * hint[a] + frames_[a].bytes <= 2 * hint[b] + frames_[b].bytes ? 0 : 1;
      activity_[pair] = 1.0 - static_cast<double>(std::min(hint[a], hint[b])) / static_cast<double>(height + 1);
    }
    if (seed != 0) {
      std::mt19937 random(seed);
      for (double& a : activity_) a += static_cast<double>(random() % 1024) / 1024.0;
    }
    low_.assign(count, 0);
    high_.resize(count);
    low_why_.assign(count, -1);
    high_why_.assign(count, -1);
    for (std::size_t f = 0; f < count; ++f) {
      high_[f] = static_cast<std::int64_t>(height) - static_cast<std::int64_t>(frames_[f].bytes);
    }
    trail_.clear();
    levels_.clear();
    bounds_.clear();
    parked_.clear();
    clauses_.clear();
    watches_.assign(2 * pairs, {});
    done_ = 0;
    heap_.clear();
    heap_at_.assign(pairs, -1);
    for (std::size_t pair = 0; pair < pairs; ++pair) push(static_cast<int>(pair));
    seen_.assign(pairs, 0);
    mark_.assign(count, 0);
  }

  void choose(int lit, const std::vector<int>& why) {
    const auto pair = static_cast<std::size_t>(lit >> 1);
    side_[pair] = lit & 1;
    level_[pair] = static_cast<int>(levels_.size());
    reason_[pair] = why;
    trail_.push_back(lit);
  }
  // Raises frame f's lowest offset (or lowers its highest) to `to`, because of order `why`; false: conflict.
  bool raise(int f, std::int64_t to, int why) {
    if (to <= low_[f]) return true;
    bounds_.push_back({f, false, low_[f], low_why_[f]});
    low_[f] = to;
    low_why_[f] = why;
    risen_.push_back(f);
    return low_[f] <= high_[f] || (conflict_at_ = f, false);
  }
  bool lower(int f, std::int64_t to, int why) {
    if (to >= high_[f]) return true;
    bounds_.push_back({f, true, high_[f], high_why_[f]});
    high_[f] = to;
    high_why_[f] = why;
    fallen_.push_back(f);
    return low_[f] <= high_[f] || (conflict_at_ = f, false);
  }
  // The orders of the chain that sets frame f's lowest (or highest) offset, negated into `out`.
  void chain(int f, bool high, std::vector<int>& out) {
    ++stamp_;
    for (int why = high ? high_why_[f] : low_why_[f]; why >= 0 && mark_[f] != stamp_;
         why = high ? high_why_[f] : low_why_[f]) {
      mark_[f] = stamp_;
      out.push_back(why ^ 1);
      f = high ? upper_of(why) : lower_of(why);
    }
  }
  std::vector<int> chains(int lit, int low_end, int high_end) {
    std::vector<int> why;
    if (lit >= 0) why.push_back(lit);
    chain(low_end, false, why);
    chain(high_end, true, why);
    std::sort(why.begin() + (lit >= 0 ? 1 : 0), why.end());
    why.erase(std::unique(why.begin() + (lit >= 0 ? 1 : 0), why.end()), why.end());
    return why;
  }
  bool propagate() {
    while (done_ < trail_.size()) {
      const int lit = trail_[done_++];
      if (!watched(lit ^ 1)) return false;
      const int a = lower_of(lit), b = upper_of(lit);
      if (!raise(b, low_[a] + bytes(a), lit) || !lower(a, high_[b] - bytes(a), lit) || !settle()) {
        risen_.clear();
        fallen_.clear();
        conflict_ = chains(-1, conflict_at_, conflict_at_);
        return false;
      }
    }
    return true;
  }
  // The learned clauses watching `lit`, now false: each finds another literal to watch, or forces its other.
  bool watched(int lit) {
    std::vector<int>& list = watches_[static_cast<std::size_t>(lit)];
    std::size_t kept = 0;
    for (std::size_t w = 0; w < list.size(); ++w) {
      std::vector<int>& clause = clauses_[static_cast<std::size_t>(list[w])];
      spend(clause.size());
      if (clause[0] == lit) std::swap(clause[0], clause[1]);
      auto other = std::find_if(clause.begin() + 2, clause.end(), [&](int l) { return !fails(l); });
      if (!holds(clause[0]) && other != clause.end()) {
        std::swap(clause[1], *other);
        watches_[static_cast<std::size_t>(clause[1])].push_back(list[w]);
        continue;
      }
      list[kept++] = list[w];
      if (holds(clause[0])) continue;
      if (fails(clause[0])) {
        conflict_ = clause;
        while (++w < list.size()) list[kept++] = list[w];
        list.resize(kept);
        return false;
      }
      choose(clause[0], clause);
    }
    list.resize(kept);
    return true;
  }
  // Carries raised lowest and lowered highest offsets to the frames ordered with them; forces the orders
  // left open that no longer fit one way. False: conflict.
  bool settle() {
    while (!risen_.empty() || !fallen_.empty()) {
      const bool rose = !risen_.empty();
      const int u = rose ? risen_.back() : fallen_.back();
      (rose ? risen_ : fallen_).pop_back();
      spend(beside_[static_cast<std::size_t>(u)].size());
      for (const neighbour& n : beside_[static_cast<std::size_t>(u)]) {
        const int w = n.frame;
        const int lit = rose ? below(u, n.pair) : below(w, n.pair);  // u below w; w below u
        if (side_[static_cast<std::size_t>(n.pair)] >= 0) {
          if (holds(lit) && !(rose ? raise(w, low_[u] + bytes(u), lit) : lower(w, high_[u] - bytes(w), lit))) return false;
        } else if (rose ? low_[u] + bytes(u) > high_[w] : low_[w] + bytes(w) > high_[u]) {
          choose(lit ^ 1, rose ? chains(lit ^ 1, u, w) : chains(lit ^ 1, w, u));
        } else if (rose && heap_at_[static_cast<std::size_t>(n.pair)] < 0 && !apart(n.pair)) {
          push(n.pair);  // overlapping again at their lowest: a choice to make
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
        activity_[pair] += bump_;
        if (heap_at_[pair] >= 0) rise(heap_at_[pair]);
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
    if (bump_ > 1e100) {
      for (double& a : activity_) a *= 1e-100;
      bump_ *= 1e-100;
    }
    return learnt;
  }
  void backjump(int level) {
    if (static_cast<int>(levels_.size()) <= level) return;
    const level_start start = levels_[static_cast<std::size_t>(level)];
    for (std::size_t k = trail_.size(); k-- > start.trail;) {
      const auto pair = static_cast<std::size_t>(trail_[k] >> 1);
      phase_[pair] = side_[pair];
      side_[pair] = -1;
      if (heap_at_[pair] < 0) push(static_cast<int>(pair));
    }
    trail_.resize(start.trail);
    done_ = start.trail;
    for (std::size_t k = bounds_.size(); k-- > start.bounds;) {
      const bound_change& c = bounds_[k];
      (c.high ? high_ : low_)[static_cast<std::size_t>(c.frame)] = c.was;
      (c.high ? high_why_ : low_why_)[static_cast<std::size_t>(c.frame)] = c.why;
    }
    bounds_.resize(start.bounds);
    // Pairs set aside as apart at a deeper level may overlap at the lower offsets restored.
    for (; !parked_.empty() && parked_.back().second > level; parked_.pop_back()) {
      if (heap_at_[static_cast<std::size_t>(parked_.back().first)] < 0) push(parked_.back().first);
    }
    levels_.resize(static_cast<std::size_t>(level));
  }
  // The most active open pair that overlaps at the lowest offsets; -1: none (a layout).
  int next_choice() {
    while (!heap_.empty()) {
      const int pair = pop();
      if (side_[static_cast<std::size_t>(pair)] >= 0) continue;
      if (!apart(pair)) return pair;
      parked_.emplace_back(pair, static_cast<int>(levels_.size()));
    }
    return -1;
  }
  // A binary heap of pairs by activity.
  void push(int pair) {
    heap_at_[static_cast<std::size_t>(pair)] = static_cast<int>(heap_.size());
    heap_.push_back(pair);
    rise(heap_at_[static_cast<std::size_t>(pair)]);
  }
  int pop() {
    const int top = heap_.front();
    heap_at_[static_cast<std::size_t>(top)] = -1;
    const int last = heap_.back();
    heap_.pop_back();
    if (heap_.empty()) return top;
    std::size_t i = 0;
    for (std::size_t child; (child = 2 * i + 1) < heap_.size(); i = child) {
      if (child + 1 < heap_.size() && active(heap_[child + 1], heap_[child])) ++child;
      if (!active(heap_[child], last)) break;
      place(i, heap_[child]);
    }
    place(i, last);
    return top;
  }
  void rise(int at) {
    auto i = static_cast<std::size_t>(at);
    const int pair = heap_[i];
    for (; i > 0 && active(pair, heap_[(i - 1) / 2]); i = (i - 1) / 2) place(i, heap_[(i - 1) / 2]);
    place(i, pair);
  }
  [[nodiscard]] bool active(int a, int b) const { return activity_[static_cast<std::size_t>(a)] > activity_[static_cast<std::size_t>(b)]; }
  void place(std::size_t i, int pair) {
    heap_[i] = pair;
    heap_at_[static_cast<std::size_t>(pair)] = static_cast<int>(i);
  }

  const std::vector<frame_interval>& frames_;
  std::size_t most_alive_ = 0;
  std::vector<int> first_, second_;                // the frames of each pair alive together
  std::vector<std::vector<neighbour>> beside_;     // per frame: the frames alive with it, and their pair
  std::size_t* effort_ = nullptr;
  std::vector<int> side_, level_, phase_;          // per pair: its order (-1 open), level chosen at, last order
  std::vector<std::vector<int>> reason_;           // per pair: the clause that forced it (empty: chosen)
  std::vector<double> activity_;
  double bump_ = 1.0;
  std::vector<std::int64_t> low_, high_;           // per frame: lowest and highest offset left
  std::vector<int> low_why_, high_why_;            // the order that set each (-1: the floor, the height)
  std::vector<int> trail_;                          // orders in the order taken
  std::vector<level_start> levels_;
  std::vector<bound_change> bounds_;
  std::vector<std::pair<int, int>> parked_;         // open pairs found apart, and the level they were found at
  std::vector<std::vector<int>> clauses_;
  std::vector<std::vector<int>> watches_;           // per literal: the clauses watching it
  std::size_t done_ = 0;                            // orders of the trail carried to the offsets
  std::vector<int> heap_, heap_at_;
  std::vector<char> seen_;
  std::vector<int> risen_, fallen_;
  std::vector<int> conflict_;
  int conflict_at_ = -1;
  std::vector<unsigned> mark_;
  unsigned stamp_ = 0;
};

/// @return `offsets` (a layout of `frames`) lowered by order_search a unit at a time toward `floor`, each
/// height searched from the layout before it, within `effort` in all; `proven` is set where the search
/// proved the returned layout's top the least (no layout a unit lower). Its time to a layout is
/// heavy-tailed, so each height is tried in runs of at most `run_effort`, each with its first ties broken
/// another way (on the cases CP-SAT settles, runs of 25 million reach the same heights in about half the
/// time one long run takes). Deterministic: the same layout for the same input.
[[nodiscard]] inline std::vector<std::size_t> learned_lower(const std::vector<frame_interval>& frames,
                                                            std::vector<std::size_t> offsets, std::size_t floor,
                                                            std::size_t effort, bool* proven = nullptr,
                                                            std::size_t run_effort = 25'000'000) {
  if (proven != nullptr) *proven = false;
  const std::size_t unit = byte_unit(frames);
  if (frames.empty() || unit == 0) return offsets;
  order_search search(frames);
  std::vector<std::size_t> lower;
  for (std::size_t top = top_of(frames, offsets); top > floor && top >= unit; top = top_of(frames, offsets)) {
    order_verdict verdict = order_verdict::unknown;
    for (unsigned seed = 0; verdict == order_verdict::unknown && effort > 0; ++seed) {
      std::size_t run = std::min(run_effort, effort);
      const std::size_t given = run;
      verdict = search.under(top - unit, offsets, run, lower, seed);
      effort -= given - run;
    }
    if (verdict != order_verdict::found) {
      if (proven != nullptr) *proven = verdict == order_verdict::none;
      break;
    }
    offsets = lower;
  }
  return offsets;
}

}  // namespace graphpool::plan::detail
