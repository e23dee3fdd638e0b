#pragma once
/// @file frame_memory.hpp
/// @brief Where variant_graphs sends a layer's persistent requests: recorded in the measurement
/// capture, then served at the planned addresses in the real capture.

#include <array>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/capture/frame_capture.hpp"
#include "graphpool/capture/persistent_memory.hpp"
#include "graphpool/error.hpp"
#include "graphpool/ids.hpp"
#include "graphpool/memory/branch_view.hpp"
#include "graphpool/memory/layout.hpp"

namespace graphpool::detail {

/// @brief What one layer of one branch asked for: its forward's outputs and saved tensors, in order,
/// and the gradients its backward returns.
struct measured_layer {
  std::vector<recorded_request> forward;   ///< kind output or saved
  std::vector<recorded_request> gradients;  ///< the backward's requests (kind saved)

  /// @return the forward's requests as a branch layout (outputs, then saved).
  [[nodiscard]] branch_layout saved_layout() const {
    branch_layout layout;
    for (const recorded_request& r : forward) {
      (r.kind == persistent_kind::output ? layout.outputs : layout.saved).push_back(part(r.bytes, r.alignment));
    }
    return layout;
  }
  /// @return the backward's requests as a layout of the branch's own parts.
  [[nodiscard]] branch_layout gradient_layout() const {
    branch_layout layout;
    for (const recorded_request& r : gradients) layout.saved.push_back(part(r.bytes, r.alignment));
    return layout;
  }
};

/// @brief The measurement capture of one (chunk, branch): every request becomes a transient of the
/// throw-away graph (valid inside it) and is recorded.
template <class Session>
class measuring_memory final : public frame_memory {
 public:
  measuring_memory(Session& session, std::vector<measured_layer*> layers)
      : session_(session), layers_(std::move(layers)), placed_(layers_.size()) {}

  void* allocate(layer_id layer, frame_part part, std::size_t bytes, std::size_t alignment) override {
    check_alignment(alignment, session_.where() + ": " + to_string(part) + " request of " + std::to_string(bytes) +
                                   " bytes");
    void* ptr = session_.allocate_transient(bytes, alignment);
    measured_layer& record = *layers_.at(layer.index);
    if (part == frame_part::gradient) {
      record.gradients.push_back({persistent_kind::saved, bytes, alignment});
    } else {
      record.forward.push_back({part == frame_part::output ? persistent_kind::output : persistent_kind::saved, bytes,
                                alignment});
    }
    placed_[layer.index][static_cast<int>(part)].push_back(ptr);
    return ptr;
  }

  [[nodiscard]] void* find(layer_id layer, frame_part part, std::size_t index) const override {
    if (layer.index >= placed_.size()) {
      throw error(session_.where() + ": " + layer.describe() + " is beyond the chunk's " +
                  std::to_string(placed_.size()) + " layer(s)");
    }
    const std::vector<void*>& parts = placed_[layer.index][static_cast<int>(part)];
    if (index >= parts.size()) {
      throw error(session_.where() + ": " + std::string(to_string(part)) + " part " + std::to_string(index) + " of " +
                  layer.describe() + " is not placed yet (" + std::to_string(parts.size()) +
                  " so far); a forward reads outputs of earlier layers, a backward gradients of later ones");
    }
    return parts[index];
  }

 private:
  Session& session_;
  std::vector<measured_layer*> layers_;
  std::vector<std::array<std::vector<void*>, 3>> placed_;  // per layer, per frame_part
};

/// @brief The real captures of one (chunk, slot, branch): requests must repeat the measurement and
/// get the planned addresses (the layer's frame, and its returned-gradient slot).
class replaying_memory final : public frame_memory {
 public:
  struct layer_memory {
    const measured_layer* measured;
    branch_view saved;      ///< outputs and saved tensors
    branch_view gradients;  ///< the gradients its backward returns
  };

  replaying_memory(std::string where, std::vector<layer_memory> layers)
      : where_(std::move(where)), layers_(std::move(layers)), next_(layers_.size(), {0, 0, 0}) {}

  void* allocate(layer_id layer, frame_part part, std::size_t bytes, std::size_t alignment) override {
    const layer_memory& memory = at(layer);
    std::array<std::size_t, 3>& next = next_[layer.index];
    const std::string where = where_ + " " + layer.describe();
    if (part == frame_part::gradient) {
      check_replayed_request(where + " backward", next[2], memory.measured->gradients, persistent_kind::saved, bytes,
                             alignment);
      return memory.gradients.saved(next[2]++);
    }
    const persistent_kind kind = part == frame_part::output ? persistent_kind::output : persistent_kind::saved;
    check_replayed_request(where + " forward", next[0] + next[1], memory.measured->forward, kind, bytes, alignment);
    ++(part == frame_part::output ? next[0] : next[1]);
    return part == frame_part::output ? memory.saved.output(next[0] - 1) : memory.saved.saved(next[1] - 1);
  }

  [[nodiscard]] void* find(layer_id layer, frame_part part, std::size_t index) const override {
    const layer_memory& memory = at(layer);
    switch (part) {
      case frame_part::output: return memory.saved.output(index);
      case frame_part::saved: return memory.saved.saved(index);
      case frame_part::gradient: break;
    }
    return memory.gradients.saved(index);
  }

  /// @brief Throws unless `layer`'s capture of `phase` made every request its measurement made; then
  /// starts the layer's count anew.
  void finish(layer_id layer, bool backward) {
    const layer_memory& memory = at(layer);
    std::array<std::size_t, 3>& next = next_[layer.index];
    const std::string who = where_ + " " + layer.describe() + (backward ? " backward" : " forward");
    if (backward) {
      check_replayed_count(who, next[2], memory.measured->gradients.size());
      next[2] = 0;
    } else {
      check_replayed_count(who, next[0] + next[1], memory.measured->forward.size());
      next[0] = next[1] = 0;
    }
  }

  /// @brief Forgets the requests of a capture that failed.
  void rollback() noexcept {
    for (std::array<std::size_t, 3>& n : next_) n = {0, 0, 0};
  }

 private:
  [[nodiscard]] const layer_memory& at(layer_id layer) const {
    if (layer.index >= layers_.size()) {
      throw error(where_ + ": " + layer.describe() + " is beyond the chunk's " + std::to_string(layers_.size()) +
                  " layer(s)");
    }
    return layers_[layer.index];
  }

  std::string where_;
  std::vector<layer_memory> layers_;
  std::vector<std::array<std::size_t, 3>> next_;  // per layer: outputs, saved, gradients requested so far
};

}  // namespace graphpool::detail
