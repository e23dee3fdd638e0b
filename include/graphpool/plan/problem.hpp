#pragma once
/// @file problem.hpp
/// @brief What the planner is given and what it answers: the problem (schedules, layers, bytes per
/// branch, slot rule) and the plan (every frame's arena and offset, every arena's size, the figures to
/// judge it by, the slot maps). Host-only: no CUDA header.

#include <cstddef>
#include <string>
#include <vector>

#include "graphpool/error.hpp"
#include "graphpool/plan/schedule.hpp"
#include "graphpool/plan/slot_map.hpp"

namespace graphpool::plan {

/// @brief One branch (variant) and what each of its frames needs.
struct branch_sizes {
  std::string name;
  std::size_t saved_per_layer = 0;  ///< bytes a layer saves for its backward (and its outputs)
  std::size_t grad_per_slot = 0;    ///< bytes of the input gradients a (chunk, slot) backward returns
};

/// @brief Saved bytes of one (chunk, layer) in one branch, instead of the branch's per-layer figure.
struct saved_bytes_override {
  int chunk = 0;
  int layer = 0;
  std::string branch;
  std::size_t saved = 0;
};

/// @brief The most bytes one frame (or returned gradient) may need: 1 TiB.
inline constexpr std::size_t max_frame_bytes = std::size_t{1} << 40;

/// @brief How frames are given memory.
enum class assignment {
  coloring,  ///< an arena per color: conflicting frames get different arenas, each sized by its largest frame
  offsets,   ///< one pool: every frame an offset; conflicting frames never overlap in bytes
};

/// @brief problem::max_copies when none is given: at most twice the copies m mod S uses.
inline constexpr int twice_modulo_copies = -1;

/// @brief Everything the planner needs.
struct problem {
  std::vector<schedule> schedules;             ///< every schedule that will be replayed (same chunks)
  std::vector<int> layers_per_chunk;           ///< one entry (every chunk) or one per chunk; 0 = no frames
  std::vector<branch_sizes> branches;          ///< at least one
  std::vector<saved_bytes_override> overrides;
  int slots = 0;                 ///< physical slots of the mod rule; 0 = the peak over the schedules
  slot_rule rule = slot_rule::mod;  ///< how microbatches are bound to captured copies (slots)
  /// Schedule rule: at most this many copies per chunk (0 = no limit). The default allows twice the
  /// copies of m mod S and never gives a footprint above the m mod S plan's.
  int max_copies = twice_modulo_copies;
  std::size_t alignment = 256;   ///< every frame's bytes are rounded up to this (a power of two)
};

/// @brief The color of a frame or returned gradient read from a plan document that has none (an offsets
/// plan written before documents carried colors): te_slots refuses it.
inline constexpr std::size_t unknown_color = static_cast<std::size_t>(-1);

/// @brief A frame and its memory; indices are 0-based.
struct planned_frame {
  int chunk = 0;
  int slot = 0;
  int layer = 0;
  std::size_t arena = 0;   ///< coloring: its arena; offsets: 0 (the one pool)
  std::size_t offset = 0;  ///< within the arena
  std::size_t bytes = 0;   ///< the max over branches, rounded up to the alignment
  std::size_t color = 0;   ///< its arena in the coloring (what TransformerEngine's saved_arena takes), or unknown_color
};

/// @return "chunk 1 slot 2 layer 0": a frame as messages and arena names give it.
[[nodiscard]] inline std::string describe_frame(const planned_frame& f) {
  return "chunk " + std::to_string(f.chunk) + " slot " + std::to_string(f.slot) + " layer " + std::to_string(f.layer);
}

/// @brief The input gradients one (chunk, slot) backward returns, and their memory.
struct planned_grad {
  int chunk = 0;
  int slot = 0;
  std::size_t arena = 0;
  std::size_t offset = 0;
  std::size_t bytes = 0;
  std::size_t color = 0;  ///< its arena in the coloring (TransformerEngine's grad_arena), or unknown_color
};

/// @brief The figures a plan is judged by.
struct plan_figures {
  std::size_t footprint_bytes = 0;    ///< what the plan takes
  /// No plan is smaller. m mod S: the heaviest set of pairwise conflicting frames (the same for every
  /// placement of its copies). Schedule rule, saved frames: the live bound, or a height the planner proved
  /// least (no map, whatever its copies, lays the frames out lower); its returned gradients: the chosen
  /// copies' heaviest clique (a bound for those copies).
  std::size_t lower_bound_bytes = 0;
  bool lower_bound_exact = false;     ///< the bound's search finished (otherwise a valid, weaker bound)
  std::size_t live_bound_bytes = 0;   ///< most bytes alive at once, ignoring the m mod S slot rule
  std::size_t naive_bytes = 0;        ///< a pool per branch: every branch's frames, summed
  std::size_t coloring_bytes = 0;     ///< greedy DSATUR's arenas, summed (the baseline)
  std::size_t coloring_arenas = 0;    ///< how many arenas DSATUR uses
  std::size_t arenas = 0;             ///< how many arenas the plan uses

  /// @return footprint / lower bound (1 when both are 0).
  [[nodiscard]] double ratio() const noexcept {
    return lower_bound_bytes == 0 ? 1.0 : static_cast<double>(footprint_bytes) / static_cast<double>(lower_bound_bytes);
  }
};

/// @brief The planner's answer.
struct plan {
  assignment mode = assignment::offsets;
  slot_rule rule = slot_rule::mod;  ///< the rule asked for (its maps may still be m mod S when those are best)
  int chunks = 0;
  int slots = 0;  ///< captured copies per chunk; frames[].slot and slot_maps index them
  int microbatches = 0;  ///< the most microbatches of any schedule given
  std::vector<int> layers_per_chunk;
  std::vector<std::string> branches;
  std::vector<planned_frame> frames;  ///< chunk-major, then slot, then layer
  std::vector<slot_map> slot_maps;    ///< one per schedule given, in order
  std::vector<std::size_t> arena_bytes;
  plan_figures saved;
  std::vector<planned_grad> grads;  ///< chunk-major, then slot; chunks without layers have none
  std::vector<std::size_t> grad_arena_bytes;
  plan_figures grad;
};

/// @brief Where the frame of (chunk, slot, layer) sits in a plan's frames, which are chunk-major, then slot,
/// then layer, and where (chunk, slot)'s returned gradient sits in its grads, one per slot of each chunk
/// with layers, chunk-major: the one formula capture, launch and the plan's checks share.
class frame_index final {
 public:
  frame_index() = default;
  explicit frame_index(const plan& p) {
    std::size_t next = 0;
    std::size_t next_grad = 0;
    for (int layers : p.layers_per_chunk) {
      first_.push_back(next);
      first_grad_.push_back(next_grad);
      layers_.push_back(static_cast<std::size_t>(layers));
      next += static_cast<std::size_t>(layers) * static_cast<std::size_t>(p.slots);
      if (layers > 0) next_grad += static_cast<std::size_t>(p.slots);
    }
  }

  /// @return the index of (chunk, slot, layer)'s frame; the caller has checked all three are in range.
  [[nodiscard]] std::size_t operator()(std::size_t chunk, std::size_t slot, std::size_t layer) const noexcept {
    return first_[chunk] + slot * layers_[chunk] + layer;
  }

  /// @return the index of (chunk, slot)'s returned gradient; the caller has checked both are in range
  /// and that the chunk has layers (a chunk without layers has none).
  [[nodiscard]] std::size_t gradient(std::size_t chunk, std::size_t slot) const noexcept {
    return first_grad_[chunk] + slot;
  }

 private:
  std::vector<std::size_t> first_;       // per chunk: its (slot 0, layer 0) frame
  std::vector<std::size_t> first_grad_;  // per chunk: its slot 0 gradient
  std::vector<std::size_t> layers_;      // per chunk: its layers
};

/// @return the microbatch counts `p` has slot maps for, as "8, 4" ("none" without a map), for messages.
[[nodiscard]] inline std::string planned_microbatches(const plan& p) {
  std::string planned;
  for (const slot_map& map : p.slot_maps) planned += (planned.empty() ? "" : ", ") + std::to_string(map.microbatches);
  return planned.empty() ? std::string("none") : planned;
}

/// @return the slot map of `p` for a schedule of `microbatches` microbatches (the first one planned).
/// @throws graphpool::error naming the counts the plan was made for when none matches.
[[nodiscard]] inline const slot_map& find_slot_map(const plan& p, int microbatches) {
  for (const slot_map& map : p.slot_maps) {
    if (map.microbatches == microbatches) return map;
  }
  throw error("no slot map for a schedule of " + std::to_string(microbatches) +
              " microbatch(es): the plan was made for " + planned_microbatches(p) +
              "; plan with every schedule you replay");
}

}  // namespace graphpool::plan
