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
#include "graphpool/capture/slot_guard.hpp"
#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/detail/format.hpp"
#include "graphpool/error.hpp"

namespace graphpool {

/// @brief Which pass a graph runs.
enum class graph_phase { forward, backward, other };

/// @brief Names one executable of a bank.
struct graph_key {
  std::uint32_t slot = 0;
  std::uint32_t branch = 0;
  graph_phase phase = graph_phase::other;

  [[nodiscard]] friend bool operator<(const graph_key& a, const graph_key& b) noexcept {
    return std::tie(a.slot, a.branch, a.phase) < std::tie(b.slot, b.branch, b.phase);
  }
  [[nodiscard]] std::string describe() const {
    static constexpr const char* phases[] = {"forward", "backward", "other"};
    return "slot " + std::to_string(slot) + " branch " + std::to_string(branch) + " " + phases[static_cast<int>(phase)];
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

/// @brief Executables per (slot, branch, phase).
///
/// The driver shares the physical pages of graph memory nodes among graphs launched one after another
/// on **one stream** (measured on an H200: 8 graphs of 256 MiB each reserve 256 MiB on one stream, 512
/// MiB on two alternating streams). Launch every variant on one stream; report() warns otherwise.
///
/// With a guard (slot_guard, on with GRAPHPOOL_SLOT_DEBUG=1), a forward launch given its frame claims
/// the arenas registered with the executable, before it is enqueued; the backward releases them. A
/// disabled guard costs one branch per launch.
///
/// Thread-safety: add() must not run concurrently with other calls; launch() and report() may be
/// called from several threads at once.
class graph_bank final {
 public:
  /// @brief A bank on the current device, checking launches with `guard` when it is enabled.
  explicit graph_bank(slot_guard* guard = nullptr) : guard_(guard), device_(detail::current_device("graph_bank")) {}

  /// @brief Keeps `executable` under `key`; `arenas` are what its frame owns from forward to backward.
  /// @throws graphpool::error when the key is taken or the executable is empty.
  void add(graph_key key, graph_executable executable, std::vector<std::size_t> arenas = {}) {
    if (!executable) throw error("graph_bank::add: the executable for " + key.describe() + " is empty");
    if (entries_.count(key) != 0) throw error("graph_bank::add: " + key.describe() + " already has an executable");
    entries_.emplace(key, entry{std::move(executable), std::move(arenas)});
  }

  /// @return true when `key` has an executable.
  [[nodiscard]] bool contains(graph_key key) const { return entries_.count(key) != 0; }

  /// @brief Launches `key` on `stream`. With an enabled guard and a `frame`, a forward first claims the
  /// executable's arenas (and fails, unlaunched, when another live frame owns one); a backward releases them.
  /// @throws graphpool::error for an unknown key, a guard violation, or a failed launch.
  void launch(graph_key key, cudaStream_t stream, const frame_label* frame = nullptr) {
    const auto found = entries_.find(key);
    if (found == entries_.end()) throw error("graph_bank::launch: no executable for " + key.describe());
    const bool guarded = guard_ != nullptr && guard_->enabled() && frame != nullptr;
    if (guarded && key.phase == graph_phase::forward) guard_->claim(found->second.arenas, *frame);
    found->second.executable.launch(stream);
    if (guarded && key.phase == graph_phase::backward) guard_->release(found->second.arenas, *frame);
    launches_.fetch_add(1, std::memory_order_relaxed);
    note_stream(stream);
  }

  /// @return the device's graph memory counters and the bank's launch streams.
  [[nodiscard]] graph_memory_report report() const {
    graph_memory_report r;
    r.graph_used_bytes = attribute(cudaGraphMemAttrUsedMemCurrent);
    r.graph_used_high_bytes = attribute(cudaGraphMemAttrUsedMemHigh);
    r.graph_reserved_bytes = attribute(cudaGraphMemAttrReservedMemCurrent);
    r.graph_reserved_high_bytes = attribute(cudaGraphMemAttrReservedMemHigh);
    r.launches = launches_.load(std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(streams_mutex_);
      r.streams_used = streams_.size();
    }
    if (r.streams_used > 1) {
      r.warning = "launches used " + std::to_string(r.streams_used) +
                  " streams; graph memory is shared only among graphs launched on one stream, so each stream "
                  "may hold its own copy";
    }
    return r;
  }

  /// @brief Returns unused graph memory to the device (cudaDeviceGraphMemTrim) and resets the high marks.
  void trim() {
    GRAPHPOOL_CUDA_TRY(cudaDeviceGraphMemTrim(device_), "graph_bank::trim");
    std::uint64_t zero = 0;
    GRAPHPOOL_CUDA_TRY(cudaDeviceSetGraphMemAttribute(device_, cudaGraphMemAttrUsedMemHigh, &zero), "graph_bank::trim");
    GRAPHPOOL_CUDA_TRY(cudaDeviceSetGraphMemAttribute(device_, cudaGraphMemAttrReservedMemHigh, &zero), "graph_bank::trim");
  }

  /// @brief Forgets which streams launched (after moving to one stream).
  void reset_streams() {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    streams_.clear();
    last_stream_.store(nullptr, std::memory_order_relaxed);
  }

 private:
  struct entry {
    graph_executable executable;
    std::vector<std::size_t> arenas;
  };

  void note_stream(cudaStream_t stream) {
    if (last_stream_.load(std::memory_order_relaxed) == stream) return;  // the common case: one stream
    std::lock_guard<std::mutex> lock(streams_mutex_);
    if (std::find(streams_.begin(), streams_.end(), stream) == streams_.end()) streams_.push_back(stream);
    last_stream_.store(stream, std::memory_order_relaxed);
  }

  [[nodiscard]] std::size_t attribute(cudaGraphMemAttributeType which) const {
    std::uint64_t value = 0;
    GRAPHPOOL_CUDA_TRY(cudaDeviceGetGraphMemAttribute(device_, which, &value), "graph_bank::report");
    return static_cast<std::size_t>(value);
  }

  slot_guard* guard_;
  int device_ = 0;
  std::map<graph_key, entry> entries_;
  std::atomic<std::size_t> launches_{0};
  std::atomic<cudaStream_t> last_stream_{nullptr};
  mutable std::mutex streams_mutex_;
  std::vector<cudaStream_t> streams_;
};

}  // namespace graphpool
