#pragma once
// A stand-in for capture_session on the host: "kernels" are host functions recorded during the
// capture and run at each launch, transients are host buffers the graph keeps. It lets the whole
// variant_graphs flow run, and check its data, without a GPU.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/capture/capture_session.hpp"
#include "graphpool/error.hpp"

namespace graphpool::testing {

/// Knobs every stand-in shares (tests run on one thread).
struct stand_in_knobs {
  int captures = 0;              // sessions begun
  int launches = 0;              // graphs launched
  bool fail_next_launch = false;  // the next launch throws (a failed cudaGraphLaunch)
};
inline stand_in_knobs& knobs() {
  static stand_in_knobs k;
  return k;
}

/// What a stand-in capture made: host work to run at each launch.
class stand_in_graph {
 public:
  stand_in_graph() = default;
  explicit stand_in_graph(std::vector<std::function<void()>> work, std::vector<std::shared_ptr<std::vector<std::byte>>> memory)
      : work_(std::move(work)), memory_(std::move(memory)), valid_(true) {}
  void launch(cudaStream_t) const {
    if (knobs().fail_next_launch) {
      knobs().fail_next_launch = false;
      throw error("stand-in launch failed (planted)");
    }
    ++knobs().launches;
    for (const auto& w : work_) w();
  }
  explicit operator bool() const noexcept { return valid_; }

 private:
  std::vector<std::function<void()>> work_;
  std::vector<std::shared_ptr<std::vector<std::byte>>> memory_;  // transients live as long as the graph
  bool valid_ = false;
};

/// The members of capture_session that variant_graphs uses, on the host.
class stand_in_session {
 public:
  stand_in_session(cudaStream_t stream, persistent_memory&, std::string slot, std::string branch, capture_options = {})
      : stream_(stream), slot_(std::move(slot)), branch_(std::move(branch)) {
    ++knobs().captures;
  }

  void* allocate_transient(std::size_t bytes, std::size_t alignment = default_alignment) {
    require_capturing("allocate_transient");
    detail::check_alignment(alignment, where() + ": transient request of " + std::to_string(bytes) + " bytes");
    if (bytes == 0) return nullptr;
    auto buffer = std::make_shared<std::vector<std::byte>>(bytes + alignment);
    memory_.push_back(buffer);
    auto raw = reinterpret_cast<std::uintptr_t>(buffer->data());
    void* aligned = reinterpret_cast<void*>(align_up(raw, alignment));
    live_.push_back(aligned);
    return aligned;
  }
  void free_transient(void* ptr) {
    require_capturing("free_transient");
    if (ptr == nullptr) return;
    for (std::size_t i = 0; i < live_.size(); ++i) {
      if (live_[i] == ptr) {
        live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
    }
    throw error(where() + ": free_transient of a pointer that is not a live transient");
  }
  /// Host work run at every launch of the graph this capture makes.
  void record(std::function<void()> work) {
    require_capturing("record");
    work_.push_back(std::move(work));
  }
  stand_in_graph finish() {
    require_capturing("finish");
    finished_ = true;
    return stand_in_graph(std::move(work_), std::move(memory_));
  }
  void abort() noexcept {
    aborted_ = true;
    work_.clear();
  }
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }
  [[nodiscard]] std::string where() const { return "capture of slot '" + slot_ + "' branch '" + branch_ + "'"; }

 private:
  void require_capturing(const char* call) const {
    if (finished_ || aborted_) throw error(where() + ": " + call + " after the capture ended");
  }

  cudaStream_t stream_;
  std::string slot_;
  std::string branch_;
  std::vector<std::function<void()>> work_;
  std::vector<std::shared_ptr<std::vector<std::byte>>> memory_;
  std::vector<void*> live_;
  bool finished_ = false;
  bool aborted_ = false;
};

}  // namespace graphpool::testing
