#pragma once
// Frames as intervals (lifetime x bytes) for the layout searches' tests: random ones, the most bytes
// alive at once, and a layout checked for overlaps and height (tests only).

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "graphpool/plan/copy_table.hpp"
#include "graphpool/plan/frame_intervals.hpp"

namespace graphpool::testing {

// Two frames alive together overlap in bytes, or one reaches above `height`: the first such, or empty.
inline std::string check_layout(const std::vector<plan::detail::frame_interval>& frames,
                                const std::vector<std::size_t>& offsets, std::size_t height) {
  if (offsets.size() != frames.size()) return "offsets for " + std::to_string(offsets.size()) + " frames";
  for (std::size_t a = 0; a < frames.size(); ++a) {
    if (offsets[a] + frames[a].bytes > height) return "frame " + std::to_string(a) + " above the height";
    for (std::size_t b = a + 1; b < frames.size(); ++b) {
      const bool together = frames[a].start < frames[b].end && frames[b].start < frames[a].end;
      const bool share = offsets[a] < offsets[b] + frames[b].bytes && offsets[b] < offsets[a] + frames[a].bytes;
      if (together && share) return "frames " + std::to_string(a) + " and " + std::to_string(b) + " overlap";
    }
  }
  return {};
}

inline std::size_t most_alive(const std::vector<plan::detail::frame_interval>& frames) {
  std::size_t most = 0;
  for (const plan::detail::frame_interval& f : frames) {
    std::size_t alive = 0;
    for (const plan::detail::frame_interval& g : frames) alive += g.start <= f.start && f.start < g.end ? g.bytes : 0;
    most = std::max(most, alive);
  }
  return most;
}

// 2 to 41 frames born in steps [0, 60), alive 1 to 20 steps, of 1 to 9 times `unit` bytes.
inline std::vector<plan::detail::frame_interval> random_frames(std::mt19937& random, std::size_t unit) {
  std::vector<plan::detail::frame_interval> frames(2 + random() % 40);
  for (plan::detail::frame_interval& f : frames) {
    f.start = random() % 60;
    f.end = f.start + 1 + random() % 20;
    f.bytes = (1 + random() % 9) * unit;
  }
  return frames;
}

inline std::size_t total_bytes(const std::vector<plan::detail::frame_interval>& frames) {
  std::size_t total = 0;
  for (const plan::detail::frame_interval& f : frames) total += f.bytes;
  return total;
}

// The first `keep` of `frames`, every `step`-th of those again (same lifetime and bytes: layers of one
// microbatch alike).
inline std::vector<plan::detail::frame_interval> with_twins(std::vector<plan::detail::frame_interval> frames,
                                                            std::size_t keep, std::size_t step) {
  frames.resize(std::min(frames.size(), keep));
  const std::size_t first = frames.size();
  for (std::size_t f = 0; f < first; f += step) frames.push_back(frames[f]);
  return frames;
}

// Every frame above all the frames before it: a layout of any frames, at their total bytes.
inline std::vector<std::size_t> stacked(const std::vector<plan::detail::frame_interval>& frames) {
  std::vector<std::size_t> offsets;
  std::size_t top = 0;
  for (const plan::detail::frame_interval& f : frames) {
    offsets.push_back(top);
    top += f.bytes;
  }
  return offsets;
}

// Random frames sorted by start, laid out lowest first in a random order (a poor layout to start from).
struct start_layout {
  std::vector<plan::detail::frame_interval> frames;
  std::vector<std::size_t> offsets;
};

inline start_layout random_layout(std::mt19937& random) {
  start_layout result;
  result.frames = random_frames(random, 16);
  std::stable_sort(result.frames.begin(), result.frames.end(),
                   [](const plan::detail::frame_interval& a, const plan::detail::frame_interval& b) {
                     return a.start < b.start;
                   });
  const std::size_t count = result.frames.size();
  std::vector<std::size_t> order(count);
  for (std::size_t f = 0; f < count; ++f) order[f] = f;
  for (std::size_t k = count; k > 1; --k) std::swap(order[k - 1], order[random() % k]);
  result.offsets.assign(count, 0);
  std::vector<char> placed(count, 0);
  for (std::size_t f : order) {
    std::vector<plan::detail::byte_range> taken;
    for (std::size_t q = 0; q < count; ++q) {
      const bool together = result.frames[q].start < result.frames[f].end && result.frames[f].start < result.frames[q].end;
      if (placed[q] != 0 && together) taken.emplace_back(result.offsets[q], result.offsets[q] + result.frames[q].bytes);
    }
    std::sort(taken.begin(), taken.end());
    result.offsets[f] = plan::detail::find_gap(taken, result.frames[f].bytes, false);
    placed[f] = 1;
  }
  return result;
}

}  // namespace graphpool::testing
