#pragma once
/// @file microbatch_frames.hpp
/// @brief Which planned frame a launch of variant_graphs runs: the copy the step's slot map gives the
/// microbatch, then the layer's frame of that copy, every id checked first.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/capture/variant_plan.hpp"
#include "graphpool/error.hpp"
#include "graphpool/ids.hpp"
#include "graphpool/plan/problem.hpp"

namespace graphpool::detail {

/// @brief The plan's frame of (chunk, microbatch, layer, branch) in the current step. The slot map is
/// the plan's only one, or the one begin_step() picked for the step's schedule. Errors name what is
/// unknown and what there is. Not thread-safe on its own: variant_graphs changes it only in set-up
/// and begin_step().
class microbatch_frames final {
 public:
  /// @brief Frames of `model` (which must outlive this object). `one_in_flight`: no schedule was
  /// given, so every microbatch replays slot 0, one at a time.
  microbatch_frames(const variant_model& model, bool one_in_flight) noexcept : model_(model), one_in_flight_(one_in_flight) {}

  /// @brief Frames of plan `p` (which must outlive its use here). A plan of one schedule needs no begin_step().
  void use(const plan::plan& p) {
    plan::frame_index frame_at(p);  // may throw: nothing changes before it is made
    plan_ = &p;
    frame_at_ = std::move(frame_at);
    map_ = p.slot_maps.size() == 1 ? &p.slot_maps.front() : nullptr;
  }

  /// @brief Back to no plan (before the plan given to use() goes away).
  void forget() noexcept {
    plan_ = nullptr;
    map_ = nullptr;
  }

  /// @brief Launches from now on follow the slot map of the schedule of `microbatches` microbatches.
  /// @throws graphpool::error without a plan, or when the plan has no schedule of that many.
  void begin_step(int microbatches) {
    if (plan_ == nullptr) no_plan();
    map_ = &plan::find_slot_map(*plan_, microbatches);
  }

  /// @return the slot (copy) `microbatch` of `chunk` replays in this step.
  /// @throws graphpool::error without a plan or a step's map, for an unknown chunk, or a microbatch
  /// outside the step's schedule.
  [[nodiscard]] slot_id slot(chunk_id chunk, int microbatch) const {
    if (map_ == nullptr) {  // a map is set only with a plan
      if (plan_ == nullptr) no_plan();
      no_map();
    }
    if (chunk.index >= map_->slots.size()) bad_chunk(chunk);
    if (one_in_flight_ && microbatch >= 0) return slot_id{0};  // no schedule: every microbatch, one at a time
    const std::vector<int>& slots = map_->slots[chunk.index];
    if (microbatch < 0 || static_cast<std::size_t>(microbatch) >= slots.size()) bad_microbatch(microbatch);
    return slot_id{static_cast<std::uint32_t>(slots[static_cast<std::size_t>(microbatch)])};
  }

  /// @return the layers of `chunk`. @throws graphpool::error for an unknown chunk.
  [[nodiscard]] std::uint32_t layers(chunk_id chunk) const {
    if (chunk.index >= model_.layers_per_chunk.size()) bad_chunk(chunk);
    return static_cast<std::uint32_t>(model_.layers_per_chunk[chunk.index]);
  }

  /// @return the index in the plan's frames of the frame `microbatch` of (chunk, layer) runs in this step.
  /// @throws graphpool::error as slot(), or for an unknown layer or branch.
  [[nodiscard]] std::size_t frame(chunk_id chunk, int microbatch, layer_id layer, branch_id branch) const {
    const slot_id copy = slot(chunk, microbatch);
    const std::uint32_t layer_count = layers(chunk);
    if (layer.index >= layer_count) bad_layer(chunk, layer);
    if (branch.index >= model_.branches.size()) bad_branch(branch);
    return frame_at_(chunk.index, copy.index, layer.index);
  }

 private:
  [[noreturn]] static void no_plan() {
    throw error("variant_graphs: no plan yet, so no frame to launch, read or step through; call capture() (or "
                "make_plan() or use_plan()) first");
  }
  [[noreturn]] void no_map() const {
    throw error("variant_graphs: the plan has slot maps for " + plan::planned_microbatches(*plan_) +
                " microbatches; call begin_step(microbatches) to say which schedule this step replays");
  }
  [[noreturn]] void bad_chunk(chunk_id chunk) const {
    throw error("variant_graphs: " + chunk.describe() + " is unknown; the model has " +
                std::to_string(model_.layers_per_chunk.size()) + " chunk(s)");
  }
  [[noreturn]] void bad_layer(chunk_id chunk, layer_id layer) const {
    throw error("variant_graphs: " + layer.describe() + " is unknown; " + chunk.describe() + " has " +
                std::to_string(model_.layers_per_chunk[chunk.index]) + " layer(s)");
  }
  [[noreturn]] void bad_branch(branch_id branch) const {
    throw error("variant_graphs: " + branch.describe() + " is unknown; the model has " +
                std::to_string(model_.branches.size()) + " branch(es)");
  }
  [[noreturn]] void bad_microbatch(int microbatch) const {
    throw error("variant_graphs: microbatch " + std::to_string(microbatch) + " is outside schedule '" +
                map_->schedule + "', which runs " + std::to_string(map_->microbatches) +
                " microbatch(es); call begin_step() with the schedule this step replays");
  }

  const variant_model& model_;
  bool one_in_flight_;
  const plan::plan* plan_ = nullptr;
  plan::frame_index frame_at_;
  const plan::slot_map* map_ = nullptr;
};

}  // namespace graphpool::detail
