#pragma once
/// @file frame_capture.hpp
/// @brief What the code of one layer sees while variant_graphs captures it: who it is (chunk, slot,
/// layer, branch, phase), where its persistent requests go, and the addresses of the parts it reads.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "graphpool/alignment.hpp"
#include "graphpool/capture/capture_session.hpp"
#include "graphpool/capture/graph_bank.hpp"
#include "graphpool/error.hpp"
#include "graphpool/ids.hpp"

namespace graphpool {

/// @brief The persistent parts of a frame: outputs and saved tensors (forward), returned gradients (backward).
enum class frame_part { output, saved, gradient };

/// @return "output", "saved" or "gradient".
[[nodiscard]] inline const char* to_string(frame_part part) noexcept {
  static constexpr const char* names[] = {"output", "saved", "gradient"};
  return names[static_cast<int>(part)];
}

namespace detail {

/// @brief Serves the persistent requests of one capture (a measurement, or the real capture at the
/// planned addresses) and looks up parts already placed.
class frame_memory {
 public:
  virtual ~frame_memory() = default;
  /// @brief The next `part` request of `layer` (its index among that layer's requests of that part).
  virtual void* allocate(layer_id layer, frame_part part, std::size_t bytes, std::size_t alignment) = 0;
  /// @brief Part `index` of `layer`'s parts of kind `part`, already placed.
  [[nodiscard]] virtual void* find(layer_id layer, frame_part part, std::size_t index) const = 0;
};

}  // namespace detail

/// @brief The context a layer's forward or backward code gets while it is captured.
///
/// Persistent requests: a forward asks for its outputs (allocate_output: read by the next layer, the
/// same layout in every branch) and the tensors it saves for its backward (allocate_saved); a backward
/// asks for the gradients it returns (allocate_gradient). Each lands at its planned address, and the
/// real capture must make the same requests as the measurement. Transient memory
/// (allocate_transient) becomes a graph memory node, freed at free_transient() or the graph's end.
/// A zero-byte request returns nullptr. Lookups (output(), saved(), gradient()) give the addresses
/// of parts already placed: this layer's own, or another layer's of the same chunk, slot and branch.
///
/// Only valid inside the body it was passed to; belongs to the capturing thread.
template <class Session>
class basic_frame_capture final {
 public:
  /// @brief Built by variant_graphs: one per (chunk, slot, layer, branch, phase) captured.
  basic_frame_capture(Session& session, detail::frame_memory& memory, graph_phase phase, chunk_id chunk, slot_id slot,
                      layer_id layer, branch_id branch, const std::string& branch_name, bool measuring) noexcept
      : session_(session), memory_(memory), phase_(phase), chunk_(chunk), slot_(slot), layer_(layer),
        branch_(branch), branch_name_(branch_name), measuring_(measuring) {}

  basic_frame_capture(const basic_frame_capture&) = delete;
  basic_frame_capture& operator=(const basic_frame_capture&) = delete;

  [[nodiscard]] chunk_id chunk() const noexcept { return chunk_; }
  /// @return the captured copy this graph belongs to (the plan's slot).
  [[nodiscard]] slot_id slot() const noexcept { return slot_; }
  [[nodiscard]] layer_id layer() const noexcept { return layer_; }
  [[nodiscard]] branch_id branch() const noexcept { return branch_; }
  [[nodiscard]] const std::string& branch_name() const noexcept { return branch_name_; }
  [[nodiscard]] graph_phase phase() const noexcept { return phase_; }
  /// @return true in the throw-away capture that measures the requests (its graph never runs).
  [[nodiscard]] bool measuring() const noexcept { return measuring_; }
  /// @return the capture stream: enqueue the layer's work here.
  [[nodiscard]] cudaStream_t stream() const noexcept { return session_.stream(); }
  /// @return the capture session (transients, the report).
  [[nodiscard]] Session& session() const noexcept { return session_; }

  /// @brief An output of this layer's forward (the next layer reads it): the same address in every
  /// branch on a plain upstream. @throws graphpool::error outside a forward, or when the request
  /// differs from the measurement.
  [[nodiscard]] void* allocate_output(std::size_t bytes, std::size_t alignment = default_alignment) {
    return allocate(graph_phase::forward, frame_part::output, bytes, alignment);
  }
  /// @brief A tensor this layer's forward saves for its backward. @throws as allocate_output().
  [[nodiscard]] void* allocate_saved(std::size_t bytes, std::size_t alignment = default_alignment) {
    return allocate(graph_phase::forward, frame_part::saved, bytes, alignment);
  }
  /// @brief A gradient this layer's backward returns (the previous layer's backward reads it).
  /// @throws graphpool::error outside a backward, or when the request differs from the measurement.
  [[nodiscard]] void* allocate_gradient(std::size_t bytes, std::size_t alignment = default_alignment) {
    return allocate(graph_phase::backward, frame_part::gradient, bytes, alignment);
  }

  /// @brief Transient memory: a graph memory node, valid until free_transient() or the graph's end.
  [[nodiscard]] void* allocate_transient(std::size_t bytes, std::size_t alignment = default_alignment) {
    return session_.allocate_transient(bytes, alignment);
  }
  /// @brief Frees a transient (a free node). @throws graphpool::error for a pointer that is not one.
  void free_transient(void* ptr) { session_.free_transient(ptr); }

  /// @return this layer's output part `index`.
  [[nodiscard]] void* output(std::size_t index) const { return memory_.find(layer_, frame_part::output, index); }
  /// @return this layer's saved part `index` (what its forward saved; read it in the backward).
  [[nodiscard]] void* saved(std::size_t index) const { return memory_.find(layer_, frame_part::saved, index); }
  /// @return output part `index` of `layer` (same chunk, slot and branch), e.g. the previous layer's.
  [[nodiscard]] void* output(layer_id layer, std::size_t index) const {
    return memory_.find(layer, frame_part::output, index);
  }
  /// @return gradient part `index` that `layer`'s backward returned, e.g. the next layer's.
  [[nodiscard]] void* gradient(layer_id layer, std::size_t index) const {
    return memory_.find(layer, frame_part::gradient, index);
  }

  /// @return "chunk 0 slot 1 layer 2 branch 'cp4' forward", for messages.
  [[nodiscard]] std::string describe() const {
    return chunk_.describe() + " " + slot_.describe() + " " + layer_.describe() + " branch '" + branch_name_ + "' " +
           to_string(phase_);
  }

 private:
  void* allocate(graph_phase allowed, frame_part part, std::size_t bytes, std::size_t alignment) {
    if (phase_ != allowed) {
      throw error(describe() + ": a " + std::string(to_string(part)) + " request belongs in the " +
                  to_string(allowed) + "; " +
                  (allowed == graph_phase::forward ? "a backward returns gradients (allocate_gradient)"
                                                   : "a forward makes outputs and saved tensors"));
    }
    if (bytes == 0) return nullptr;
    return memory_.allocate(layer_, part, bytes, alignment);
  }

  Session& session_;
  detail::frame_memory& memory_;
  graph_phase phase_;
  chunk_id chunk_;
  slot_id slot_;
  layer_id layer_;
  branch_id branch_;
  const std::string& branch_name_;
  bool measuring_;
};

/// @brief The context over a real capture_session.
using frame_capture = basic_frame_capture<capture_session>;

}  // namespace graphpool
