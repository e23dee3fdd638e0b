#pragma once
/// @file frame_intervals.hpp
/// @brief One schedule's frames as intervals (lifetime x bytes), layer by layer or a chunk's layers as
/// one block, and a layout of them bound to captured copies: microbatches whose layers sit at the same
/// offsets share a copy. Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <utility>
#include <vector>

#include "graphpool/plan/copy_table.hpp"

namespace graphpool::plan::detail {

/// One frame of one schedule: alive from event `start` to event `end`, `bytes` large.
struct frame_interval {
  std::size_t start = 0;
  std::size_t end = 0;
  std::size_t bytes = 0;
};

/// The frames of `items` (every layer of bytes, item by item, layer by layer); `frame_bytes` is [chunk][layer].
[[nodiscard]] inline std::vector<frame_interval> frames_of(const std::vector<std::vector<std::size_t>>& frame_bytes,
                                                           const std::vector<lifetime>& items) {
  std::vector<frame_interval> frames;
  for (const lifetime& item : items) {
    for (std::size_t bytes : frame_bytes[static_cast<std::size_t>(item.chunk)]) {
      if (bytes > 0) frames.push_back({item.start, item.end, bytes});
    }
  }
  return frames;
}

/// One frame per item of a chunk with bytes: its layers back to back, as one block.
[[nodiscard]] inline std::vector<frame_interval> blocks_of(const std::vector<std::size_t>& chunk_bytes,
                                                           const std::vector<lifetime>& items) {
  std::vector<frame_interval> blocks;
  for (const lifetime& item : items) {
    const std::size_t bytes = chunk_bytes[static_cast<std::size_t>(item.chunk)];
    if (bytes > 0) blocks.push_back({item.start, item.end, bytes});
  }
  return blocks;
}

/// The offsets of every layer (as frames_of lists them) of blocks laid out at `block_offsets` (as
/// blocks_of lists them): each block's layers back to back from its offset.
[[nodiscard]] inline std::vector<std::size_t> layers_of(const std::vector<std::vector<std::size_t>>& frame_bytes,
                                                        const std::vector<lifetime>& items,
                                                        const std::vector<std::size_t>& block_offsets) {
  std::vector<std::size_t> offsets;
  std::size_t block = 0;
  for (const lifetime& item : items) {
    std::size_t cursor = 0;
    bool any = false;
    for (std::size_t bytes : frame_bytes[static_cast<std::size_t>(item.chunk)]) {
      if (bytes == 0) continue;
      offsets.push_back(block_offsets[block] + cursor);
      cursor += bytes;
      any = true;
    }
    block += any ? 1 : 0;
  }
  return offsets;
}

/// The largest number of bytes every one of `frames` is a multiple of (their gcd; 1 with none). Under a
/// height that is a multiple of it, a layout puts every frame at a multiple of it (at sums of frame
/// bytes, or at a height less some), so frames stay as aligned as their sizes are: a search rounds the
/// heights it is given down to it.
[[nodiscard]] inline std::size_t byte_unit(const std::vector<frame_interval>& frames) {
  std::size_t unit = 0;
  for (const frame_interval& f : frames) unit = std::gcd(unit, f.bytes);
  return unit == 0 ? 1 : unit;
}

/// The top of the highest of `frames` at `offsets`.
[[nodiscard]] inline std::size_t top_of(const std::vector<frame_interval>& frames, const std::vector<std::size_t>& offsets) {
  std::size_t top = 0;
  for (std::size_t f = 0; f < frames.size(); ++f) top = std::max(top, offsets[f] + frames[f].bytes);
  return top;
}

/// The most bytes of `frames` alive at once (at some frame's start): no layout of them is lower.
[[nodiscard]] inline std::size_t most_bytes_alive(const std::vector<frame_interval>& frames) {
  std::size_t most = 0;
  for (const frame_interval& f : frames) {
    std::size_t alive = 0;
    for (const frame_interval& g : frames) alive += g.start <= f.start && f.start < g.end ? g.bytes : 0;
    most = std::max(most, alive);
  }
  return most;
}

/// Binds each of `items`, its frames laid out at `offsets` (as frames_of lists them), to the copy of its
/// chunk whose layers sit at the same offsets, adding copies where none does. Returns false, and adds
/// nothing, when that takes more than `budget` copies of a chunk. `copy_of`: a copy id per item (-1: a
/// chunk of no bytes).
[[nodiscard]] inline bool add_copies(copy_table& copies, const std::vector<lifetime>& items,
                                     const std::vector<std::size_t>& offsets, int budget,
                                     std::vector<std::ptrdiff_t>& copy_of) {
  std::vector<std::pair<int, std::vector<std::size_t>>> added;  // (chunk, offsets per layer), not yet in `copies`
  std::vector<std::ptrdiff_t> found(items.size(), -1);            // a copy id, or -2 - an index into `added`
  std::vector<std::size_t> of_chunk;                               // copies per chunk, with those added
  std::size_t f = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const int chunk = items[i].chunk;
    const std::vector<std::size_t>& layers = copies.layers(chunk);
    std::vector<std::size_t> placed(layers.size(), 0);
    bool any = false;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      if (layers[l] == 0) continue;
      placed[l] = offsets[f++];
      any = true;
    }
    if (!any) continue;
    for (std::size_t same : copies.of_chunk(chunk)) {
      if (copies.offsets(same) == placed) found[i] = static_cast<std::ptrdiff_t>(same);
    }
    for (std::size_t a = 0; a < added.size() && found[i] == -1; ++a) {
      if (added[a].first == chunk && added[a].second == placed) found[i] = -2 - static_cast<std::ptrdiff_t>(a);
    }
    if (found[i] != -1) continue;
    const auto c = static_cast<std::size_t>(chunk);
    if (of_chunk.size() <= c) of_chunk.resize(c + 1, 0);
    if (of_chunk[c] == 0) of_chunk[c] = copies.of_chunk(chunk).size();
    if (static_cast<int>(of_chunk[c]) >= budget) return false;
    ++of_chunk[c];
    found[i] = -2 - static_cast<std::ptrdiff_t>(added.size());
    added.emplace_back(chunk, std::move(placed));
  }
  std::vector<std::size_t> ids;
  for (auto& [chunk, placed] : added) ids.push_back(copies.add(chunk, std::move(placed)));
  copy_of.assign(items.size(), -1);
  for (std::size_t i = 0; i < items.size(); ++i) {
    copy_of[i] = found[i] <= -2 ? static_cast<std::ptrdiff_t>(ids[static_cast<std::size_t>(-2 - found[i])]) : found[i];
  }
  return true;
}

/// The anchor schedule's `items` bound to copies of their own by a layout of its frames (`frames` at
/// `offsets`, as frames_of lists them), with its footprint; invalid past `budget` copies of a chunk.
[[nodiscard]] inline anchor_layout anchor_of(const std::vector<std::vector<std::size_t>>& frame_bytes,
                                             const std::vector<lifetime>& items,
                                             const std::vector<frame_interval>& frames,
                                             const std::vector<std::size_t>& offsets, int budget) {
  anchor_layout result{copy_table(frame_bytes), std::vector<std::ptrdiff_t>(items.size(), -1), 0, true};
  result.valid = add_copies(result.copies, items, offsets, budget, result.copy_of);
  if (result.valid) result.footprint = top_of(frames, offsets);
  return result;
}

/// The map of schedule `s` whose `items` are bound to copies by `copy_of` (a copy id per item, -1: a chunk
/// of no bytes, left -1 in the map).
[[nodiscard]] inline slot_map bound_map(const schedule& s, const std::vector<lifetime>& items, const copy_table& copies,
                                        const std::vector<std::ptrdiff_t>& copy_of) {
  slot_map map{s.name(), s.microbatches(), {}};
  for (int c = 0; c < s.chunks(); ++c) map.slots.emplace_back(static_cast<std::size_t>(s.microbatches()), -1);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (copy_of[i] < 0) continue;
    map.slots[static_cast<std::size_t>(items[i].chunk)][static_cast<std::size_t>(items[i].microbatch)] =
        copies.index(static_cast<std::size_t>(copy_of[i]));
  }
  return map;
}

/// Every copy's offsets, as packed_maps holds them: [chunk][copy][layer].
[[nodiscard]] inline std::vector<std::vector<std::vector<std::size_t>>> offsets_by_chunk(const copy_table& copies,
                                                                                         std::size_t chunks) {
  std::vector<std::vector<std::vector<std::size_t>>> offsets(chunks);
  for (std::size_t id = 0; id < copies.size(); ++id) {
    offsets[static_cast<std::size_t>(copies.chunk(id))].push_back(copies.offsets(id));
  }
  return offsets;
}

}  // namespace graphpool::plan::detail
