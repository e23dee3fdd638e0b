#pragma once
/// @file bounded_layout.hpp
/// @brief Depth-first searches over one schedule, by forward time, backing up where a step fails, within
/// a bound on the work: its frames laid out under a height (each in a gap among the frames alive beside
/// it, tightest first; the lowest height by bisection), and a replay over copies laid out already.
///
/// Greedy placements (first or best fit, in any order, refined by reordering) leave holes that unequal
/// frames cannot fill; under a height that is too low a frame that does not fit sends the search back
/// to try the frames before it elsewhere, which finds packings no greedy order reaches.
/// Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "graphpool/plan/copy_table.hpp"
#include "graphpool/plan/frame_intervals.hpp"

namespace graphpool::plan::detail {

/// Depth-first layout of `frames` (sorted by start) under a height, within `effort` frames visited in all.
/// Frames with an offset in `fixed` (per frame, `unplaced`: to choose; empty: none fixed) keep it, and
/// the frames beside them in time keep clear of it (fixed frames are taken to keep clear of each other):
/// the search walks the frames to choose only, by start, or largest first where some are fixed (a few
/// fitted among many: the largest have the fewest places, and fail soonest).
class height_search {
 public:
  static constexpr std::size_t unplaced = static_cast<std::size_t>(-1);

  height_search(const std::vector<frame_interval>& frames, std::size_t effort, std::vector<std::size_t> fixed = {})
      : frames_(frames), unit_(byte_unit(frames)), beside_(frames.size()), fixed_(std::move(fixed)), effort_(effort) {
    if (fixed_.empty()) fixed_.assign(frames.size(), unplaced);
    // Beside frame k (one to choose): the frames that live with it, fixed or chosen before it.
    for (std::size_t k = 0; k < frames.size(); ++k) {
      if (fixed_[k] == unplaced) chosen_.push_back(k);
    }
    if (chosen_.size() < frames.size()) {
      std::stable_sort(chosen_.begin(), chosen_.end(),
                       [&](std::size_t a, std::size_t b) { return frames[a].bytes > frames[b].bytes; });
    }
    std::vector<std::size_t> rank(frames.size(), unplaced);  // in chosen_
    for (std::size_t p = 0; p < chosen_.size(); ++p) rank[chosen_[p]] = p;
    std::vector<std::size_t> alive;
    for (std::size_t k = 0; k < frames.size(); ++k) {
      alive.erase(std::remove_if(alive.begin(), alive.end(), [&](std::size_t q) { return frames[q].end <= frames[k].start; }),
                  alive.end());
      for (std::size_t q : alive) {  // k and q live together: the one chosen later keeps clear of the other
        if (rank[k] == unplaced && rank[q] == unplaced) continue;
        const bool k_later = rank[q] == unplaced || (rank[k] != unplaced && rank[q] < rank[k]);
        beside_[k_later ? k : q].push_back(k_later ? q : k);
      }
      alive.push_back(k);
    }
  }

  /// @return offsets (per frame) of a layout under `height`, or empty when none was found with the effort left.
  [[nodiscard]] std::vector<std::size_t> under(std::size_t height, std::size_t effort) {
    height -= height % unit_;  // every offset a multiple of the frames' sizes' unit (byte_unit)
    std::vector<std::size_t> offsets = fixed_;
    for (std::size_t k = 0; k < frames_.size(); ++k) {
      if (fixed_[k] != unplaced && fixed_[k] + frames_[k].bytes > height) return {};
    }
    if (chosen_.empty()) return offsets;
    const std::size_t granted = std::min(effort, effort_);
    std::size_t budget = granted;
    // choices[p]: the candidate offsets of the p-th frame to choose (tightest gap first); next[p]: the
    // one to try after.
    std::vector<std::vector<std::size_t>> choices(chosen_.size());
    std::vector<std::size_t> next(chosen_.size(), 0);
    std::size_t p = 0;
    bool entering = true;
    while (true) {
      const std::size_t k = chosen_[p];
      if (entering) {
        const std::size_t cost = beside_[k].size() + 1;
        if (cost > budget) break;
        budget -= cost;
        choices[p] = candidates(k, offsets, height);
        next[p] = 0;
      }
      if (next[p] < choices[p].size()) {
        offsets[k] = choices[p][next[p]++];
        if (++p == chosen_.size()) {
          effort_ -= granted - budget;
          return offsets;
        }
        entering = true;
        continue;
      }
      if (p == 0) break;  // every choice of the first frame failed: nothing fits under this height
      --p;
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
  std::size_t unit_;  // byte_unit(frames_)
  std::vector<std::vector<std::size_t>> beside_;
  std::vector<std::size_t> fixed_;   // per frame: its offset, or unplaced
  std::vector<std::size_t> chosen_;  // the frames to choose, in the order the search walks them
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
    high = top_of(frames, offsets);
    best = std::move(offsets);
  }
  return best;
}

/// The anchor schedule's frames laid out by a height-bounded search (bounded_layout.hpp), at or above
/// `floor`: a microbatch takes the copy of its chunk whose layers sit at the same offsets, else a new one
/// (invalid past `budget` copies per chunk).
[[nodiscard]] inline anchor_layout bounded_anchor(const std::vector<std::vector<std::size_t>>& frame_bytes,
                                                  const std::vector<lifetime>& items, std::size_t floor, int budget,
                                                  std::size_t effort) {
  const std::vector<frame_interval> frames = frames_of(frame_bytes, items);
  // The search without a height places every frame in its tightest gap at once: the ceiling to beat.
  height_search greedy(frames, frames.size() * frames.size() + frames.size());
  std::vector<std::size_t> offsets = greedy.under(static_cast<std::size_t>(-1), static_cast<std::size_t>(-1));
  std::vector<std::size_t> lower = lowest_layout(frames, floor, top_of(frames, offsets), effort);
  if (!lower.empty()) offsets = std::move(lower);
  return anchor_of(frame_bytes, items, frames, offsets, budget);
}

/// A schedule replayed over the copies laid out already, none added: depth first by forward time, each
/// microbatch on a copy of its chunk that shares no bytes with the copies alive beside it (its
/// `preferred` copies first, in order, when given per item; then lowest top first), backing up where
/// none is free. Items with a copy in `fixed` (per item, -1: to choose; empty: none fixed) keep it, and
/// those beside them in time keep clear of it. Copy id per item of `items` (-1: a chunk of no bytes), or
/// empty when no such replay was found within `effort` (copies and their overlaps visited), which it
/// spends from.
[[nodiscard]] inline std::vector<std::ptrdiff_t> replay_over(const copy_table& copies, const std::vector<lifetime>& items,
                                                             const std::vector<std::size_t>& chunk_bytes,
                                                             std::size_t& effort,
                                                             const std::vector<std::vector<std::size_t>>& preferred = {},
                                                             const std::vector<std::ptrdiff_t>& fixed = {}) {
  std::vector<std::ptrdiff_t> copy_of = fixed.empty() ? std::vector<std::ptrdiff_t>(items.size(), -1) : fixed;
  std::vector<std::size_t> placed;  // items of chunks with bytes left to choose, by forward time
  std::vector<std::size_t> position(items.size(), static_cast<std::size_t>(-1));  // in `placed`
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (chunk_bytes[static_cast<std::size_t>(items[i].chunk)] > 0 && copy_of[i] < 0) {
      position[i] = placed.size();
      placed.push_back(i);
    }
  }
  // Per position, the items alive beside it that are fixed or come before it.
  std::vector<std::vector<std::size_t>> beside(placed.size());
  std::vector<std::size_t> alive;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (chunk_bytes[static_cast<std::size_t>(items[i].chunk)] == 0) continue;
    const lifetime& item = items[i];
    alive.erase(std::remove_if(alive.begin(), alive.end(), [&](std::size_t j) { return items[j].end <= item.start; }),
                alive.end());
    for (std::size_t j : alive) {
      if (position[i] != static_cast<std::size_t>(-1)) beside[position[i]].push_back(j);
      else if (position[j] != static_cast<std::size_t>(-1)) beside[position[j]].push_back(i);
    }
    alive.push_back(i);
  }
  std::vector<std::vector<std::size_t>> choices(placed.size());
  std::vector<std::size_t> next(placed.size(), 0);
  std::vector<char> blocked(copies.size(), 0);
  std::size_t k = 0;
  bool entering = true;
  while (k < placed.size()) {
    if (entering) {
      std::fill(blocked.begin(), blocked.end(), 0);
      std::size_t cost = 1;
      for (std::size_t j : beside[k]) {
        const std::vector<std::size_t>& shared = copies.overlapping(static_cast<std::size_t>(copy_of[j]));
        cost += shared.size();
        for (std::size_t other : shared) blocked[other] = 1;
      }
      if (cost > effort) {
        effort = 0;
        return {};
      }
      effort -= cost;
      choices[k].clear();
      for (std::size_t id : copies.of_chunk(items[placed[k]].chunk)) {
        if (blocked[id] == 0) choices[k].push_back(id);
      }
      std::stable_sort(choices[k].begin(), choices[k].end(),
                       [&](std::size_t a, std::size_t b) { return copies.top(a) < copies.top(b); });
      if (!preferred.empty()) {
        const std::vector<std::size_t>& first = preferred[placed[k]];
        std::stable_sort(choices[k].begin(), choices[k].end(), [&](std::size_t a, std::size_t b) {
          const auto rank = [&](std::size_t id) { return std::find(first.begin(), first.end(), id) - first.begin(); };
          return rank(a) < rank(b);
        });
      }
      next[k] = 0;
    }
    if (next[k] < choices[k].size()) {
      copy_of[placed[k]] = static_cast<std::ptrdiff_t>(choices[k][next[k]++]);
      ++k;
      entering = true;
      continue;
    }
    copy_of[placed[k]] = -1;
    if (k == 0) return {};
    --k;
    entering = false;
  }
  return copy_of;
}


}  // namespace graphpool::plan::detail
