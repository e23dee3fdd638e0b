#pragma once
/// @file own_layout.hpp
/// @brief A count of a union that finds no replay over the copies laid out so far, laid out by itself
/// with the sweep and bound to copies: those whose layers sit where its layout puts them, and new ones.
/// Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "graphpool/plan/copy_table.hpp"
#include "graphpool/plan/frame_intervals.hpp"
#include "graphpool/plan/lowest_sweep.hpp"

namespace graphpool::plan::detail {

/// The sweeps' last layouts of the counts laid out by themselves: the next one starts from their choices.
struct own_layout_hints {
  swept_layout blocks;  ///< of chunks laid out as whole blocks
  swept_layout frames;  ///< of frames laid out one by one
};

/// How much of the effort left a count laid out by itself may spend: 1 / `share_of_left` of it, or
/// `equal_share` where that is 0 (packing::own_layout_share).
struct own_layout_effort {
  unsigned share_of_left = 0;
  std::size_t equal_share = 0;
};

/// Lays `items` (one count of a union) out by itself, at `footprint` or as little above as the sweep
/// finds, and binds them to copies (add_copies): each chunk's layers as one block (so other counts share
/// its copies more often), else (no layout within `budget` copies) its frames one by one. With
/// `lower_frames`, where the blocks rise above `footprint` the frames' layout is bound first if lower
/// (frames seldom sit as another microbatch's do, so they open about a copy per microbatch).
/// @return a copy id per item (-1: a chunk of no bytes), or empty when no layout fits the budget;
/// `footprint` is raised to the layout's top, `effort` spent, and the hint of the layout bound replaced.
[[nodiscard]] inline std::vector<std::ptrdiff_t> lay_out_alone(
    copy_table& copies, const std::vector<std::vector<std::size_t>>& frame_bytes,
    const std::vector<std::size_t>& chunk_bytes, const std::vector<lifetime>& items, int budget,
    std::size_t& footprint, std::size_t& effort, own_layout_effort share, unsigned restarts, bool lower_frames,
    own_layout_hints& hints) {
  struct laid {
    bool whole;
    std::vector<frame_interval> frames;
    swept_layout layout;
    std::size_t top;
  };
  auto lay_out = [&](bool whole) {
    laid way{whole, whole ? blocks_of(chunk_bytes, items) : frames_of(frame_bytes, items), {}, 0};
    if (way.frames.empty()) return way;
    const swept_layout& hint = whole ? hints.blocks : hints.frames;
    const std::size_t allowed = share.share_of_left > 0 ? effort / share.share_of_left : share.equal_share;
    way.layout = lowest_sweep(way.frames, footprint, footprint + footprint / 2, allowed, restarts,
                              hint.offsets.empty() ? nullptr : &hint);
    effort -= std::min(effort, way.layout.spent);
    if (!way.layout.offsets.empty()) way.top = top_of(way.frames, way.layout.offsets);
    return way;
  };
  std::vector<laid> ways{lay_out(true)};
  if (lower_frames && !ways[0].layout.offsets.empty() && ways[0].top > footprint) {
    ways.push_back(lay_out(false));
    if (!ways[1].layout.offsets.empty() && ways[1].top < ways[0].top) std::swap(ways[0], ways[1]);
  }
  for (std::size_t k = 0; k < 2; ++k) {
    if (k == ways.size()) ways.push_back(lay_out(false));
    laid& way = ways[k];
    if (way.layout.offsets.empty()) continue;
    const std::vector<std::size_t> offsets =
        way.whole ? layers_of(frame_bytes, items, way.layout.offsets) : way.layout.offsets;
    std::vector<std::ptrdiff_t> found;
    if (!add_copies(copies, items, offsets, budget, found)) continue;
    footprint = std::max(footprint, way.top);
    (way.whole ? hints.blocks : hints.frames) = std::move(way.layout);
    return found;
  }
  return {};
}

}  // namespace graphpool::plan::detail
