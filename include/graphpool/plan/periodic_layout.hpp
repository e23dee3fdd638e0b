#pragma once
/// @file periodic_layout.hpp
/// @brief A layout of one schedule's frames that repeats with its steady state: the frames of a few periods
/// laid out on a ring of time (rising_layout.hpp, lowest first), every microbatch then placed as the one a
/// whole number of those periods away on the ring.
///
/// Interleaved schedules repeat: microbatch m + q of a chunk lives exactly `events` later than m (q is
/// Megatron's group). Laid out at its steady state's shape, a schedule's frames can share bytes only where
/// the ring says they may; warm-up forwards start later and cool-down backwards end earlier than the
/// steady state's would, so each real frame lives inside its ring frame's lifetime and the ring's layout
/// holds for it too (checked, not assumed). A ring of k periods is small (k x q microbatches of each chunk),
/// so the exact search reaches heights on it that the time sweeps miss on the whole schedule, and the
/// number of periods matters: on PP 2 rank 0, VPP 4, M 128 (chunks of 77, 40, 40 and 188 MiB) rings of 2
/// and 4 periods need 1.100 of the live bound, a ring of 3 fits in 1.02-1.04. A ring of a chunk's layers
/// as one block is smaller, and one of its layers apart can pack where no ring of blocks does: PP 2 rank 0,
/// VPP 2, M 64, chunks of 280 + 220 and 109 + 205 MiB, blocks 1.080 of the live bound, layers apart 1.032
/// (CP-SAT: no ring of blocks packs under 1.05, a ring of 6 periods of layers does). Host-only: no CUDA
/// header.

#include <algorithm>
#include <cstddef>
#include <vector>

#include "graphpool/plan/bounded_layout.hpp"
#include "graphpool/plan/frame_intervals.hpp"
#include "graphpool/plan/rising_layout.hpp"

namespace graphpool::plan::detail {

/// How a schedule repeats: microbatch m + `microbatches` of every chunk lives `events` later than m.
struct schedule_period {
  int microbatches = 0;  ///< 0: no period found
  std::size_t events = 0;
};

/// @return the shortest period of `items` (the lifetimes of one schedule's chunks with bytes, by chunk
/// and microbatch) over the middle half of its microbatches; none where it has fewer than 8.
[[nodiscard]] inline schedule_period period_of(const std::vector<lifetime>& items,
                                               const std::vector<std::size_t>& chunk_bytes) {
  int microbatches = 0;
  for (const lifetime& item : items) microbatches = std::max(microbatches, item.microbatch + 1);
  if (microbatches < 8) return {};
  std::vector<std::vector<const lifetime*>> of(chunk_bytes.size(),
                                               std::vector<const lifetime*>(static_cast<std::size_t>(microbatches)));
  for (const lifetime& item : items) {
    of[static_cast<std::size_t>(item.chunk)][static_cast<std::size_t>(item.microbatch)] = &item;
  }
  const int from = microbatches / 4;
  const int to = microbatches - microbatches / 4;  // exclusive
  for (int q = 1; from + q < to; ++q) {
    std::size_t events = 0;
    bool holds = true;
    for (std::size_t c = 0; c < chunk_bytes.size() && holds; ++c) {
      if (chunk_bytes[c] == 0) continue;
      for (int m = from; m + q < to && holds; ++m) {
        const lifetime* a = of[c][static_cast<std::size_t>(m)];
        const lifetime* b = of[c][static_cast<std::size_t>(m + q)];
        if (a == nullptr || b == nullptr || b->start <= a->start) {
          holds = false;
          break;
        }
        if (events == 0) events = b->start - a->start;
        holds = b->start - a->start == events && b->end >= a->end && b->end - a->end == events;
      }
    }
    if (holds && events > 0) return {q, events};
  }
  return {};
}

/// Whether no two of `frames` alive together share bytes at `offsets`.
[[nodiscard]] inline bool layout_holds(const std::vector<frame_interval>& frames,
                                       const std::vector<std::size_t>& offsets) {
  std::vector<std::size_t> by_start(frames.size());
  for (std::size_t f = 0; f < frames.size(); ++f) by_start[f] = f;
  std::sort(by_start.begin(), by_start.end(),
            [&](std::size_t a, std::size_t b) { return frames[a].start < frames[b].start; });
  std::vector<std::size_t> alive;
  for (std::size_t f : by_start) {
    alive.erase(
        std::remove_if(alive.begin(), alive.end(), [&](std::size_t g) { return frames[g].end <= frames[f].start; }),
        alive.end());
    for (std::size_t g : alive) {
      if (offsets[f] < offsets[g] + frames[g].bytes && offsets[g] < offsets[f] + frames[f].bytes) return false;
    }
    alive.push_back(f);
  }
  return true;
}

/// The most frames a ring may hold: the exact search's reach.
inline constexpr std::size_t periodic_frames_limit = 160;

/// @return the offsets (as frames_of lists the frames) of the lowest layout found of `items` that repeats
/// with the schedule's period, over rings of 1 to 8 periods, each searched at `floor` (the live bound) and
/// then at heights bisected between it and the lowest layout found so far, to within 1/400 of the floor,
/// with `effort` per height; empty where the schedule has no period or no ring's layout was found (or
/// held). `whole`: each chunk's layers laid out back to back, as one block; else every layer apart (a
/// ring of more frames, which can pack where the blocks cannot).
[[nodiscard]] inline std::vector<std::size_t> periodic_layout(const std::vector<std::vector<std::size_t>>& frame_bytes,
                                                              const std::vector<std::size_t>& chunk_bytes,
                                                              const std::vector<lifetime>& items, std::size_t floor,
                                                              std::size_t effort, bool whole) {
  const schedule_period period = period_of(items, chunk_bytes);
  if (period.microbatches == 0) return {};
  int microbatches = 0;
  for (const lifetime& item : items) microbatches = std::max(microbatches, item.microbatch + 1);
  // What an item of each chunk lays out: its block, or its layers (as blocks_of and frames_of list them).
  std::vector<std::vector<std::size_t>> pieces(chunk_bytes.size());
  for (std::size_t c = 0; c < chunk_bytes.size(); ++c) {
    if (whole) {
      if (chunk_bytes[c] > 0) pieces[c].push_back(chunk_bytes[c]);
    } else {
      for (std::size_t layer : frame_bytes[c]) {
        if (layer > 0) pieces[c].push_back(layer);
      }
    }
  }
  const std::vector<frame_interval> units = whole ? blocks_of(chunk_bytes, items) : frames_of(frame_bytes, items);
  std::vector<std::size_t> lowest;
  std::size_t high = static_cast<std::size_t>(-1);
  for (int k = 1; k <= 8 && k * period.microbatches * 2 <= microbatches; ++k) {
    // The ring: k periods of microbatches from the middle of the schedule, their lifetimes folded.
    const int ring_microbatches = k * period.microbatches;
    const int first = (microbatches - ring_microbatches) / 2;
    const std::size_t ring = static_cast<std::size_t>(k) * period.events;
    std::vector<frame_interval> arcs;
    std::vector<std::size_t> arc_of;  // per unit: its ring frame
    std::vector<std::vector<std::size_t>> arc_at(chunk_bytes.size(),  // an item's first ring frame
                                                 std::vector<std::size_t>(static_cast<std::size_t>(ring_microbatches)));
    bool fits = true;
    for (const lifetime& item : items) {
      if (item.microbatch < first || item.microbatch >= first + ring_microbatches) continue;
      const std::vector<std::size_t>& bytes = pieces[static_cast<std::size_t>(item.chunk)];
      if (bytes.empty()) continue;
      if (item.end - item.start >= ring) fits = false;
      arc_at[static_cast<std::size_t>(item.chunk)][static_cast<std::size_t>(item.microbatch - first)] = arcs.size();
      for (std::size_t piece : bytes) arcs.push_back({item.start, item.end, piece});
    }
    if (!fits) continue;  // a microbatch would meet itself a ring later: more periods
    if (arcs.size() > periodic_frames_limit) break;
    for (const lifetime& item : items) {
      const std::size_t count = pieces[static_cast<std::size_t>(item.chunk)].size();
      const int j = ((item.microbatch - first) % ring_microbatches + ring_microbatches) % ring_microbatches;
      for (std::size_t piece = 0; piece < count; ++piece) {
        arc_of.push_back(arc_at[static_cast<std::size_t>(item.chunk)][static_cast<std::size_t>(j)] + piece);
      }
    }
    // Every real unit at its ring frame's offset, where that holds.
    auto unrolled = [&](const std::vector<std::size_t>& ring_offsets) {
      std::vector<std::size_t> offsets(units.size());
      for (std::size_t u = 0; u < units.size(); ++u) offsets[u] = ring_offsets[arc_of[u]];
      if (!layout_holds(units, offsets)) offsets.clear();
      return offsets;
    };
    rising_search search(arcs, ring);
    auto found_under = [&](std::size_t height) {
      std::vector<std::size_t> offsets = rising_layout(search, height, effort);
      if (offsets.empty()) return false;
      offsets = unrolled(offsets);
      if (offsets.empty()) return false;
      high = top_of(units, offsets);
      lowest = std::move(offsets);
      return true;
    };
    if (lowest.empty()) {
      std::size_t total = 0;
      for (const frame_interval& arc : arcs) total += arc.bytes;
      if (!found_under(total)) continue;  // the ring's layout does not hold for the real frames
    }
    if (high <= floor || found_under(floor)) break;
    std::size_t low = floor;
    while (high > low && high - low > floor / 400) {
      const std::size_t height = low + (high - low) / 2;
      if (!found_under(height)) low = height;
    }
    if (high <= floor) break;
  }
  return whole && !lowest.empty() ? layers_of(frame_bytes, items, lowest) : lowest;
}

/// The anchor schedule's frames laid out by periodic_layout, bound to copies of their own: each chunk's
/// layers back to back, then, where that is above `floor` and a chunk has layers of bytes to lay out
/// apart, every layer apart (kept where lower); invalid where none was found or it takes more than
/// `budget` copies of a chunk.
[[nodiscard]] inline anchor_layout periodic_anchor(const std::vector<std::vector<std::size_t>>& frame_bytes,
                                                   const std::vector<std::size_t>& chunk_bytes,
                                                   const std::vector<lifetime>& items, std::size_t floor, int budget,
                                                   std::size_t effort) {
  const std::vector<frame_interval> frames = frames_of(frame_bytes, items);
  anchor_layout best{copy_table(frame_bytes), {}, 0, false};
  bool layered = false;  // a chunk has two layers of bytes or more
  for (const std::vector<std::size_t>& layers : frame_bytes) {
    layered = layered || std::count_if(layers.begin(), layers.end(), [](std::size_t b) { return b > 0; }) > 1;
  }
  for (bool whole : {true, false}) {
    if (!whole && (!layered || (best.valid && best.footprint <= floor))) break;
    const std::vector<std::size_t> offsets = periodic_layout(frame_bytes, chunk_bytes, items, floor, effort, whole);
    if (offsets.empty()) continue;
    anchor_layout candidate = anchor_of(frame_bytes, items, frames, offsets, budget);
    if (candidate.valid && (!best.valid || candidate.footprint < best.footprint)) best = std::move(candidate);
  }
  return best;
}

}  // namespace graphpool::plan::detail
