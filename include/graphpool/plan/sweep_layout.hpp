#pragma once
/// @file sweep_layout.hpp
/// @brief One schedule's frames laid out under a height by forward time, each where a neighbour's
/// lifetime ends nearest its own, with a repair that revisits earlier choices when a frame finds no room.
///
/// A frame placed against a neighbour that dies when it does leaves its hole beside that neighbour's:
/// the two open together, as one gap a larger frame can take. That is the exchange interleaved schedules
/// need (a chunk's large frames are born as another chunk's small ones die, and back); first and best
/// fit leave the holes apart. Where a frame finds no room under the height, the choices of the frames
/// placed just before it are revisited, next-ranked offset first, and the sweep goes on from the first
/// change that places more frames. The order can be changed: a frame the sweep got stuck at can be
/// placed earlier (the squeaky wheel, lowest_sweep.hpp), and the sweep can begin later in the schedule
/// (its steady state first), going backwards in time over the frames born before that. Host-only: no
/// CUDA header.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "graphpool/plan/frame_intervals.hpp"

namespace graphpool::plan::detail {

/// When the floor and the ceiling of the memory count as dying, for the frames placed against them.
enum class wall_rule {
  never,       ///< frames go against them only when no neighbour's end is near their own
  at_the_end,  ///< when the schedule ends (begins, for frames a sweep places backwards): long-lived frames
               ///< gather there
};

/// The sweep over one schedule's frames; one instance tries several heights.
class sweep_layout {
 public:
  /// How many frames before the one that found no room are revisited (by default), and how many other
  /// offsets each.
  static constexpr std::size_t default_revisit_reach = 120;
  static constexpr std::size_t revisit_choices = 8;

  /// `from`: the event the sweep begins at. Frames born from it on go first, by forward time; those born
  /// before it then go backwards in time (latest end first), each beside the neighbour born nearest its
  /// own birth: a steady state laid out first, the warmup fitted around it.
  explicit sweep_layout(const std::vector<frame_interval>& frames, std::size_t revisit_reach = default_revisit_reach,
                        std::size_t from = 0)
      : frames_(frames), unit_(byte_unit(frames)), revisit_reach_(revisit_reach), from_(from), order_(frames.size()),
        beside_(frames.size()) {
    std::iota(order_.begin(), order_.end(), std::size_t{0});
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
      return frames[a].start != frames[b].start ? frames[a].start < frames[b].start : frames[a].bytes > frames[b].bytes;
    });
    for (std::size_t a = 0; a < order_.size(); ++a) {
      const frame_interval& first = frames[order_[a]];
      end_ = std::max(end_, first.end);
      for (std::size_t b = a + 1; b < order_.size() && frames[order_[b]].start < first.end; ++b) {
        beside_[order_[a]].push_back(order_[b]);
        beside_[order_[b]].push_back(order_[a]);
      }
    }
    for (const std::vector<std::size_t>& alive_with : beside_) pass_ += alive_with.size() + 1;
    if (from_ == 0) return;
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
      const bool a_before = frames[a].start < from_;
      const bool b_before = frames[b].start < from_;
      if (a_before != b_before) return b_before;
      return a_before && frames[a].end > frames[b].end;
    });
  }

  /// From now on, each distance a frame's offsets are ranked by gets up to `spread` events added, a hash
  /// of `seed`, the frame and the offset: another sweep where the ranking is close, which the same seed
  /// repeats exactly (a frame in the same place ranks its offsets alike). Spread 0 ranks exactly.
  void perturb(unsigned seed, std::size_t spread) {
    seed_ = seed;
    spread_ = spread;
  }

  /// The choices (per position of the order) of the last layout `under` returned.
  [[nodiscard]] const std::vector<std::size_t>& choices() const noexcept { return choice_; }

  /// The position in the order where the last `under` that found no layout got stuck: the frame that
  /// found no room once its revisits were spent.
  [[nodiscard]] std::size_t stuck() const noexcept { return stuck_; }

  /// Moves the frame at position `at` of the order `by` positions earlier (the squeaky wheel: the frame
  /// a sweep got stuck at is placed before those that crowded it out, the next time).
  void promote(std::size_t at, std::size_t by) {
    if (at >= order_.size()) return;
    const std::size_t to = at > by ? at - by : 0;
    const std::size_t frame = order_[at];
    order_.erase(order_.begin() + static_cast<std::ptrdiff_t>(at));
    order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(to), frame);
  }

  /// The effort of one pass over every frame (what placing them all once costs).
  [[nodiscard]] std::size_t pass() const noexcept { return pass_; }

  /// @return offsets (per frame) of a layout whose top is at most `height`, or empty when none was
  /// found; `effort` (neighbours looked at, over the frames placed) is spent, and nothing more is tried
  /// once it is 0.
  /// `start`: a choice per position of the order to begin with (ranked offset, 0 = the best; missing
  /// positions take 0), such as those of a layout of a schedule that begins as this one does.
  [[nodiscard]] std::vector<std::size_t> under(std::size_t height, wall_rule walls, std::size_t& effort,
                                               const std::vector<std::size_t>& start = {}) {
    height -= height % unit_;  // every offset a multiple of the frames' sizes' unit (byte_unit)
    const std::size_t n = frames_.size();
    offset_.assign(n, unplaced);
    choice_ = start;
    choice_.resize(n, 0);
    std::size_t failed = place_from(0, height, walls, effort);
    while (failed < n) {
      bool progressed = false;
      const std::size_t first = failed > revisit_reach_ ? failed - revisit_reach_ : 0;
      for (std::size_t p = failed; p-- > first && !progressed && effort > 0;) {
        const std::size_t kept = choice_[p];
        for (std::size_t k = 1; k <= revisit_choices && !progressed && effort > 0; ++k) {
          clear_from(p);
          rank(order_[p], height, walls);
          if (kept + k >= ranked_.size()) break;
          choice_[p] = kept + k;
          std::fill(choice_.begin() + static_cast<std::ptrdiff_t>(p) + 1, choice_.end(), std::size_t{0});
          const std::size_t reached = place_from(p, height, walls, effort);
          progressed = reached > failed;
          failed = std::max(failed, reached);
        }
        if (!progressed) choice_[p] = kept;
      }
      if (!progressed) {
        stuck_ = failed;
        return {};
      }
    }
    return offset_;
  }

 private:
  static constexpr std::size_t unplaced = static_cast<std::size_t>(-1);

  // Frames from position `from` of the order placed by their current choices; the position of the
  // first that finds no room (or the frame count when all fit, or `from` when the effort ran out).
  std::size_t place_from(std::size_t from, std::size_t height, wall_rule walls, std::size_t& effort) {
    for (std::size_t p = from; p < order_.size(); ++p) {
      const std::size_t cost = beside_[order_[p]].size() + 1;
      if (effort < cost) {
        effort = 0;
        return from;
      }
      effort -= cost;
      rank(order_[p], height, walls);
      if (ranked_.empty()) return p;
      offset_[order_[p]] = ranked_[std::min(choice_[p], ranked_.size() - 1)].second;
    }
    return order_.size();
  }

  // A hash of the seed, a frame and an offset (splitmix64's finalizer).
  [[nodiscard]] std::uint64_t noise(std::size_t frame, std::size_t offset) const noexcept {
    std::uint64_t z = (static_cast<std::uint64_t>(seed_) << 32) ^
                      (static_cast<std::uint64_t>(frame) * 0x9e3779b97f4a7c15ULL) ^ static_cast<std::uint64_t>(offset);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  void clear_from(std::size_t from) {
    for (std::size_t p = from; p < order_.size(); ++p) offset_[order_[p]] = unplaced;
  }

  // The offsets frame `f` can take under `height` among the neighbours placed, against the bottom or
  // the top of each gap it fits, best first: the adjacent neighbour dies nearest when `f` does (is born
  // nearest when `f` is, for a frame born before from_: the sweep goes backwards there).
  void rank(std::size_t f, std::size_t height, wall_rule walls) {
    taken_.clear();
    ranked_.clear();
    for (std::size_t j : beside_[f]) {
      if (offset_[j] != unplaced) taken_.emplace_back(offset_[j], j);
    }
    std::sort(taken_.begin(), taken_.end());
    const bool backwards = frames_[f].start < from_;
    const std::size_t wall = walls == wall_rule::never ? 4 * end_ + 4 : backwards ? 0 : end_;
    const std::size_t bytes = frames_[f].bytes;
    const std::size_t dies = backwards ? frames_[f].start : frames_[f].end;
    auto when = [&](std::size_t j) { return backwards ? frames_[j].start : frames_[j].end; };
    auto distance = [&](std::size_t end, std::size_t offset) {
      return (end > dies ? end - dies : dies - end) + (spread_ == 0 ? 0 : noise(f, offset) % spread_);
    };
    auto gap = [&](std::size_t low, std::size_t high, std::size_t below_dies, std::size_t above_dies) {
      if (high <= low || high - low < bytes) return;
      ranked_.emplace_back(distance(below_dies, low), low);
      if (high - low > bytes) ranked_.emplace_back(distance(above_dies, high - bytes), high - bytes);
    };
    std::size_t cursor = 0;
    std::size_t below_dies = wall;
    for (const auto& [offset, j] : taken_) {
      if (offset > cursor) gap(cursor, offset, below_dies, when(j));
      const std::size_t top = offset + frames_[j].bytes;
      if (top > cursor) {
        cursor = top;
        below_dies = when(j);
      } else if (top == cursor) {
        below_dies = backwards ? std::min(below_dies, when(j)) : std::max(below_dies, when(j));
      }
    }
    if (height > cursor) gap(cursor, height, below_dies, wall);
    std::stable_sort(ranked_.begin(), ranked_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }

  const std::vector<frame_interval>& frames_;
  std::size_t unit_;                                // byte_unit(frames_)
  std::size_t revisit_reach_;
  std::size_t from_;                                // the event the sweep begins at
  std::vector<std::size_t> order_;                  // frames by start, larger first at one start (from from_,
                                                    // then those before it by end backwards; promoted)
  std::vector<std::vector<std::size_t>> beside_;    // frames alive together
  std::size_t end_ = 0;                             // the last frame's end
  std::size_t pass_ = 0;
  std::size_t stuck_ = 0;
  unsigned seed_ = 0;
  std::size_t spread_ = 0;
  std::vector<std::size_t> offset_;
  std::vector<std::size_t> choice_;                 // per position of the order: which ranked offset
  std::vector<std::pair<std::size_t, std::size_t>> taken_;   // (offset, frame) of placed neighbours
  std::vector<std::pair<std::size_t, std::size_t>> ranked_;  // (distance, offset)
};

}  // namespace graphpool::plan::detail
