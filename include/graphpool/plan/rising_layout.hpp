#pragma once
/// @file rising_layout.hpp
/// @brief A depth-first layout of one schedule's frames that rises from the floor: frames are placed
/// lowest first, each resting on the frames below it, under a given height.
///
/// Any layout can be lowered until every frame rests on the floor or on the top of a frame alive beside
/// it; taken lowest first, each frame then sits exactly on the highest top below it in its lifetime. So
/// a search that only chooses which frame comes next (and never where) reaches every layout, and can
/// prune as it goes:
/// - at every point in time, the bytes still to place above the level reached must fit under the height;
/// - a frame that can no longer be raised by any frame left must not be left behind.
/// The time sweeps (sweep_layout.hpp) place frames by time, each against its earlier neighbours; a frame
/// resting on one that is born after it is outside their reach, not this search's. It is exact, so it
/// suits small schedules (tens to a few hundred frames) and heights near the live bound. Time may also be a
/// ring (a periodic schedule's steady state, periodic_layout.hpp): the same holds there.
/// Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "graphpool/plan/frame_intervals.hpp"

namespace graphpool::plan::detail {

/// Depth-first search for a layout of `frames` under a height, lowest frame first.
class rising_search {
 public:
  /// `ring` 0: frames on a line of time. Else time is a ring of `ring` events (a periodic schedule's
  /// steady state folded onto one period): a frame lives from `start` mod ring for end - start events
  /// (fewer than `ring`), and frames alive at one point of the ring may share no bytes.
  explicit rising_search(const std::vector<frame_interval>& frames, std::size_t ring = 0)
      : frames_(frames), by_start_(frames.size()) {
    auto folded = [&](std::size_t t) { return ring == 0 ? t : t % ring; };
    for (std::size_t f = 0; f < frames.size(); ++f) by_start_[f] = f;
    std::sort(by_start_.begin(), by_start_.end(), [&](std::size_t a, std::size_t b) {
      const std::size_t start_a = folded(frames[a].start);
      const std::size_t start_b = folded(frames[b].start);
      return start_a != start_b ? start_a < start_b : frames[a].end - frames[a].start < frames[b].end - frames[b].start;
    });
    std::vector<std::size_t> times;
    for (const frame_interval& f : frames) {
      times.push_back(folded(f.start));
      times.push_back(folded(f.end));
    }
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    // On a line the points bound sections between them; on a ring each point starts one, the last
    // running round to the first.
    sections_ = times.empty() ? 0 : ring == 0 ? times.size() - 1 : times.size();
    auto section = [&](std::size_t t) {
      return static_cast<std::size_t>(std::lower_bound(times.begin(), times.end(), folded(t)) - times.begin());
    };
    for (std::size_t f : by_start_) {
      const std::size_t first = section(frames[f].start);
      std::size_t last = section(frames[f].end);
      if (last <= first && ring != 0) last += sections_;  // round the ring: sections past the end wrap
      spans_.emplace_back(first, last);
    }
    // A frame's twin: the one before it (by start) with the same lifetime and bytes. Twins are
    // interchangeable, so they are placed in order.
    twin_.assign(frames.size(), none);
    for (std::size_t k = 1; k < by_start_.size(); ++k) {
      for (std::size_t j = k; j-- > 0 && spans_[j].first == spans_[k].first;) {
        if (spans_[j].second == spans_[k].second && frames[by_start_[j]].bytes == frames[by_start_[k]].bytes) {
          twin_[k] = j;
          break;
        }
      }
    }
  }

  /// @return offsets (per frame, as `frames` lists them) of a layout under `height`, or empty when none
  /// was found. `order` ranks the frames that may come next at the same level: 0 largest first, 1 by
  /// start, others at random (seeded by `order`). `effort`: sections looked at, spent from.
  [[nodiscard]] std::vector<std::size_t> under(std::size_t height, unsigned order, std::size_t& effort) {
    const std::size_t n = frames_.size();
    height_ = height;
    effort_ = &effort;
    // Frames at one level are alive apart, so any order among them gives the same layout: `order`'s
    // ranks, which the candidates follow too.
    std::vector<std::size_t> ranked(n);
    for (std::size_t k = 0; k < n; ++k) ranked[k] = k;
    std::vector<std::uint32_t> noise(n, 0);
    if (order >= 2) {
      std::mt19937 random(order);
      for (std::uint32_t& r : noise) r = static_cast<std::uint32_t>(random());
    }
    std::sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) {
      if (order == 1) return a < b;
      if (order >= 2) return noise[a] != noise[b] ? noise[a] < noise[b] : a < b;
      const std::size_t bytes_a = frames_[by_start_[a]].bytes;
      const std::size_t bytes_b = frames_[by_start_[b]].bytes;
      if (bytes_a != bytes_b) return bytes_a > bytes_b;
      const std::size_t span_a = spans_[a].second - spans_[a].first;
      const std::size_t span_b = spans_[b].second - spans_[b].first;
      return span_a != span_b ? span_a > span_b : a < b;
    });
    rank_.assign(n, 0);
    for (std::size_t r = 0; r < n; ++r) rank_[ranked[r]] = r;
    level_.assign(sections_, 0);
    need_.assign(sections_, 0);
    left_.assign(sections_, 0);
    for (std::size_t k = 0; k < n; ++k) {
      for (std::size_t t = spans_[k].first; t < spans_[k].second; ++t) {
        need_[wrap(t)] += frames_[by_start_[k]].bytes;
        ++left_[wrap(t)];
      }
    }
    placed_.assign(n, false);
    at_.assign(n, 0);
    if (!descend(n, 0, none)) return {};
    std::vector<std::size_t> offsets(n);
    for (std::size_t k = 0; k < n; ++k) offsets[by_start_[k]] = at_[k];
    return offsets;
  }

 private:
  static constexpr std::size_t none = static_cast<std::size_t>(-1);

  // A section of a span: on a ring, spans run past the last section round to the first.
  [[nodiscard]] std::size_t wrap(std::size_t t) const { return t < sections_ ? t : t - sections_; }

  // Takes `cost` from the effort left, or all of it (and false) where less is left.
  bool spend(std::size_t cost) {
    if (cost > *effort_) {
      *effort_ = 0;
      return false;
    }
    *effort_ -= cost;
    return true;
  }

  // Places `left` frames more, none below `last` (the level of the frame placed last, `last_frame`), nor
  // at `last` before `last_frame` in rank.
  bool descend(std::size_t left, std::size_t last, std::size_t last_frame) {
    if (left == 0) return true;
    const std::size_t n = frames_.size();
    if (!spend(sections_)) return false;
    // Every frame left sits at or above `last` and above what lies below it: what is left must fit.
    for (std::size_t s = 0; s < sections_; ++s) {
      if (need_[s] > 0 && std::max(level_[s], last) + need_[s] > height_) return false;
    }
    std::size_t cost = sections_;
    for (std::size_t k = 0; k < n; ++k) cost += placed_[k] ? 0 : 2 * (spans_[k].second - spans_[k].first);
    if (!spend(cost)) return false;
    std::vector<std::size_t> rest(n, 0);  // where each frame left would rest now
    std::vector<std::size_t> lowest(sections_, static_cast<std::size_t>(-1));  // the lowest rest in a section
    std::vector<std::size_t> next;
    for (std::size_t k = 0; k < n; ++k) {
      if (placed_[k]) continue;
      std::size_t level = 0;
      std::size_t others = 0;  // the most frames left at a point of its lifetime, itself included
      for (std::size_t t = spans_[k].first; t < spans_[k].second; ++t) {
        level = std::max(level, level_[wrap(t)]);
        others = std::max(others, left_[wrap(t)]);
      }
      rest[k] = level;
      if (level + frames_[by_start_[k]].bytes > height_) return false;
      for (std::size_t t = spans_[k].first; t < spans_[k].second; ++t) {
        lowest[wrap(t)] = std::min(lowest[wrap(t)], std::max(level, last));
      }
      const bool in_order = level > last || (level == last && (last_frame == none || rank_[k] > rank_[last_frame]));
      if (in_order && (twin_[k] == none || placed_[twin_[k]])) {
        next.push_back(k);
      } else if (!in_order && others < 2) {
        return false;  // below the level reached, and no frame left can raise it
      }
    }
    // The lowest frame left at each point sets the level its bytes start from.
    for (std::size_t s = 0; s < sections_; ++s) {
      if (need_[s] > 0 && lowest[s] + need_[s] > height_) return false;
    }
    std::sort(next.begin(), next.end(), [&](std::size_t a, std::size_t b) {
      return rest[a] != rest[b] ? rest[a] < rest[b] : rank_[a] < rank_[b];
    });
    for (std::size_t k : next) {
      const std::size_t bytes = frames_[by_start_[k]].bytes;
      std::vector<std::size_t> below;
      for (std::size_t t = spans_[k].first; t < spans_[k].second; ++t) below.push_back(level_[wrap(t)]);
      placed_[k] = true;
      at_[k] = rest[k];
      for (std::size_t t = spans_[k].first; t < spans_[k].second; ++t) {
        level_[wrap(t)] = rest[k] + bytes;
        need_[wrap(t)] -= bytes;
        --left_[wrap(t)];
      }
      if (descend(left - 1, rest[k], k)) return true;
      placed_[k] = false;
      for (std::size_t t = spans_[k].first; t < spans_[k].second; ++t) {
        level_[wrap(t)] = below[t - spans_[k].first];
        need_[wrap(t)] += bytes;
        ++left_[wrap(t)];
      }
      if (*effort_ == 0) return false;
    }
    return false;
  }

  const std::vector<frame_interval>& frames_;
  std::vector<std::size_t> by_start_;                        // frames by start: the search's own numbering
  std::vector<std::pair<std::size_t, std::size_t>> spans_;   // sections [first, second) each frame is alive in (wrap)
  std::vector<std::size_t> twin_;
  std::size_t sections_ = 0;
  std::size_t height_ = 0;
  std::size_t* effort_ = nullptr;
  std::vector<std::size_t> rank_;  // the order among frames at one level
  std::vector<std::size_t> level_;  // per section: the top of the frames placed there
  std::vector<std::size_t> need_;   // per section: the bytes of the frames left there
  std::vector<std::size_t> left_;   // per section: how many frames are left there
  std::vector<bool> placed_;
  std::vector<std::size_t> at_;     // offsets, by the search's numbering
};

/// The most frames rising_anchor searches: beyond, its steps cost too much for what it finds.
inline constexpr std::size_t rising_frames_limit = 640;

/// @return the offsets (as the search's frames are listed) of a layout under `height` found lowest first
/// within `effort`, empty when none was found: largest first and by start with a quarter of the effort
/// each, then 22 seeded orders sharing the other half. The search is heavy-tailed: long tries in the first
/// two orders reach layouts of many frames, and many short ones reach more of the small schedules (on the
/// planner-quality corpus's 168 M 24 plans of unequal frames, 30 reach the live bound so; 29 with six
/// orders of a sixth each, 28 with 24 of a twenty-fourth).
[[nodiscard]] inline std::vector<std::size_t> rising_layout(rising_search& search, std::size_t height,
                                                            std::size_t effort) {
  constexpr unsigned orders = 24;
  for (unsigned order = 0; order < orders; ++order) {
    std::size_t share = order < 2 ? effort / 4 : effort / 2 / (orders - 2);
    std::vector<std::size_t> offsets = search.under(height, order, share);
    if (!offsets.empty()) return offsets;
  }
  return {};
}

/// @return rising_layout of `frames` (on a line of time) at `floor`; empty beyond rising_frames_limit.
[[nodiscard]] inline std::vector<std::size_t> rising_layout(const std::vector<frame_interval>& frames, std::size_t floor,
                                                            std::size_t effort) {
  if (frames.empty() || frames.size() > rising_frames_limit) return {};
  rising_search search(frames);
  return rising_layout(search, floor, effort);
}

/// Effort rising_lower gives each height it tries.
inline constexpr std::size_t rising_height_effort = 200'000'000;

/// @return `offsets` (a layout of `frames`) lowered by rising_layout at heights halfway between the lowest
/// top found and the last height tried where none was found (`floor` to begin with), in passes from `floor`
/// again while a pass lowers it, within `effort` in all (rising_height_effort per height); `offsets` where
/// none is lower or `frames` is past rising_frames_limit. Whether the search finds a layout within its
/// effort swings from height to height (PP 4 rank 2 VPP 4 M 24 of three layers of random sizes, 7160 MiB
/// alive at most: one at 7204 MiB, none at 7210, 7220 or 7250), so a height where it finds none rules
/// nothing out, and the next pass tries the heights between again. make_plan's first rising search is at
/// the live bound; a little above it, this one often finds layouts lower than the sweeps' and than those
/// the searches lowering a given layout reach: that case from 1.012 of the live bound to 1.001, PP 4 rank 0
/// VPP 4 M 24 (117, 64, 123 and 213 MiB) from 1.048 to 1.026. Deterministic: the same layout for the same
/// input.
[[nodiscard]] inline std::vector<std::size_t> rising_lower(const std::vector<frame_interval>& frames,
                                                           std::vector<std::size_t> offsets, std::size_t floor,
                                                           std::size_t effort) {
  const std::size_t unit = byte_unit(frames);
  if (frames.empty() || frames.size() > rising_frames_limit || unit == 0) return offsets;
  rising_search search(frames);
  std::size_t top = top_of(frames, offsets);
  for (bool lowered = true; lowered;) {
    lowered = false;
    for (std::size_t low = floor; effort >= rising_height_effort && top >= low + 2 * unit;) {
      effort -= rising_height_effort;
      const std::size_t height = low + (top - low) / unit / 2 * unit;
      std::vector<std::size_t> found = rising_layout(search, height, rising_height_effort);
      if (found.empty()) {
        low = height;
      } else {
        offsets = std::move(found);
        top = top_of(frames, offsets);
        lowered = true;
      }
    }
  }
  return offsets;
}

/// The anchor schedule's frames laid out at `floor` by rising_layout, bound to copies of their own;
/// invalid where none was found or it takes more than `budget` copies of a chunk.
[[nodiscard]] inline anchor_layout rising_anchor(const std::vector<std::vector<std::size_t>>& frame_bytes,
                                                 const std::vector<lifetime>& items, std::size_t floor, int budget,
                                                 std::size_t effort) {
  const std::vector<frame_interval> frames = frames_of(frame_bytes, items);
  const std::vector<std::size_t> offsets = rising_layout(frames, floor, effort);
  if (offsets.empty() && !frames.empty()) return {copy_table(frame_bytes), {}, 0, false};
  return anchor_of(frame_bytes, items, frames, offsets, budget);
}

}  // namespace graphpool::plan::detail
