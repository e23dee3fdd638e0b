#pragma once
/// @file captured_graphs.hpp
/// @brief The graphs variant_graphs captured and the launches made of them: each through the guard
/// when it is on (a forward claims its frame's planned bytes, a backward needs its forward live),
/// counted, and its stream noted for report().

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "graphpool/capture/graph_bank.hpp"
#include "graphpool/capture/slot_guard.hpp"
#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/ids.hpp"
#include "graphpool/plan/problem.hpp"

namespace graphpool::detail {

/// @brief The executables capture() made, at body_captures::graph_index(), and their launches.
/// Not thread-safe on its own: variant_graphs keeps them in set-up and launches from one thread at a time.
template <class Executable>
class captured_graphs final {
 public:
  /// @brief Keeps `graphs` in place of those kept before.
  void keep(std::vector<Executable> graphs) { graphs_ = std::move(graphs); }
  /// @brief Drops the graphs; the launch count and streams stay for report().
  void clear() noexcept { graphs_.clear(); }
  [[nodiscard]] bool empty() const noexcept { return graphs_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return graphs_.size(); }

  /// @brief Launches graph `index` on `stream`: `phase` of the frame `label` names, planned at `planned`,
  /// checked by `guard` when it is on. @throws graphpool::error for a guard violation (before anything
  /// is enqueued) or a failed launch.
  void launch(std::size_t index, graph_phase phase, const frame_label& label, const plan::planned_frame& planned,
              slot_guard& guard, cudaStream_t stream) {
    const Executable& graph = graphs_[index];
    if (!guard.enabled()) {
      graph.launch(stream);
    } else {
      const memory_range range{arena_id{static_cast<std::uint32_t>(planned.arena)}, planned.offset, planned.bytes};
      if (phase == graph_phase::backward) {
        guard.guarded_backward(label, range, [&] { graph.launch(stream); });
      } else {
        guard.guarded_forward(label, range, [&] { graph.launch(stream); });
      }
    }
    ++launches_;
    streams_.note(stream);
  }

  /// @return the current device's graph memory counters and the launches; `context` names the caller.
  [[nodiscard]] graph_memory_report report(const char* context) const {
    graph_memory_report r = read_graph_memory(current_device(context), context);
    streams_.describe(r, launches_);
    return r;
  }

 private:
  std::vector<Executable> graphs_;  // [(frame * branches + branch) * 2 + phase]
  std::size_t launches_ = 0;
  launch_streams streams_;
};

}  // namespace graphpool::detail
