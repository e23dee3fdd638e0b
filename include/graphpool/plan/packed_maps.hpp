#pragma once
/// @file packed_maps.hpp
/// @brief Slot maps laid out byte by byte: dynamic storage allocation on the intervals of the schedule
/// with the most bytes alive (the anchor), the other schedules replayed over the same copies. Host-only:
/// no CUDA header.

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "graphpool/plan/anchor_order.hpp"
#include "graphpool/plan/bounded_layout.hpp"
#include "graphpool/plan/copy_table.hpp"
#include "graphpool/plan/frame_intervals.hpp"
#include "graphpool/plan/liveness.hpp"
#include "graphpool/plan/lowest_sweep.hpp"
#include "graphpool/plan/own_layout.hpp"
#include "graphpool/plan/periodic_layout.hpp"
#include "graphpool/plan/periodic_replay.hpp"
#include "graphpool/plan/rising_layout.hpp"
#include "graphpool/plan/schedule.hpp"
#include "graphpool/plan/slot_map.hpp"

namespace graphpool::plan {

/// @return maps and a byte layout of every copy, built as dynamic storage allocation on intervals.
///
/// The schedule with the most bytes alive at once (it sets the live bound) is the anchor: its microbatches
/// are placed in `how.order`, each against the microbatches alive beside it, reusing a copy of its chunk
/// whose bytes are free then (the lowest), or laying out a new one (under `budget` copies per chunk) when
/// that ends lower; a squeaky-wheel search then moves the microbatches that set the footprint earlier (or, by
/// `how.order`, the bounded search, the sweep or the rising search lays its frames out). The other schedules
/// replay over the same copies, most microbatches first, a new copy only where no free one exists (over a
/// periodic layout, a count with no replay over them has its last microbatches laid out afresh around the
/// rest: periodic_replay.hpp); with the sweep, a schedule with no replay over them is laid out by itself
/// from the choices of the one before it (its chunks as blocks; with `how.lower_own_frames`, where that
/// leaves the union above the anchor, every count is replayed again taking its frames where lower, and the
/// lower of the two that fits the budget is kept).
/// `frame_bytes` is [chunk][layer].
[[nodiscard]] inline packed_maps pack_maps(const std::vector<schedule>& schedules,
                                           const std::vector<std::vector<std::size_t>>& frame_bytes, int budget,
                                           const packing& how = {}) {
  packed_maps result;
  result.maps.resize(schedules.size());
  std::vector<std::size_t> chunk_bytes;
  for (const std::vector<std::size_t>& layers : frame_bytes) {
    chunk_bytes.push_back(std::accumulate(layers.begin(), layers.end(), std::size_t{0}));
  }
  std::vector<std::size_t> by_weight(schedules.size());
  std::vector<std::size_t> live(schedules.size(), 0);
  for (std::size_t k = 0; k < schedules.size(); ++k) {
    by_weight[k] = k;
    live[k] = peak_live_bytes(schedules[k], chunk_bytes);
  }
  std::stable_sort(by_weight.begin(), by_weight.end(), [&](std::size_t a, std::size_t b) {
    return live[a] != live[b] ? live[a] > live[b] : schedules[a].microbatches() > schedules[b].microbatches();
  });
  if (schedules.empty()) return result;

  // The anchor: seeded order, then squeaky-wheel steps that keep any order no worse.
  const std::size_t anchor = by_weight.front();
  const std::vector<detail::lifetime> items = detail::lifetimes_of(schedules[anchor]);
  std::vector<std::size_t> order(items.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  auto bytes = [&](std::size_t i) { return chunk_bytes[static_cast<std::size_t>(items[i].chunk)]; };
  auto length = [&](std::size_t i) { return items[i].end - items[i].start; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    switch (how.order) {
      case packing_order::size:
        return bytes(a) != bytes(b) ? bytes(a) > bytes(b) : length(a) > length(b);
      case packing_order::lifetime:
        return length(a) != length(b) ? length(a) > length(b) : bytes(a) > bytes(b);
      case packing_order::area:
        return bytes(a) * (length(a) + 1) > bytes(b) * (length(b) + 1);
      case packing_order::start:
      case packing_order::bounded:
      case packing_order::sweep:
      case packing_order::rising:
      case packing_order::periodic:
        break;
    }
    return items[a].start < items[b].start;
  });
  detail::own_layout_hints hints;  // the sweep's last layouts: the next schedule starts from their choices
  const auto restarts = static_cast<unsigned>(how.search_steps);
  // The squeaky wheel's settings: every one on a single schedule, the first on a union (lowest_sweep.hpp).
  const std::size_t squeaky = !how.squeaky ? 0 : schedules.size() == 1 ? std::size(detail::squeaky_settings) : 1;
  detail::anchor_layout best =
      how.order == packing_order::bounded
          ? detail::bounded_anchor(frame_bytes, items, live[anchor], budget, how.search_effort)
      : how.order == packing_order::rising
          ? detail::rising_anchor(frame_bytes, items, live[anchor], budget, how.search_effort)
      : how.order == packing_order::periodic
          ? detail::periodic_anchor(frame_bytes, chunk_bytes, items, live[anchor], budget, how.search_effort)
      : how.order == packing_order::sweep
          ? detail::sweep_anchor(frame_bytes, items, live[anchor], budget, how.search_effort, restarts, squeaky,
                                   hints.frames, how.begin_permille)
          : detail::place_anchor(frame_bytes, chunk_bytes, items, order, budget, how);
  detail::squeaky_steps(frame_bytes, chunk_bytes, items, order, budget, how, live[anchor], best);
  const std::size_t give_up_at = how.below == 0 ? static_cast<std::size_t>(-1) : how.below;
  if (!best.valid || best.footprint >= give_up_at) {
    result.valid = false;
    return result;
  }
  detail::copy_table copies = std::move(best.copies);
  result.footprint = best.footprint;
  result.maps[anchor] = detail::bound_map(schedules[anchor], items, copies, best.copy_of);

  // The other schedules replay over the same copies: a copy is free when no live copy shares its bytes.
  // With a search effort, each first looks for a replay that adds no copy (spending at most an equal
  // share of what is left), trying first the copies the schedule bound before it gave the same
  // microbatch (counts begin alike) and the one as far from the end (they end alike): `previous`, copy
  // ids per [chunk][microbatch].
  const auto anchor_microbatches = static_cast<std::size_t>(schedules[anchor].microbatches());
  std::vector<std::vector<std::ptrdiff_t>> previous(static_cast<std::size_t>(schedules[anchor].chunks()),
                                                    std::vector<std::ptrdiff_t>(anchor_microbatches, -1));
  for (std::size_t i = 0; i < items.size(); ++i) {
    previous[static_cast<std::size_t>(items[i].chunk)][static_cast<std::size_t>(items[i].microbatch)] = best.copy_of[i];
  }
  // After the anchor, the most microbatches first: each count then follows one a microbatch longer.
  std::stable_sort(by_weight.begin() + 1, by_weight.end(), [&](std::size_t a, std::size_t b) {
    return schedules[a].microbatches() > schedules[b].microbatches();
  });
  // Every other count replayed; false where one finds no copy within the budget, or the footprint
  // reaches `stop_at`.
  auto replay_counts = [&](bool lower_frames, std::size_t stop_at) {
    // Search effort for the replays: over the copies (bounded), or each schedule swept by itself (sweep).
    std::size_t replay_effort = how.search_effort;
    std::size_t tail_effort = how.search_effort;  // periodic: the counts' tails laid out afresh
    std::vector<detail::periodic_tail> tails;     // and those tails
    const int anchor_period =  // periodic: the anchor's group of microbatches
        how.order == packing_order::periodic ? detail::period_of(items, chunk_bytes).microbatches : 0;
    for (std::size_t k = 1; k < by_weight.size(); ++k) {
      if (result.footprint >= stop_at) return false;
      const schedule& s = schedules[by_weight[k]];
      slot_map& map = result.maps[by_weight[k]];
      map = slot_map{s.name(), s.microbatches(), {}};
      for (int c = 0; c < s.chunks(); ++c) map.slots.emplace_back(static_cast<std::size_t>(s.microbatches()), -1);
      const std::vector<detail::lifetime> replayed = detail::lifetimes_of(s);
      auto bind = [&](const std::vector<std::ptrdiff_t>& found) {
        for (std::vector<std::ptrdiff_t>& row : previous) row.assign(static_cast<std::size_t>(s.microbatches()), -1);
        for (std::size_t i = 0; i < replayed.size(); ++i) {
          if (found[i] < 0) continue;
          const auto c = static_cast<std::size_t>(replayed[i].chunk);
          const auto m = static_cast<std::size_t>(replayed[i].microbatch);
          map.slots[c][m] = copies.index(static_cast<std::size_t>(found[i]));
          previous[c][m] = found[i];
        }
      };
      // Over the anchor's periodic copies: where a count lives within the anchor, as the anchor does
      // (periodic_replay.hpp); the rest replayed around those.
      const std::vector<std::ptrdiff_t> kept = how.order == packing_order::periodic
                                                   ? detail::within_anchor(replayed, chunk_bytes, items, best.copy_of)
                                                   : std::vector<std::ptrdiff_t>{};
      if (how.order == packing_order::periodic) {
        std::size_t effort = how.search_effort / schedules.size();
        const std::vector<std::ptrdiff_t> found = detail::replay_over(copies, replayed, chunk_bytes, effort, {}, kept);
        if (!found.empty()) {
          bind(found);
          continue;
        }
      }
      const std::size_t share = replay_effort / (by_weight.size() - k);
      if (share > 0) {
        std::vector<std::vector<std::size_t>> preferred(replayed.size());
        for (std::size_t i = 0; i < replayed.size(); ++i) {
          const std::vector<std::ptrdiff_t>& row = previous[static_cast<std::size_t>(replayed[i].chunk)];
          const auto m = static_cast<std::size_t>(replayed[i].microbatch);
          const std::size_t from_end = static_cast<std::size_t>(s.microbatches()) - m;
          for (std::size_t at : {m, row.size() - std::min(from_end, row.size())}) {
            if (at < row.size() && row[at] >= 0) preferred[i].push_back(static_cast<std::size_t>(row[at]));
          }
        }
        std::size_t left = share;
        const std::vector<std::ptrdiff_t> found = detail::replay_over(copies, replayed, chunk_bytes, left, preferred);
        replay_effort -= share - left;
        if (!found.empty()) {
          bind(found);
          continue;
        }
      }
      if (how.order == packing_order::periodic) {
        // No replay over these copies: the count's last microbatches laid out afresh around the rest, at
        // the footprint or a little above (periodic_replay.hpp). The counts share the effort: each may
        // spend an eighth of what is left (most find a tail laid out before).
        const std::size_t f = result.footprint;
        std::size_t effort = tail_effort / std::min<std::size_t>(8, by_weight.size() - k);
        const std::size_t granted = effort;
        const std::vector<std::ptrdiff_t> found =
            detail::lay_out_tail(copies, frame_bytes, replayed, chunk_bytes, kept, anchor_period,
                                 {f, f + f / 64, f + f / 32, f + f / 16}, budget, tails, effort);
        tail_effort -= granted - effort;
        if (!found.empty()) {
          for (std::ptrdiff_t id : found) {
            if (id >= 0) result.footprint = std::max(result.footprint, copies.top(static_cast<std::size_t>(id)));
          }
          bind(found);
          continue;
        }
      }
      if (how.order == packing_order::sweep) {
        // No replay over these copies: the schedule laid out by itself (own_layout.hpp).
        const std::vector<std::ptrdiff_t> found =
            detail::lay_out_alone(copies, frame_bytes, chunk_bytes, replayed, budget, result.footprint, replay_effort,
                                  {how.own_layout_share, share}, restarts, lower_frames, hints);
        if (!found.empty()) {
          bind(found);
          continue;
        }
      }
      const std::optional<std::vector<std::vector<std::size_t>>> id_of =
          detail::replay_by_events(copies, s, chunk_bytes, budget, how, result.footprint, map);
      if (!id_of) return false;
      for (std::size_t c = 0; c < previous.size(); ++c) {
        previous[c].assign(static_cast<std::size_t>(s.microbatches()), -1);
        if (chunk_bytes[c] == 0) continue;
        for (std::size_t m = 0; m < previous[c].size(); ++m) previous[c][m] = static_cast<std::ptrdiff_t>((*id_of)[c][m]);
      }
    }
    return result.footprint < stop_at;
  };
  // Where a count laid out by itself as blocks left the union above its anchor, the counts are replayed
  // again taking a count's frames' layout where that is lower (how.lower_own_frames); frames seldom sit
  // as another microbatch's do, so they open about a copy per microbatch: the lower of the two that
  // holds within the budget is kept.
  struct replay_start {
    detail::copy_table copies;
    std::vector<std::vector<std::ptrdiff_t>> previous;
    detail::own_layout_hints hints;
    std::size_t footprint;
  };
  std::optional<replay_start> anchored;
  if (how.lower_own_frames) anchored = replay_start{copies, previous, hints, result.footprint};
  const bool blocks_hold = replay_counts(false, give_up_at);
  if (anchored && (!blocks_hold || result.footprint > anchored->footprint)) {
    detail::copy_table blocks_copies = std::move(copies);
    std::vector<slot_map> blocks_maps = result.maps;
    const std::size_t blocks_footprint = result.footprint;
    copies = std::move(anchored->copies);
    previous = std::move(anchored->previous);
    hints = std::move(anchored->hints);
    result.footprint = anchored->footprint;
    const bool frames_hold = replay_counts(true, blocks_hold ? blocks_footprint : give_up_at);
    if (blocks_hold && !frames_hold) {
      copies = std::move(blocks_copies);
      result.maps = std::move(blocks_maps);
      result.footprint = blocks_footprint;
    } else if (!frames_hold) {
      result.valid = false;
      return result;
    }
  } else if (!blocks_hold) {
    result.valid = false;
    return result;
  }
  for (std::size_t k = 0; k < schedules.size(); ++k) {
    detail::map_empty_chunks(schedules[k], chunk_bytes, result.maps[k]);
    fill_unused(result.maps[k]);
  }
  result.offsets = detail::offsets_by_chunk(copies, frame_bytes.size());
  return result;
}

}  // namespace graphpool::plan
