#pragma once
/// @file window_layout.hpp
/// @brief A layout of one schedule's frames lowered a window of time at a time: the frames alive in a
/// window around a frame at the top laid out anew, exactly, by the conflict-driven search, with every
/// frame alive beside them pinned where it is. Host-only: no CUDA header.
///
/// Ruin and recreate (recreate_layout.hpp) moves a few frames at a time, and the conflict-driven search
/// (learned_layout.hpp) orders every frame at once; on long schedules of unequal chunks the first finds
/// the frames at the top locally rigid and the second runs out of effort. Between the two: a window of
/// tens to a hundred and fifty frames, searched exactly under a height one unit below the top while the
/// rest stays, is large enough to move what a few frames cannot and small enough to settle quickly. A
/// window is every frame alive within a margin of the high frame's lifetime, or only those of it near the
/// top (a band under the height), which reaches further in time for as many frames. PP 8 rank 5 VPP 4,
/// M 128, chunks of 247, 259, 303 and 132 MiB: 1.086 of the live bound before, 1.050 after one pass,
/// 1.048 after the planner's rounds with ruin and recreate (window_rounds_lower).

#include <algorithm>
#include <cstddef>
#include <vector>

#include "graphpool/plan/frame_intervals.hpp"
#include "graphpool/plan/learned_layout.hpp"
#include "graphpool/plan/order_bounds.hpp"
#include "graphpool/plan/recreate_layout.hpp"

namespace graphpool::plan::detail {

/// Events a window reaches before and after the high frame's lifetime, tried smallest first.
inline constexpr std::size_t window_margins[] = {0, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256};

/// Which frames of a window move: every one (0), then those whose top is within height / d of the height.
inline constexpr std::size_t window_band_divisors[] = {0, 2, 4};

/// The most frames one window moves; a larger one is skipped.
inline constexpr std::size_t window_most_free = 150;

/// Steps (the conflict-driven search's) one window may take before it is given up, per seed.
inline constexpr std::size_t window_search_effort = 2'000'000;

/// Seeds the last pass of window_rounds_lower tries a window with: seed 0 takes the first choices as the
/// hint orders them; seeds 1 and 2, tried where it runs out, break their ties at random. A window one seed
/// runs out on, another often settles; in the rounds before, one seed, so that the retries spend no effort
/// the rounds would have spent lowering (tried in every pass, they left two plans of 96 higher).
inline constexpr unsigned window_retry_seeds = 3;

/// Lays out anew the frames of `frames` alive in [from, to) (of those, only those whose top is above
/// `height - band`, with band 0: all) under `height`, every frame alive beside them pinned at `offsets`;
/// on success writes their offsets there. The search runs with seed 0, then, while it runs out, seeds 1 ..
/// `seeds` - 1. Spends from `effort`. False: no layout found (nothing changed).
inline bool window_relayout(const std::vector<frame_interval>& frames, std::vector<std::size_t>& offsets,
                            std::size_t from, std::size_t to, std::size_t band, std::size_t height,
                            std::size_t& effort, unsigned seeds = 1) {
  auto moves = [&](std::size_t f) {
    return frames[f].start < to && frames[f].end > from && (band == 0 || offsets[f] + frames[f].bytes + band > height);
  };
  std::size_t moving = 0;
  std::size_t first = static_cast<std::size_t>(-1);
  std::size_t last = 0;  // the lifetimes of the frames that move span [first, last)
  for (std::size_t f = 0; f < frames.size(); ++f) {
    if (!moves(f)) continue;
    ++moving;
    first = std::min(first, frames[f].start);
    last = std::max(last, frames[f].end);
  }
  effort -= std::min(effort, frames.size());
  if (moving == 0 || moving > window_most_free) return false;
  std::vector<std::size_t> ids;
  std::vector<frame_interval> window;
  std::vector<std::size_t> pinned;
  std::vector<std::size_t> hint;
  for (std::size_t f = 0; f < frames.size(); ++f) {
    if (frames[f].start >= last || frames[f].end <= first) continue;  // alive beside no frame that moves
    ids.push_back(f);
    window.push_back(frames[f]);
    pinned.push_back(moves(f) ? unpinned : offsets[f]);
    hint.push_back(offsets[f]);
  }
  effort -= std::min(effort, window.size() * window.size() / 2);  // the pairs alive together
  order_search search(window);
  std::vector<std::size_t> placed;
  order_verdict verdict = order_verdict::unknown;
  for (unsigned seed = 0; seed < seeds && verdict == order_verdict::unknown && effort > 0; ++seed) {
    std::size_t run = std::min(effort, window_search_effort);
    const std::size_t given = run;
    verdict = search.under(height, hint, run, placed, seed, &pinned);
    effort -= given - run;
  }
  if (verdict != order_verdict::found) return false;
  for (std::size_t k = 0; k < ids.size(); ++k) offsets[ids[k]] = placed[k];
  return true;
}

/// @return `offsets` (a layout of `frames`) lowered a unit at a time toward `floor` (no layout is lower):
/// at each height, every frame above it is brought under it by laying out anew a window around it
/// (window_relayout: margins and bands from the smallest), until none is above it or none of a frame's
/// windows finds room; within `effort` steps, each window searched with `seeds` seeds (window_relayout).
/// Deterministic: the same layout for the same input.
[[nodiscard]] inline std::vector<std::size_t> window_lower(const std::vector<frame_interval>& frames,
                                                           std::vector<std::size_t> offsets, std::size_t floor,
                                                           std::size_t effort, unsigned seeds = 1) {
  const std::size_t unit = byte_unit(frames);
  for (std::size_t top = top_of(frames, offsets); top > floor && top >= unit && effort > 0;) {
    const std::size_t height = top - unit;
    for (bool moved = true; moved && effort > 0;) {
      moved = false;
      for (std::size_t f = 0; f < frames.size() && effort > 0; ++f) {
        if (offsets[f] + frames[f].bytes <= height) continue;
        bool done = false;
        for (std::size_t divisor : window_band_divisors) {
          for (std::size_t margin : window_margins) {
            const std::size_t from = frames[f].start > margin ? frames[f].start - margin : 0;
            done = window_relayout(frames, offsets, from, frames[f].end + margin, divisor == 0 ? 0 : height / divisor,
                                   height, effort, seeds);
            if (done || effort == 0) break;
          }
          if (done || effort == 0) break;
        }
        moved = moved || done;
      }
    }
    const std::size_t now = top_of(frames, offsets);
    if (now >= top) break;
    top = now;
  }
  return offsets;
}

/// @return `offsets` lowered by window_lower (`window_effort`), then by ruin and recreate (recreate_lower,
/// `recreate_effort`) from where it leaves them, `rounds` times or until the floor: each starts the other
/// from a layout it did not make (ruin and recreate also moves frames without lowering the top, which can
/// give the windows room again: PP 8 rank 3 VPP 4 M 128 of 302, 147, 202 and 276 MiB comes lower only in a
/// second round); then one pass of windows more, each tried with `window_retry_seeds` seeds.
[[nodiscard]] inline std::vector<std::size_t> window_rounds_lower(const std::vector<frame_interval>& frames,
                                                                  std::vector<std::size_t> offsets, std::size_t floor,
                                                                  std::size_t window_effort,
                                                                  std::size_t recreate_effort, int rounds) {
  for (int round = 0; round < rounds && top_of(frames, offsets) > floor; ++round) {
    offsets = window_lower(frames, std::move(offsets), floor, window_effort);
    offsets = recreate_lower(frames, std::move(offsets), floor, recreate_effort);
  }
  if (top_of(frames, offsets) > floor) {
    offsets = window_lower(frames, std::move(offsets), floor, window_effort, window_retry_seeds);
  }
  return offsets;
}

}  // namespace graphpool::plan::detail
