#pragma once
/// @file bounded_layout.hpp
/// @brief One schedule's frames laid out under a height: depth first by forward time, each frame in a
/// gap among the frames alive beside it (tightest gap first, at its bottom or its top), backing up when
/// one does not fit; the lowest height found by bisection within a bound on the frames visited.
///
/// Greedy placements (first or best fit, in any order, refined by reordering) leave holes that unequal
/// frames cannot fill; under a height that is too low a frame that does not fit sends the search back
/// to try the frames before it elsewhere, which finds packings no greedy order reaches.
/// Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace graphpool::plan::detail {

/// One frame of one schedule: alive from event `start` to event `end`, `bytes` large.
struct frame_interval {
  std::size_t start = 0;
  std::size_t end = 0;
  std::size_t bytes = 0;
};

/// Depth-first layout of `frames` (sorted by start) under a height, within `effort` frames visited in all.
class height_search {
 public:
  height_search(const std::vector<frame_interval>& frames, std::size_t effort)
      : frames_(frames), beside_(frames.size()), effort_(effort) {
    // The frames alive when frame k starts: those before it that end after its start.
    std::vector<std::size_t> alive;
    for (std::size_t k = 0; k < frames.size(); ++k) {
      alive.erase(std::remove_if(alive.begin(), alive.end(), [&](std::size_t q) { return frames[q].end <= frames[k].start; }),
                  alive.end());
      beside_[k] = alive;
      alive.push_back(k);
    }
  }

  /// @return offsets (per frame) of a layout under `height`, or empty when none was found with the effort left.
  [[nodiscard]] std::vector<std::size_t> under(std::size_t height, std::size_t effort) {
    std::vector<std::size_t> offsets(frames_.size(), 0);
    if (frames_.empty()) return offsets;
    const std::size_t granted = std::min(effort, effort_);
    std::size_t budget = granted;
    // choices[k]: the candidate offsets of frame k (tightest gap first); next[k]: the one to try after.
    std::vector<std::vector<std::size_t>> choices(frames_.size());
    std::vector<std::size_t> next(frames_.size(), 0);
    std::size_t k = 0;
    bool entering = true;
    while (true) {
      if (entering) {
        const std::size_t cost = beside_[k].size() + 1;
        if (cost > budget) break;
        budget -= cost;
        choices[k] = candidates(k, offsets, height);
        next[k] = 0;
      }
      if (next[k] < choices[k].size()) {
        offsets[k] = choices[k][next[k]++];
        if (++k == frames_.size()) {
          effort_ -= granted - budget;
          return offsets;
        }
        entering = true;
        continue;
      }
      if (k == 0) break;  // every choice of the first frame failed: nothing fits under this height
      --k;
      entering = false;
    }
    effort_ -= granted - budget;
    return {};
  }

  /// @return the effort not spent yet.
  [[nodiscard]] std::size_t effort_left() const noexcept { return effort_; }

 private:
  // Offsets where frame k fits under `height` among the frames alive beside it: the bottom and the top
  // of every gap that holds it, tightest gap first.
  [[nodiscard]] std::vector<std::size_t> candidates(std::size_t k, const std::vector<std::size_t>& offsets,
                                                    std::size_t height) const {
    const std::size_t bytes = frames_[k].bytes;
    std::vector<std::pair<std::size_t, std::size_t>> taken;
    for (std::size_t q : beside_[k]) taken.emplace_back(offsets[q], offsets[q] + frames_[q].bytes);
    std::sort(taken.begin(), taken.end());
    std::vector<std::pair<std::size_t, std::size_t>> ranked;  // (gap, offset)
    auto gap = [&](std::size_t from, std::size_t to) {
      if (to < from + bytes) return;
      ranked.emplace_back(to - from, from);
      if (to - bytes != from) ranked.emplace_back(to - from, to - bytes);
    };
    std::size_t cursor = 0;
    for (const auto& [start, end] : taken) {
      if (start > cursor) gap(cursor, start);
      cursor = std::max(cursor, end);
    }
    if (height > cursor) gap(cursor, height);
    std::sort(ranked.begin(), ranked.end());
    std::vector<std::size_t> result;
    for (const auto& [size, offset] : ranked) result.push_back(offset);
    return result;
  }

  const std::vector<frame_interval>& frames_;
  std::vector<std::vector<std::size_t>> beside_;
  std::size_t effort_;
};

/// @return the lowest layout of `frames` (sorted by start) found under heights from `floor` (no layout is
/// lower: the most bytes alive at once) up to `ceiling` (exclusive: a layout known already), by
/// bisection within `effort` frames visited; empty when none was found below `ceiling`.
[[nodiscard]] inline std::vector<std::size_t> lowest_layout(const std::vector<frame_interval>& frames, std::size_t floor,
                                                            std::size_t ceiling, std::size_t effort) {
  height_search search(frames, effort);
  std::vector<std::size_t> best;
  std::size_t low = floor;  // heights below `low` failed (or cannot fit)
  std::size_t high = ceiling;  // a layout under `high` is known (or none is wanted)
  for (int attempt = 0; attempt < 8 && low < high && search.effort_left() > 0; ++attempt) {
    // The floor first (often reachable), then halfway; each attempt gets an equal share of what is left.
    const std::size_t height = attempt == 0 ? low : low + (high - low) / 2;
    std::vector<std::size_t> offsets = search.under(height, search.effort_left() / static_cast<std::size_t>(8 - attempt));
    if (offsets.empty()) {
      low = height + 1;
      continue;
    }
    std::size_t top = 0;
    for (std::size_t f = 0; f < frames.size(); ++f) top = std::max(top, offsets[f] + frames[f].bytes);
    high = top;
    best = std::move(offsets);
  }
  return best;
}

}  // namespace graphpool::plan::detail
