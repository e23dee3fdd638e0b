#pragma once
// A packed layout checked by replaying every schedule over it, and the lowest of the layout packings
// checked so (tests only).

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/plan/packed_maps.hpp"
#include "graphpool/plan/planner.hpp"

namespace graphpool::testing {

inline std::size_t chunk_bytes_of(const std::vector<std::vector<std::size_t>>& frame_bytes, int chunk) {
  const auto& layers = frame_bytes[static_cast<std::size_t>(chunk)];
  return std::accumulate(layers.begin(), layers.end(), std::size_t{0});
}

// Replays every schedule over a packed layout: copies of one chunk alive together differ, no two live
// copies share bytes, and the footprint is the highest copy's top. Empty string when all holds.
inline std::string check_packed(const std::vector<plan::schedule>& schedules,
                                const std::vector<std::vector<std::size_t>>& frame_bytes, const plan::packed_maps& packed) {
  std::size_t top = 0;
  for (std::size_t c = 0; c < packed.offsets.size(); ++c) {
    for (const std::vector<std::size_t>& copy : packed.offsets[c]) {
      for (std::size_t l = 0; l < copy.size(); ++l) top = frame_bytes[c][l] == 0 ? top : std::max(top, copy[l] + frame_bytes[c][l]);
    }
  }
  if (top != packed.footprint) return "footprint " + std::to_string(packed.footprint) + " but top " + std::to_string(top);
  for (std::size_t k = 0; k < schedules.size(); ++k) {
    std::vector<std::pair<int, int>> alive;  // (chunk, copy)
    for (const plan::event& e : schedules[k].events()) {
      const int copy = packed.maps[k].slots[static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(e.microbatch)];
      if (e.kind == plan::phase::backward) {
        alive.erase(std::find(alive.begin(), alive.end(), std::make_pair(e.chunk, copy)));
        continue;
      }
      for (const auto& [chunk, other] : alive) {
        if (chunk == e.chunk && other == copy) return "schedule " + std::to_string(k) + ": a copy alive twice";
        if (chunk_bytes_of(frame_bytes, e.chunk) == 0 || chunk_bytes_of(frame_bytes, chunk) == 0) continue;
        const auto& mine = packed.offsets[static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(copy)];
        const auto& theirs = packed.offsets[static_cast<std::size_t>(chunk)][static_cast<std::size_t>(other)];
        for (std::size_t a = 0; a < mine.size(); ++a) {
          for (std::size_t b = 0; b < theirs.size(); ++b) {
            const std::size_t wa = frame_bytes[static_cast<std::size_t>(e.chunk)][a];
            const std::size_t wb = frame_bytes[static_cast<std::size_t>(chunk)][b];
            if (wa > 0 && wb > 0 && mine[a] < theirs[b] + wb && theirs[b] < mine[a] + wa) {
              return "schedule " + std::to_string(k) + ": live copies share bytes";
            }
          }
        }
      }
      alive.emplace_back(e.chunk, copy);
    }
  }
  return {};
}

// The lowest footprint among the layout packings `which` selects, each packing `schedules` over
// `frame_bytes` (1000 copies per chunk at most) and checked by check_packed; SIZE_MAX when it selects
// none. `problem`, when empty, gets the first packing that finds no layout or fails the check.
template <class Which>
std::size_t lowest_packed(const std::vector<plan::schedule>& schedules,
                          const std::vector<std::vector<std::size_t>>& frame_bytes, Which which, std::string& problem) {
  std::size_t lowest = static_cast<std::size_t>(-1);
  for (std::size_t k = 0; k < std::size(plan::layout_packings); ++k) {
    const plan::packing& how = plan::layout_packings[k];
    if (!which(how)) continue;
    const plan::packed_maps packed = plan::pack_maps(schedules, frame_bytes, 1000, how);
    const std::string failed = packed.valid ? check_packed(schedules, frame_bytes, packed) : "no layout";
    if (!failed.empty() && problem.empty()) problem = "layout packing " + std::to_string(k) + ": " + failed;
    if (packed.valid) lowest = std::min(lowest, packed.footprint);
  }
  return lowest;
}

}  // namespace graphpool::testing
