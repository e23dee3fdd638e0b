#pragma once
/// @file order_bounds.hpp
/// @brief What orders between frames leave of their offsets, for the conflict-driven search
/// (learned_layout.hpp): the pairs of frames alive together (each an order to choose), and every frame's
/// lowest and highest offset under a height with the order that set each, so that a conflict's cause reads
/// back as chains of orders, and an undo trail. Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "graphpool/plan/frame_intervals.hpp"

namespace graphpool::plan::detail {

/// The pairs of frames alive together. A literal is 2 * pair + side: side 0 puts the pair's first frame
/// below its second, side 1 the reverse; `lit ^ 1` is the other order.
class frame_pairs {
 public:
  struct neighbour {
    int frame;
    int pair;
  };

  explicit frame_pairs(const std::vector<frame_interval>& frames) : beside_(frames.size()) {
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
  }

  [[nodiscard]] std::size_t size() const { return first_.size(); }
  [[nodiscard]] int first(int pair) const { return first_[static_cast<std::size_t>(pair)]; }
  [[nodiscard]] int second(int pair) const { return second_[static_cast<std::size_t>(pair)]; }
  /// The frame a literal puts below, and the one it puts above.
  [[nodiscard]] int lower_of(int lit) const { return (lit & 1) ? second(lit >> 1) : first(lit >> 1); }
  [[nodiscard]] int upper_of(int lit) const { return (lit & 1) ? first(lit >> 1) : second(lit >> 1); }
  /// The literal that puts `lower` below the other frame of `pair`.
  [[nodiscard]] int below(int lower, int pair) const { return 2 * pair + (first(pair) == lower ? 0 : 1); }
  /// The frames alive with frame f, and their pairs.
  [[nodiscard]] const std::vector<neighbour>& beside(int f) const { return beside_[static_cast<std::size_t>(f)]; }

 private:
  std::vector<int> first_, second_;
  std::vector<std::vector<neighbour>> beside_;
};

/// A frame free to move (order_search::under's `pinned`, offset_bounds::reset's).
inline constexpr std::size_t unpinned = static_cast<std::size_t>(-1);

/// Every frame's lowest and highest offset under a height, each with the order (a literal of frame_pairs)
/// that set it last, -1 for the floor or the height. A bound changed by raise or lower is queued for the
/// search to carry to the frames beside it, and kept on a trail that undo rolls back.
class offset_bounds {
 public:
  offset_bounds(const std::vector<frame_interval>& frames, const frame_pairs& pairs) : frames_(frames), pairs_(pairs) {}

  /// Every frame anywhere from 0 up to `height` less its bytes, but a frame `pinned` gives an offset
  /// (not unpinned) held there, at any height; nothing queued or on the trail.
  void reset(std::size_t height, const std::vector<std::size_t>* pinned = nullptr) {
    const std::size_t count = frames_.size();
    low_.assign(count, 0);
    high_.resize(count);
    low_why_.assign(count, -1);
    high_why_.assign(count, -1);
    for (std::size_t f = 0; f < count; ++f) {
      high_[f] = static_cast<std::int64_t>(height) - static_cast<std::int64_t>(frames_[f].bytes);
      if (pinned != nullptr && (*pinned)[f] != unpinned) low_[f] = high_[f] = static_cast<std::int64_t>((*pinned)[f]);
    }
    changes_.clear();
    risen_.clear();
    fallen_.clear();
    mark_.assign(count, 0);
  }

  [[nodiscard]] std::int64_t low(int f) const { return low_[static_cast<std::size_t>(f)]; }
  [[nodiscard]] std::int64_t high(int f) const { return high_[static_cast<std::size_t>(f)]; }
  [[nodiscard]] std::int64_t bytes(int f) const { return static_cast<std::int64_t>(frames_[static_cast<std::size_t>(f)].bytes); }
  [[nodiscard]] const std::vector<std::int64_t>& lows() const { return low_; }
  /// Whether a pair's frames share no bytes at their lowest offsets.
  [[nodiscard]] bool apart(int pair) const {
    const int a = pairs_.first(pair), b = pairs_.second(pair);
    return low(a) + bytes(a) <= low(b) || low(b) + bytes(b) <= low(a);
  }

  /// Raises frame f's lowest offset to `to` because of order `why`; false: it passed its highest (the
  /// conflict's frame is then conflict_frame()).
  bool raise(int f, std::int64_t to, int why) { return move(f, false, to, why); }
  /// Lowers frame f's highest offset to `to` because of order `why`; false as for raise.
  bool lower(int f, std::int64_t to, int why) { return move(f, true, to, why); }
  [[nodiscard]] int conflict_frame() const { return conflict_at_; }

  /// The next changed bound to carry (`rose`: a lowest offset, else a highest); false when none is left.
  bool next_changed(int& f, bool& rose) {
    rose = !risen_.empty();
    if (!rose && fallen_.empty()) return false;
    std::vector<int>& queue = rose ? risen_ : fallen_;
    f = queue.back();
    queue.pop_back();
    return true;
  }
  void drop_changed() {
    risen_.clear();
    fallen_.clear();
  }

  /// The trail's length now, and the bounds rolled back to what they were at such a length.
  [[nodiscard]] std::size_t trail() const { return changes_.size(); }
  void undo(std::size_t to) {
    for (std::size_t k = changes_.size(); k-- > to;) {
      const change& c = changes_[k];
      (c.high ? high_ : low_)[static_cast<std::size_t>(c.frame)] = c.was;
      (c.high ? high_why_ : low_why_)[static_cast<std::size_t>(c.frame)] = c.why;
    }
    changes_.resize(to);
  }

  /// `lit` (where not negative) and the orders of the chains that set `low_end`'s lowest offset and
  /// `high_end`'s highest, negated: a clause saying that not all of them can hold with `lit` false.
  std::vector<int> chains(int lit, int low_end, int high_end) {
    std::vector<int> why;
    if (lit >= 0) why.push_back(lit);
    chain(low_end, false, why);
    chain(high_end, true, why);
    std::sort(why.begin() + (lit >= 0 ? 1 : 0), why.end());
    why.erase(std::unique(why.begin() + (lit >= 0 ? 1 : 0), why.end()), why.end());
    return why;
  }

 private:
  struct change {
    int frame;
    bool high;
    std::int64_t was;
    int why;
  };

  bool move(int f, bool high, std::int64_t to, int why) {
    const auto at = static_cast<std::size_t>(f);
    std::int64_t& bound = high ? high_[at] : low_[at];
    if (high ? to >= bound : to <= bound) return true;
    int& reason = high ? high_why_[at] : low_why_[at];
    changes_.push_back({f, high, bound, reason});
    bound = to;
    reason = why;
    (high ? fallen_ : risen_).push_back(f);
    return low_[at] <= high_[at] || (conflict_at_ = f, false);
  }
  // The orders of the chain that sets frame f's lowest (or highest) offset, negated into `out`.
  void chain(int f, bool high, std::vector<int>& out) {
    ++stamp_;
    const std::vector<int>& reasons = high ? high_why_ : low_why_;
    for (int why = reasons[static_cast<std::size_t>(f)]; why >= 0 && mark_[static_cast<std::size_t>(f)] != stamp_;
         why = reasons[static_cast<std::size_t>(f)]) {
      mark_[static_cast<std::size_t>(f)] = stamp_;
      out.push_back(why ^ 1);
      f = high ? pairs_.upper_of(why) : pairs_.lower_of(why);
    }
  }

  const std::vector<frame_interval>& frames_;
  const frame_pairs& pairs_;
  std::vector<std::int64_t> low_, high_;  // per frame: lowest and highest offset left
  std::vector<int> low_why_, high_why_;   // the order that set each (-1: the floor, the height)
  std::vector<change> changes_;
  std::vector<int> risen_, fallen_;       // frames whose lowest (highest) offset changed, not yet carried
  int conflict_at_ = -1;
  std::vector<unsigned> mark_;
  unsigned stamp_ = 0;
};

}  // namespace graphpool::plan::detail
