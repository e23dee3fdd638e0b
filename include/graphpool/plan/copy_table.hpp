#pragma once
/// @file copy_table.hpp
/// @brief What a byte layout of captured copies is built from: the ways to lay copies out, gaps among
/// byte ranges, the table of copies laid out so far (and which share bytes), and the lifetimes of one
/// schedule's microbatches. Host-only: no CUDA header.

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <utility>
#include <vector>

#include "graphpool/plan/schedule.hpp"
#include "graphpool/plan/slot_map.hpp"

namespace graphpool::plan {

/// @brief Slot maps with a byte layout built alongside: offsets[chunk][copy][layer].
struct packed_maps {
  std::vector<slot_map> maps;
  std::vector<std::vector<std::vector<std::size_t>>> offsets;
  std::size_t footprint = 0;  ///< the top of the highest copy
  bool valid = true;  ///< false when the budget ran out before every forward found free bytes (maps incomplete)
};

/// @brief In which order pack_maps places the microbatches of the schedule that sets the layout.
enum class packing_order {
  start,     ///< by forward time, as the schedule replays (online first fit: equal frames reach the live bound)
  size,      ///< largest chunk first, then longest lifetime
  lifetime,  ///< longest lifetime first, then largest chunk
  area,      ///< bytes x lifetime, largest first
  bounded,   ///< frames by forward time under a height, backing up where one does not fit (bounded_layout.hpp)
  sweep,     ///< frames by forward time under a height, beside neighbours that die with them (sweep_layout.hpp)
  rising,    ///< frames lowest first, each resting on those below it, at the live bound (rising_layout.hpp)
  periodic,  ///< the steady state's frames lowest first on a ring of a few periods, repeated (periodic_layout.hpp)
};

/// @brief One way pack_maps lays copies out (dynamic storage allocation on the schedule's intervals).
struct packing {
  packing_order order = packing_order::start;
  bool split_layers = true;  ///< a new copy's layers go one by one into gaps (else back to back, as one block)
  bool best_fit = false;     ///< the smallest gap that holds a block (else the lowest)
  int search_steps = 0;      ///< squeaky-wheel steps (microbatches that set the footprint move earlier);
                             ///< sweep: noisy sweeps per height after the exact ones
  std::size_t search_effort = 0;  ///< bounded: frames the search may visit; sweep: neighbours it may look at;
                                  ///< rising: sections it may look at; periodic: the same, per height
  /// sweep, unions: a count with no replay over the copies, laid out by itself, may spend 1 / this of the
  /// effort left (the longest counts come first, and one held to less rises above the footprint); 0: an
  /// equal share with the counts after it, which holds the footprint less but opens fewer copies.
  unsigned own_layout_share = 0;
  /// sweep: the anchor's layout then lowered by the squeaky wheel (lowest_sweep.hpp's squeeze), with each of
  /// squeaky_settings on a single schedule, the first on a union
  bool squeaky = false;
  /// sweep, single schedules: where the sweep begins, in permille of the schedule's events (sweep_layout's
  /// `from`); 0: at the start
  unsigned begin_permille = 0;
  /// sweep, unions: where counts laid out by themselves as blocks leave the union above the anchor, the
  /// counts are replayed again taking a count's frames (one by one) where lower (pack_maps)
  bool lower_own_frames = false;
  /// A layout to beat (0: none): pack_maps gives up, invalid, once the anchor or a replay reaches it.
  std::size_t below = 0;
};

namespace detail {

using byte_range = std::pair<std::size_t, std::size_t>;  // [start, end)

/// The lowest (or the smallest) gap of `taken` (sorted by start) that holds `bytes`; the top when none does.
[[nodiscard]] inline std::size_t find_gap(const std::vector<byte_range>& taken, std::size_t bytes, bool best_fit) {
  if (bytes == 0) return 0;
  std::size_t cursor = 0;
  std::size_t chosen = static_cast<std::size_t>(-1);
  std::size_t chosen_gap = static_cast<std::size_t>(-1);
  for (const byte_range& r : taken) {
    if (r.first >= cursor + bytes) {
      if (!best_fit) return cursor;
      if (r.first - cursor < chosen_gap) {
        chosen = cursor;
        chosen_gap = r.first - cursor;
      }
    }
    cursor = std::max(cursor, r.second);
  }
  return chosen == static_cast<std::size_t>(-1) ? cursor : chosen;
}

/// Every copy laid out so far (of every chunk), and which copies share bytes.
class copy_table {
 public:
  explicit copy_table(const std::vector<std::vector<std::size_t>>& frame_bytes)
      : frame_bytes_(&frame_bytes), by_chunk_(frame_bytes.size()) {}

  [[nodiscard]] std::size_t size() const noexcept { return chunk_.size(); }
  [[nodiscard]] int chunk(std::size_t id) const noexcept { return chunk_[id]; }
  [[nodiscard]] int index(std::size_t id) const noexcept { return index_[id]; }
  [[nodiscard]] std::size_t top(std::size_t id) const noexcept { return top_[id]; }
  [[nodiscard]] const std::vector<std::size_t>& of_chunk(int c) const { return by_chunk_[static_cast<std::size_t>(c)]; }
  [[nodiscard]] const std::vector<std::size_t>& overlapping(std::size_t id) const { return overlapping_[id]; }
  [[nodiscard]] const std::vector<byte_range>& blocks(std::size_t id) const { return blocks_[id]; }
  [[nodiscard]] const std::vector<std::size_t>& offsets(std::size_t id) const { return offsets_[id]; }
  /// The bytes of chunk `c`'s layers.
  [[nodiscard]] const std::vector<std::size_t>& layers(int c) const { return (*frame_bytes_)[static_cast<std::size_t>(c)]; }

  /// Where a new copy of chunk `c` would go around `taken` (sorted: the bytes alive beside it), per layer.
  [[nodiscard]] std::vector<std::size_t> lay_out(int c, std::vector<byte_range> taken, bool split_layers,
                                                 bool best_fit) const {
    const std::vector<std::size_t>& layers = (*frame_bytes_)[static_cast<std::size_t>(c)];
    std::vector<std::size_t> placed(layers.size(), 0);
    if (split_layers) {
      std::vector<std::size_t> largest_first(layers.size());
      for (std::size_t l = 0; l < layers.size(); ++l) largest_first[l] = l;
      std::stable_sort(largest_first.begin(), largest_first.end(),
                       [&](std::size_t a, std::size_t b) { return layers[a] > layers[b]; });
      for (std::size_t l : largest_first) {
        if (layers[l] == 0) continue;
        placed[l] = find_gap(taken, layers[l], best_fit);
        const byte_range mine{placed[l], placed[l] + layers[l]};
        taken.insert(std::upper_bound(taken.begin(), taken.end(), mine), mine);
      }
    } else {
      std::size_t cursor = find_gap(taken, std::accumulate(layers.begin(), layers.end(), std::size_t{0}), best_fit);
      for (std::size_t l = 0; l < layers.size(); ++l) {
        placed[l] = layers[l] == 0 ? 0 : cursor;
        cursor += layers[l];
      }
    }
    return placed;
  }

  /// The top of a copy of chunk `c` at `placed` (per layer).
  [[nodiscard]] std::size_t top_of(int c, const std::vector<std::size_t>& placed) const {
    const std::vector<std::size_t>& layers = (*frame_bytes_)[static_cast<std::size_t>(c)];
    std::size_t top = 0;
    for (std::size_t l = 0; l < layers.size(); ++l) top = layers[l] == 0 ? top : std::max(top, placed[l] + layers[l]);
    return top;
  }

  /// Adds a copy of chunk `c` at `placed` (per layer); returns its id.
  std::size_t add(int c, std::vector<std::size_t> placed) {
    const std::vector<std::size_t>& layers = (*frame_bytes_)[static_cast<std::size_t>(c)];
    const std::size_t id = chunk_.size();
    std::vector<byte_range> mine;
    std::size_t top = 0;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      if (layers[l] == 0) continue;
      mine.emplace_back(placed[l], placed[l] + layers[l]);
      top = std::max(top, placed[l] + layers[l]);
    }
    std::sort(mine.begin(), mine.end());
    overlapping_.emplace_back();
    for (std::size_t other = 0; other < id; ++other) {
      if (share_bytes(mine, blocks_[other])) {
        overlapping_[other].push_back(id);
        overlapping_.back().push_back(other);
      }
    }
    overlapping_.back().push_back(id);  // a copy alive blocks itself
    chunk_.push_back(c);
    index_.push_back(static_cast<int>(by_chunk_[static_cast<std::size_t>(c)].size()));
    by_chunk_[static_cast<std::size_t>(c)].push_back(id);
    top_.push_back(top);
    blocks_.push_back(std::move(mine));
    offsets_.push_back(std::move(placed));
    return id;
  }

 private:
  static bool share_bytes(const std::vector<byte_range>& a, const std::vector<byte_range>& b) {
    std::size_t i = 0;
    std::size_t j = 0;
    while (i < a.size() && j < b.size()) {
      if (a[i].first < b[j].second && b[j].first < a[i].second) return true;
      if (a[i].second <= b[j].second) ++i; else ++j;
    }
    return false;
  }

  const std::vector<std::vector<std::size_t>>* frame_bytes_;  // [chunk][layer]
  std::vector<std::vector<std::size_t>> by_chunk_;
  std::vector<int> chunk_;
  std::vector<int> index_;
  std::vector<std::size_t> top_;
  std::vector<std::vector<byte_range>> blocks_;
  std::vector<std::vector<std::size_t>> offsets_;
  std::vector<std::vector<std::size_t>> overlapping_;
};

/// One microbatch of one chunk in one schedule: alive from event `start` to event `end`.
struct lifetime {
  int chunk = 0;
  int microbatch = 0;
  std::size_t start = 0;
  std::size_t end = 0;
};

[[nodiscard]] inline std::vector<lifetime> lifetimes_of(const schedule& s) {
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<lifetime> result;
  const auto microbatches = static_cast<std::size_t>(s.microbatches());
  // Per chunk and microbatch (each forwards once): its lifetime, until its backward ends it.
  std::vector<std::size_t> open(static_cast<std::size_t>(s.chunks()) * microbatches, none);
  const std::vector<event>& events = s.events();
  result.reserve(events.size() / 2);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const event& e = events[i];
    std::size_t& pending = open[static_cast<std::size_t>(e.chunk) * microbatches + static_cast<std::size_t>(e.microbatch)];
    if (e.kind == phase::forward) {
      pending = result.size();
      result.push_back({e.chunk, e.microbatch, i, events.size()});
    } else if (pending != none) {
      result[pending].end = i;
      pending = none;
    }
  }
  return result;
}

/// Picks the copy of `chunk` for a microbatch whose neighbours in time block the copies counted in
/// `blocked` (by copy id): the free copy of lowest top when it stays within `footprint`, else a new copy
/// laid out around `taken()` when the budget allows and it ends lower, else the free copy. -1: none.
template <class Taken>
[[nodiscard]] std::ptrdiff_t choose_copy(copy_table& copies, int chunk, const std::vector<int>& blocked,
                                         std::size_t footprint, int budget, const packing& how, Taken taken) {
  std::ptrdiff_t reuse = -1;
  for (std::size_t id : copies.of_chunk(chunk)) {
    if (blocked[id] == 0 && (reuse < 0 || copies.top(id) < copies.top(static_cast<std::size_t>(reuse)))) {
      reuse = static_cast<std::ptrdiff_t>(id);
    }
  }
  if (reuse >= 0 && copies.top(static_cast<std::size_t>(reuse)) <= footprint) return reuse;
  if (static_cast<int>(copies.of_chunk(chunk).size()) >= budget) return reuse;
  std::vector<std::size_t> placed = copies.lay_out(chunk, taken(), how.split_layers, how.best_fit);
  if (reuse >= 0 && copies.top_of(chunk, placed) >= copies.top(static_cast<std::size_t>(reuse))) return reuse;
  return static_cast<std::ptrdiff_t>(copies.add(chunk, std::move(placed)));
}

/// The layout of the anchor schedule (the one the other schedules replay over): its copy table, each
/// microbatch's copy id (-1: a chunk of no bytes), the footprint; not valid when the copies budget ran out.
struct anchor_layout {
  copy_table copies;
  std::vector<std::ptrdiff_t> copy_of;
  std::size_t footprint = 0;
  bool valid = true;
};

}  // namespace detail

}  // namespace graphpool::plan
