#pragma once
/// @file recreate_layout.hpp
/// @brief A layout of one schedule's frames lowered by ruin and recreate: a few frames taken out and
/// put back, many times over. Host-only: no CUDA header.
///
/// Every layout search before it builds a layout whole (in some order, under some height); where it
/// ends a few bytes above the live bound, the frames at its top can often sit lower if a handful of
/// frames alive beside them move too, which no order of the whole finds. At a height one unit under the
/// top, each try takes out a frame above the height and a few frames alive with it (a random walk over
/// who lives with whom), and puts them back, in a random order, each at the lowest offset free beside
/// the frames that stay; a try is kept where it leaves no more bytes above the height and nothing above
/// the top. Once nothing is above the height, the top has come down, and the next height is a unit
/// lower. PP 8 rank 2 VPP 4, M 128, one layer per chunk of unequal sizes: 1.057 of the live bound
/// before, under 1.05 after.

#include <algorithm>
#include <cstddef>
#include <random>
#include <utility>
#include <vector>

#include "graphpool/plan/copy_table.hpp"
#include "graphpool/plan/frame_intervals.hpp"

namespace graphpool::plan::detail {

/// @return `offsets` (a layout of `frames`, sorted by start) lowered by ruin and recreate toward `floor`
/// (no layout is lower), within `effort` frames looked at (each try spends the frames it puts back and
/// those alive beside them). Deterministic: the same layout for the same input.
[[nodiscard]] inline std::vector<std::size_t> recreate_lower(const std::vector<frame_interval>& frames,
                                                             std::vector<std::size_t> offsets, std::size_t floor,
                                                             std::size_t effort) {
  const std::size_t count = frames.size();
  std::size_t top = top_of(frames, offsets);
  const std::size_t unit = byte_unit(frames);
  if (count == 0 || top <= floor || top < unit) return offsets;
  std::vector<std::vector<std::size_t>> beside(count);  // the frames alive with each
  for (std::size_t a = 0; a < count; ++a) {
    for (std::size_t b = a + 1; b < count && frames[b].start < frames[a].end; ++b) {
      if (frames[b].bytes == 0 || frames[a].bytes == 0) continue;
      beside[a].push_back(b);
      beside[b].push_back(a);
    }
  }
  constexpr std::size_t most_taken = 8;  // frames one try takes out, at most
  std::mt19937 random(1);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(random() % n); };
  std::size_t height = top - unit;
  auto above = [&](std::size_t f, const std::vector<std::size_t>& at) {
    return at[f] + frames[f].bytes > height ? at[f] + frames[f].bytes - height : 0;
  };
  // The frames above the height, and where each sits in that list.
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<std::size_t> high;
  std::vector<std::size_t> position(count, none);
  auto mark = [&](std::size_t f) {
    const bool is_high = above(f, offsets) > 0;
    if (is_high && position[f] == none) {
      position[f] = high.size();
      high.push_back(f);
    } else if (!is_high && position[f] != none) {
      position[high.back()] = position[f];
      high[position[f]] = high.back();
      high.pop_back();
      position[f] = none;
    }
  };
  for (std::size_t f = 0; f < count; ++f) mark(f);
  std::vector<std::size_t> trial = offsets;
  std::vector<char> taken_out(count, 0);
  std::vector<std::size_t> out;
  std::vector<byte_range> taken;
  while (effort > 0) {
    if (high.empty()) {  // the top came down: a unit lower next
      top = top_of(frames, offsets);
      if (top <= floor || top < unit) break;
      height = top - unit;
      for (std::size_t f = 0; f < count; ++f) mark(f);
    }
    // Out: a frame above the height, and a few alive with it.
    out.assign(1, high[pick(high.size())]);
    taken_out[out[0]] = 1;
    const std::size_t wanted = 1 + pick(most_taken);
    for (std::size_t attempt = 0; out.size() < wanted && attempt < 4 * most_taken; ++attempt) {
      const std::vector<std::size_t>& near = beside[out[pick(out.size())]];
      if (near.empty()) continue;
      const std::size_t f = near[pick(near.size())];
      if (taken_out[f] == 0) {
        taken_out[f] = 1;
        out.push_back(f);
      }
    }
    for (std::size_t k = out.size(); k > 1; --k) std::swap(out[k - 1], out[pick(k)]);  // the order to put back
    // Back in: each at the lowest offset free beside the frames in place.
    std::size_t before = 0;
    std::size_t after = 0;
    bool fits = true;
    for (std::size_t f : out) {
      before += above(f, offsets);
      taken.clear();
      for (std::size_t q : beside[f]) {
        if (taken_out[q] == 0) taken.emplace_back(trial[q], trial[q] + frames[q].bytes);
      }
      effort -= std::min(effort, beside[f].size() + 1);
      std::sort(taken.begin(), taken.end());
      trial[f] = find_gap(taken, frames[f].bytes, false);
      taken_out[f] = 0;
      after += above(f, trial);
      fits = fits && trial[f] + frames[f].bytes <= top;
    }
    if (fits && after <= before) {
      for (std::size_t f : out) {
        offsets[f] = trial[f];
        mark(f);
      }
    } else {
      for (std::size_t f : out) trial[f] = offsets[f];
    }
  }
  return offsets;
}

}  // namespace graphpool::plan::detail
