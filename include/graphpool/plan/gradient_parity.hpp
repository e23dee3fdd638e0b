#pragma once
/// @file gradient_parity.hpp
/// @brief Slot maps whose returned gradients need two regions: copies split by the parity of their
/// backward's place among the schedule's backwards.
///
/// A (chunk, copy) returns its input gradients at a fixed address, alive until the next backward runs,
/// so the gradients of consecutive backwards conflict. When every copy serves backwards of one parity
/// only (even or odd place in its schedule), consecutive backwards always differ in parity and the
/// parity is a 2-colouring: two gradient regions suffice. Maps chosen from the schedule can mix parities
/// in a copy and close an odd cycle (three regions). Splitting such a copy in two (one per parity, at
/// the same bytes, never alive together) costs captures, not bytes. Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "graphpool/plan/schedule.hpp"
#include "graphpool/plan/slot_map.hpp"

namespace graphpool::plan {

/// @brief Slot maps after split_by_backward_parity: `source[chunk][copy]` is the copy it was split from.
struct parity_maps {
  std::vector<slot_map> maps;
  std::vector<std::vector<int>> source;  ///< [chunk][copy]: the copy of the maps given that it comes from
  int copies = 0;                        ///< copies per chunk now
};

/// @return `maps` (over `copies` per chunk) with every copy of a chunk that has layers (`has_layers`)
/// and serves backwards of both parities split in two: the even ones keep the copy, the odd ones get a
/// new one. Parity: the backward's place among all backwards of its schedule.
[[nodiscard]] inline parity_maps split_by_backward_parity(const std::vector<schedule>& schedules,
                                                          std::vector<slot_map> maps, int copies,
                                                          const std::vector<bool>& has_layers) {
  const std::size_t chunks = has_layers.size();
  // parities[chunk][copy]: bit 0 when some even backward uses it, bit 1 for an odd one.
  std::vector<std::vector<int>> parities(chunks, std::vector<int>(static_cast<std::size_t>(copies), 0));
  std::vector<std::vector<std::vector<int>>> parity_of(maps.size());  // [schedule][chunk][microbatch]
  for (std::size_t k = 0; k < schedules.size(); ++k) {
    parity_of[k].assign(chunks, std::vector<int>(static_cast<std::size_t>(schedules[k].microbatches()), 0));
    int backwards = 0;
    for (const event& e : schedules[k].events()) {
      if (e.kind != phase::backward) continue;
      const int parity = backwards++ % 2;
      parity_of[k][static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(e.microbatch)] = parity;
      const int copy = maps[k].slots[static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(e.microbatch)];
      parities[static_cast<std::size_t>(e.chunk)][static_cast<std::size_t>(copy)] |= 1 << parity;
    }
  }
  parity_maps result;
  result.copies = copies;
  std::vector<std::vector<int>> odd_copy(chunks, std::vector<int>(static_cast<std::size_t>(copies), -1));
  std::vector<int> used(chunks, copies);
  for (std::size_t c = 0; c < chunks; ++c) {
    result.source.emplace_back(static_cast<std::size_t>(copies));
    for (int copy = 0; copy < copies; ++copy) result.source[c][static_cast<std::size_t>(copy)] = copy;
    if (!has_layers[c]) continue;
    for (int copy = 0; copy < copies; ++copy) {
      if (parities[c][static_cast<std::size_t>(copy)] != 3) continue;
      odd_copy[c][static_cast<std::size_t>(copy)] = used[c]++;
      result.source[c].push_back(copy);
      result.copies = std::max(result.copies, used[c]);
    }
  }
  for (std::size_t c = 0; c < chunks; ++c) result.source[c].resize(static_cast<std::size_t>(result.copies), 0);
  for (std::size_t k = 0; k < maps.size(); ++k) {
    for (std::size_t c = 0; c < maps[k].slots.size(); ++c) {
      for (std::size_t m = 0; m < maps[k].slots[c].size(); ++m) {
        int& copy = maps[k].slots[c][m];
        if (parity_of[k][c][m] == 1 && odd_copy[c][static_cast<std::size_t>(copy)] >= 0) {
          copy = odd_copy[c][static_cast<std::size_t>(copy)];
        }
      }
    }
  }
  result.maps = std::move(maps);
  return result;
}

}  // namespace graphpool::plan
