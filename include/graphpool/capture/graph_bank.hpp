#pragma once
/// @file graph_bank.hpp
/// @brief Executables per (slot, branch, phase), launched by key, with the device's graph memory report.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "graphpool/capture/capture_session.hpp"
#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/detail/format.hpp"
#include "graphpool/error.hpp"
#include "graphpool/ids.hpp"

namespace graphpool {

/// @brief Which pass a graph runs.
enum class graph_phase { forward, backward, other };

/// @return "forward", "backward" or "other".
[[nodiscard]] inline const char* to_string(graph_phase phase) noexcept {
  static constexpr const char* names[] = {"forward", "backward", "other"};
  return names[static_cast<int>(phase)];
}

/// @brief Names one executable of a bank.
struct graph_key {
  slot_id slot;
  branch_id branch;
  graph_phase phase = graph_phase::other;

  [[nodiscard]] friend bool operator<(const graph_key& a, const graph_key& b) noexcept {
    return std::tie(a.slot.index, a.branch.index, a.phase) < std::tie(b.slot.index, b.branch.index, b.phase);
  }
  [[nodiscard]] std::string describe() const {
    return slot.describe() + " " + branch.describe() + " " + to_string(phase);
  }
};

/// @brief The device's graph memory and the bank's launches.
struct graph_memory_report {
  std::size_t graph_used_bytes = 0;           ///< cudaGraphMemAttrUsedMemCurrent
  std::size_t graph_used_high_bytes = 0;      ///< cudaGraphMemAttrUsedMemHigh
  std::size_t graph_reserved_bytes = 0;       ///< cudaGraphMemAttrReservedMemCurrent
  std::size_t graph_reserved_high_bytes = 0;  ///< cudaGraphMemAttrReservedMemHigh
  std::size_t launches = 0;
  std::size_t streams_used = 0;
  std::string warning;  ///< non-empty when launches used several streams

  /// @return a few printable lines.
  [[nodiscard]] std::string summary() const {
    using detail::format_bytes;
    std::string text = "graph memory: used " + format_bytes(graph_used_bytes) + " (high " +
                       format_bytes(graph_used_high_bytes) + "), reserved " + format_bytes(graph_reserved_bytes) +
                       " (high " + format_bytes(graph_reserved_high_bytes) + ")\n" + std::to_string(launches) +
                       " launch(es) on " + std::to_string(streams_used) + " stream(s)\n";
    return warning.empty() ? text : text + "warning: " + warning + "\n";
  }
};

/// @return the graph memory counters of `device` (cudaDeviceGetGraphMemAttribute); `context` names the caller.
[[nodiscard]] inline graph_memory_report read_graph_memory(int device, const char* context) {
  auto attribute = [&](cudaGraphMemAttributeType which) {
    std::uint64_t value = 0;
    GRAPHPOOL_CUDA_TRY(cudaDeviceGetGraphMemAttribute(device, which, &value), context);
    return static_cast<std::size_t>(value);
  };
  graph_memory_report r;
  r.graph_used_bytes = attribute(cudaGraphMemAttrUsedMemCurrent);
  r.graph_used_high_bytes = attribute(cudaGraphMemAttrUsedMemHigh);
  r.graph_reserved_bytes = attribute(cudaGraphMemAttrReservedMemCurrent);
  r.graph_reserved_high_bytes = attribute(cudaGraphMemAttrReservedMemHigh);
  return r;
}

/// @brief Remembers which streams launched, to warn when graph memory may be held once per stream.
///
/// Thread-safety: note(), describe() and reset() may be called from several threads at once.
class launch_streams final {
 public:
  void note(cudaStream_t stream) {
    if (last_.load(std::memory_order_relaxed) == stream) return;  // the common case: one stream
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::find(streams_.begin(), streams_.end(), stream) == streams_.end()) streams_.push_back(stream);
    last_.store(stream, std::memory_order_relaxed);
  }

  /// @brief Fills the report's launch count, stream count and warning.
  void describe(graph_memory_report& r, std::size_t launches) const {
    r.launches = launches;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      r.streams_used = streams_.size();
    }
    if (r.streams_used > 1) {
      r.warning = "launches used " + std::to_string(r.streams_used) +
                  " streams; graph memory is shared only among graphs launched on one stream, so each stream "
                  "may hold its own copy";
    }
  }

  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    streams_.clear();
    last_.store(nullptr, std::memory_order_relaxed);
  }

 private:
  std::atomic<cudaStream_t> last_{nullptr};
  mutable std::mutex mutex_;
  std::vector<cudaStream_t> streams_;
};

/// @brief Returns unused graph memory of `device` to it (cudaDeviceGraphMemTrim) and resets the high marks.
inline void trim_graph_memory(int device, const char* context) {
  GRAPHPOOL_CUDA_TRY(cudaDeviceGraphMemTrim(device), context);
  std::uint64_t zero = 0;
  GRAPHPOOL_CUDA_TRY(cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrUsedMemHigh, &zero), context);
  GRAPHPOOL_CUDA_TRY(cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrReservedMemHigh, &zero), context);
}

/// @brief Executables per (slot, branch, phase).
///
/// The driver shares the physical pages of graph memory nodes among graphs launched one after another
/// on **one stream** (measured on an H200: 8 graphs of 256 MiB each reserve 256 MiB on one stream, 512
/// MiB on two alternating streams). Launch every variant on one stream; report() warns otherwise.
///
/// The building block for captures keyed by hand; variant_graphs (variant_graphs.hpp) runs the whole
/// flow from a plan, with the guard.
///
/// Thread-safety: add() must not run concurrently with other calls. launch(), contains(), report(),
/// trim() and reset_streams() may be called from several threads at once, except that launches of one
/// key must not overlap: a CUDA graph executable is not thread-safe, so one key is launched from one
/// thread at a time (no lock is taken on the launch path).
class graph_bank final {
 public:
  /// @brief A bank on the current device.
  graph_bank() : device_(detail::current_device("graph_bank")) {}

  /// @brief Keeps `executable` under `key`.
  /// @throws graphpool::error when the key is taken or the executable is empty.
  void add(graph_key key, graph_executable executable) {
    if (!executable) throw error("graph_bank::add: the executable for " + key.describe() + " is empty");
    if (entries_.count(key) != 0) throw error("graph_bank::add: " + key.describe() + " already has an executable");
    entries_.emplace(key, std::move(executable));
  }

  /// @return true when `key` has an executable.
  [[nodiscard]] bool contains(graph_key key) const { return entries_.count(key) != 0; }

  /// @brief Launches `key` on `stream`.
  /// @throws graphpool::error for an unknown key or a failed launch.
  void launch(graph_key key, cudaStream_t stream) {
    const auto found = entries_.find(key);
    if (found == entries_.end()) throw error("graph_bank::launch: no executable for " + key.describe());
    found->second.launch(stream);
    launches_.fetch_add(1, std::memory_order_relaxed);
    streams_.note(stream);
  }

  /// @return the device's graph memory counters and the bank's launch streams.
  [[nodiscard]] graph_memory_report report() const {
    graph_memory_report r = read_graph_memory(device_, "graph_bank::report");
    streams_.describe(r, launches_.load(std::memory_order_relaxed));
    return r;
  }

  /// @brief Returns unused graph memory to the device (cudaDeviceGraphMemTrim) and resets the high marks.
  void trim() { trim_graph_memory(device_, "graph_bank::trim"); }

  /// @brief Forgets which streams launched (after moving to one stream).
  void reset_streams() { streams_.reset(); }

 private:
  int device_ = 0;
  std::map<graph_key, graph_executable> entries_;
  std::atomic<std::size_t> launches_{0};
  launch_streams streams_;
};

}  // namespace graphpool
