#pragma once
/// @file body_captures.hpp
/// @brief The captures variant_graphs runs its model's bodies in: once per (chunk, branch) to measure
/// their persistent requests, then once per (chunk, slot, layer, branch) and phase at the planned
/// addresses; and where each captured graph sits among them.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/capture/capture_options.hpp"
#include "graphpool/capture/capture_session.hpp"
#include "graphpool/capture/frame_capture.hpp"
#include "graphpool/capture/frame_memory.hpp"
#include "graphpool/capture/graph_bank.hpp"
#include "graphpool/capture/persistent_memory.hpp"
#include "graphpool/capture/variant_plan.hpp"
#include "graphpool/error.hpp"
#include "graphpool/ids.hpp"
#include "graphpool/memory/arena_allocator.hpp"
#include "graphpool/plan/problem.hpp"

namespace graphpool::detail {

/// @brief A model's forward and backward bodies and the captures that run them. A capture that fails
/// is rolled back (stream and memory as before) and its error names what was being captured. Set-up
/// only: one thread, as variant_graphs' set-up.
template <class Session>
class body_captures final {
 public:
  using frame = basic_frame_capture<Session>;                     ///< what a body gets
  using body = std::function<void(frame&)>;                       ///< one layer's forward or backward
  using executable = decltype(std::declval<Session&>().finish());  ///< one captured graph

  /// @brief Captures of `model`'s bodies (the model must outlive this object).
  body_captures(const variant_model& model, capture_options options) : model_(model), options_(options) {}
  body_captures(const body_captures&) = delete;
  body_captures& operator=(const body_captures&) = delete;

  /// @brief Keeps `forward` and `backward` and runs each chunk's, every branch, in a throw-away capture
  /// on `stream`: layers in order forward, then in reverse backward, each layer's persistent requests
  /// recorded in `measured` ([chunk][layer][branch], laid out by empty_measurement()); then `accept()`,
  /// which may throw. When a capture or `accept()` throws, the earlier bodies are kept.
  template <class Accept>
  void measure(cudaStream_t stream, body forward, body backward, measurement& measured, Accept&& accept) {
    body earlier_forward = std::exchange(forward_, std::move(forward));
    body earlier_backward = std::exchange(backward_, std::move(backward));
    try {
      for (std::uint32_t c = 0; c < measured.size(); ++c) {
        for (std::uint32_t b = 0; b < model_.branches.size(); ++b) {
          std::vector<measured_layer*> layers;
          for (auto& per_branch : measured[c]) layers.push_back(&per_branch[b]);
          run_capture(stream, "chunk " + std::to_string(c) + " (measuring)", branch_id{b}, [&](Session& session) {
            measuring_memory<Session> memory(session, layers);
            for (std::uint32_t l = 0; l < layers.size(); ++l) {
              run_body(graph_phase::forward, session, memory, chunk_id{c}, slot_id{0}, layer_id{l}, branch_id{b}, true);
            }
            for (auto l = static_cast<std::uint32_t>(layers.size()); l-- > 0;) {
              run_body(graph_phase::backward, session, memory, chunk_id{c}, slot_id{0}, layer_id{l}, branch_id{b}, true);
            }
          });
        }
      }
      accept();
    } catch (...) {
      forward_ = std::move(earlier_forward);
      backward_ = std::move(earlier_backward);
      throw;
    }
  }

  /// @return every (chunk, slot, layer, branch)'s forward and backward, captured with the measured
  /// bodies at the addresses `arenas` (declared from `p` by declare_plan()) gives, each at
  /// graph_index(). @throws graphpool::error naming the frame, branch and cause; nothing stays captured.
  template <class Upstream>
  [[nodiscard]] std::vector<executable> capture(cudaStream_t stream, const arena_allocator<Upstream>& arenas,
                                                const plan::plan& p, const measurement& measured) {
    const plan::frame_index frame_at(p);
    std::vector<executable> captured(p.frames.size() * model_.branches.size() * 2);
    for (std::uint32_t c = 0; c < static_cast<std::uint32_t>(p.chunks); ++c) {
      const auto layers = static_cast<std::uint32_t>(p.layers_per_chunk[c]);
      for (std::uint32_t s = 0; s < static_cast<std::uint32_t>(p.slots) && layers > 0; ++s) {
        for (std::uint32_t b = 0; b < model_.branches.size(); ++b) {
          replaying_memory memory =
              frame_memories(arenas, p, frame_at, model_, measured, chunk_id{c}, slot_id{s}, branch_id{b});
          auto one = [&](graph_phase phase, std::uint32_t l) {
            const std::size_t frame = frame_at(c, s, l);
            const std::string name = plan::describe_frame(p.frames[frame]) + " " + to_string(phase);
            captured[graph_index(frame, branch_id{b}, phase)] = run_capture(stream, name, branch_id{b}, [&](Session& session) {
              try {
                run_body(phase, session, memory, chunk_id{c}, slot_id{s}, layer_id{l}, branch_id{b}, false);
                memory.finish(layer_id{l}, phase == graph_phase::backward);
              } catch (...) {
                memory.rollback();
                throw;
              }
            });
          };
          for (std::uint32_t l = 0; l < layers; ++l) one(graph_phase::forward, l);
          for (std::uint32_t l = layers; l-- > 0;) one(graph_phase::backward, l);
        }
      }
    }
    return captured;
  }

  /// @return where the graph of plan frame `frame`, `branch` and `phase` sits in what capture() returns.
  [[nodiscard]] std::size_t graph_index(std::size_t frame, branch_id branch, graph_phase phase) const noexcept {
    return (frame * model_.branches.size() + branch.index) * 2 + (phase == graph_phase::backward ? 1 : 0);
  }

 private:
  template <class Memory>
  void run_body(graph_phase phase, Session& session, Memory& memory, chunk_id chunk, slot_id slot, layer_id layer,
                branch_id branch, bool measuring) const {
    const body& code = phase == graph_phase::forward ? forward_ : backward_;
    if (!code) throw error(std::string("variant_graphs: no ") + to_string(phase) + " body; pass one to measure()");
    frame context(session, memory, phase, chunk, slot, layer, branch, model_.branches[branch.index], measuring);
    code(context);
  }

  // One capture on `stream`: `fill(session)` inside, then the executable; on failure the session is
  // aborted (everything restored) and the error names what was captured.
  template <class Fill>
  executable run_capture(cudaStream_t stream, const std::string& what, branch_id branch, Fill&& fill) {
    Session session(stream, no_persistent_, what, model_.branches[branch.index], options_);
    return capture_session::finish_or_roll_back(session, fill);
  }

  const variant_model& model_;
  capture_options options_;
  no_persistent_memory no_persistent_;  // the sessions' own: frame memory takes every persistent request
  body forward_;
  body backward_;
};

}  // namespace graphpool::detail
