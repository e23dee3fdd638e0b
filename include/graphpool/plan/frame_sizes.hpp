#pragma once
/// @file frame_sizes.hpp
/// @brief The planner's input checked, and every frame's bytes: the max over its branches (or their
/// overrides), rounded up to the alignment. Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "graphpool/alignment.hpp"
#include "graphpool/error.hpp"
#include "graphpool/plan/liveness.hpp"
#include "graphpool/plan/problem.hpp"

namespace graphpool::plan::detail {

/// Chunk c's layer count: problem::layers_per_chunk holds one for all chunks or one per chunk.
[[nodiscard]] inline int layers_of(const problem& p, int c) {
  return p.layers_per_chunk.size() == 1 ? p.layers_per_chunk[0] : p.layers_per_chunk[static_cast<std::size_t>(c)];
}

inline void validate(const problem& p, int chunks) {
  if (p.branches.empty()) throw error("planner: no branch given; give at least one (name and saved bytes per layer)");
  if (!is_valid_alignment(p.alignment)) {
    throw error("planner: alignment " + std::to_string(p.alignment) + " is not a power of two");
  }
  if (p.layers_per_chunk.size() != 1 && p.layers_per_chunk.size() != static_cast<std::size_t>(chunks)) {
    throw error("planner: " + std::to_string(p.layers_per_chunk.size()) + " layer counts given for " +
                std::to_string(chunks) + " chunk(s) (problem::layers_per_chunk; --layers in graphpool-plan); "
                "give one for every chunk, or one for all");
  }
  std::size_t layers_total = 0;  // every chunk's layers: a plan holds them once per slot, at least one slot
  for (int c = 0; c < chunks; ++c) {
    const int layers = layers_of(p, c);
    if (layers < 0) {
      throw error("planner: chunk " + std::to_string(c) + " has " + std::to_string(layers) +
                  " layers; a layer count cannot be negative");
    }
    layers_total += static_cast<std::size_t>(layers);
  }
  if (layers_total > max_frames) {
    throw error("planner: the chunks have " + std::to_string(layers_total) + " layers in all, more than the " +
                std::to_string(max_frames) + " frames one plan may hold (each slot holds every layer once)");
  }
  // One override per (chunk, layer, branch): a second would silently replace the first. Sorted, so that a
  // measured model's overrides (one per layer and branch) are checked in n log n.
  std::vector<std::size_t> by_frame(p.overrides.size());
  std::iota(by_frame.begin(), by_frame.end(), std::size_t{0});
  auto key = [&p](std::size_t i) { return std::tie(p.overrides[i].chunk, p.overrides[i].layer, p.overrides[i].branch); };
  std::sort(by_frame.begin(), by_frame.end(),
            [&](std::size_t a, std::size_t b) { return key(a) < key(b) || (key(a) == key(b) && a < b); });
  for (std::size_t k = 1; k < by_frame.size(); ++k) {
    if (key(by_frame[k - 1]) == key(by_frame[k])) {
      const saved_bytes_override& o = p.overrides[by_frame[k]];
      throw error("planner: overrides " + std::to_string(by_frame[k - 1]) + " and " + std::to_string(by_frame[k]) +
                  " both give chunk=" + std::to_string(o.chunk) + ",layer=" + std::to_string(o.layer) + ",branch=" +
                  o.branch + " saved bytes; give each once");
    }
  }
  // Sizes stay far from overflow: sums over every frame of every branch fit in 64 bits.
  auto check_size = [](std::size_t bytes, const std::string& what) {
    if (bytes > max_frame_bytes) {
      throw error("planner: " + what + " of " + std::to_string(bytes) + " bytes is more than the " +
                  std::to_string(max_frame_bytes) + " (1 TiB) one frame may hold");
    }
  };
  for (const saved_bytes_override& o : p.overrides) check_size(o.saved, "override for branch '" + o.branch + "'");
  check_size(p.alignment, "alignment");
  for (std::size_t b = 0; b < p.branches.size(); ++b) {
    check_size(p.branches[b].saved_per_layer, "branch '" + p.branches[b].name + "' saved bytes");
    check_size(p.branches[b].grad_per_slot, "branch '" + p.branches[b].name + "' gradient bytes");
    if (p.branches[b].name.empty()) throw error("planner: branch " + std::to_string(b) + " has no name");
    for (std::size_t o = 0; o < b; ++o) {
      if (p.branches[o].name == p.branches[b].name) {
        throw error("planner: two branches are named '" + p.branches[b].name + "'; branch names must differ");
      }
    }
  }
}

/// Every frame's bytes (the max over its branches, rounded up to the alignment) per (chunk, layer).
struct frame_sizes {
  std::vector<int> layers_per_chunk;
  std::vector<std::string> branches;
  std::vector<std::vector<std::size_t>> bytes;  ///< [chunk][layer]
  std::vector<std::size_t> chunk_bytes;         ///< a (chunk, slot) group: the sum over its layers
  std::size_t naive_per_slot = 0;               ///< every branch's own bytes of one slot of every chunk
};

[[nodiscard]] inline frame_sizes size_frames(const problem& p, int chunks) {
  frame_sizes sizes;
  for (int c = 0; c < chunks; ++c) sizes.layers_per_chunk.push_back(layers_of(p, c));
  for (const branch_sizes& b : p.branches) sizes.branches.push_back(b.name);
  // Saved bytes per (chunk, layer, branch).
  std::vector<std::vector<std::vector<std::size_t>>> saved(static_cast<std::size_t>(chunks));
  for (int c = 0; c < chunks; ++c) {
    for (int l = 0; l < sizes.layers_per_chunk[static_cast<std::size_t>(c)]; ++l) {
      std::vector<std::size_t> per_branch;
      for (const branch_sizes& b : p.branches) per_branch.push_back(b.saved_per_layer);
      saved[static_cast<std::size_t>(c)].push_back(per_branch);
    }
  }
  for (const saved_bytes_override& o : p.overrides) {
    // Named as graphpool-plan's --frame-bytes spells it, so a user of either finds the one to change.
    auto named = [&o] {
      return "planner: saved bytes override chunk=" + std::to_string(o.chunk) + ",layer=" + std::to_string(o.layer) +
             ",branch=" + o.branch + " (problem::overrides; --frame-bytes in graphpool-plan): ";
    };
    if (o.chunk < 0 || o.chunk >= chunks) {
      throw error(named() + "the schedules have " + std::to_string(chunks) + " chunk(s), 0-based: chunk=0.." +
                  std::to_string(chunks - 1));
    }
    const int layers = sizes.layers_per_chunk[static_cast<std::size_t>(o.chunk)];
    if (o.layer < 0 || o.layer >= layers) {
      throw error(named() + "chunk " + std::to_string(o.chunk) +
                  (layers == 0 ? std::string(" has no layers") : " has " + std::to_string(layers) +
                                                                     " layer(s), 0-based: layer=0.." + std::to_string(layers - 1)));
    }
    const auto found = std::find(sizes.branches.begin(), sizes.branches.end(), o.branch);
    if (found == sizes.branches.end()) {
      throw error(named() + "branch '" + o.branch + "' is not declared; declare it (problem::branches, --branch) "
                  "or name a declared one");
    }
    saved[static_cast<std::size_t>(o.chunk)][static_cast<std::size_t>(o.layer)]
         [static_cast<std::size_t>(found - sizes.branches.begin())] = o.saved;
  }
  for (int c = 0; c < chunks; ++c) {
    std::vector<std::size_t>& row = sizes.bytes.emplace_back();
    for (const std::vector<std::size_t>& per_branch : saved[static_cast<std::size_t>(c)]) {
      row.push_back(align_up(*std::max_element(per_branch.begin(), per_branch.end()), p.alignment));
      for (std::size_t bytes : per_branch) sizes.naive_per_slot += align_up(bytes, p.alignment);
    }
    sizes.chunk_bytes.push_back(std::accumulate(row.begin(), row.end(), std::size_t{0}));
  }
  return sizes;
}

}  // namespace graphpool::plan::detail
