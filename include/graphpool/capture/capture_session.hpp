#pragma once
/// @file capture_session.hpp
/// @brief Capturing one branch of one slot: persistent requests from the slot's arena, transient ones
/// on CUDA graph memory nodes, and everything restored when the capture fails.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/detail/format.hpp"
#include "graphpool/error.hpp"
#include "graphpool/alignment.hpp"
#include "graphpool/capture/capture_options.hpp"
#include "graphpool/capture/graph_executable.hpp"
#include "graphpool/capture/memory_nodes.hpp"

namespace graphpool {

/// @brief Captures one branch of one slot on a stream (RAII).
///
/// Persistent requests (outputs, saved tensors, returned gradients) go to a persistent_memory (the
/// slot's arena); transient requests become graph memory nodes: an alloc node after the capture's
/// current dependencies, a free node on release. A transient still held at finish() is freed at the
/// graph's end (counted in the report). If the session is destroyed or aborted before finish() — user
/// code threw, or the capture was invalidated — it ends the capture, destroys the partial graph,
/// restores the thread's capture mode and rolls back the persistent requests; the stream is usable
/// and the branch can be captured again.
///
/// Thread-safety: a session belongs to the thread that captures; sessions on different streams and
/// threads are independent.
class capture_session final {
 public:
  /// @brief Begins capturing `stream` for (slot, branch); both names appear in every error.
  /// @throws graphpool::error when the stream is already capturing or capture cannot begin.
  capture_session(cudaStream_t stream, persistent_memory& persistent, std::string slot, std::string branch,
                  capture_options options = {})
      : stream_(stream), persistent_(persistent), options_(options) {
    report_.slot = std::move(slot);
    report_.branch = std::move(branch);
    device_ = detail::current_device("capture_session");
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    GRAPHPOOL_CUDA_TRY(cudaStreamIsCapturing(stream_, &status), where());
    if (status != cudaStreamCaptureStatusNone) {
      throw error(where() + ": the stream is already capturing; end that capture first");
    }
    // Remember the thread's capture mode, so a failure inside the captured code cannot leave it changed.
    thread_mode_ = cudaStreamCaptureModeRelaxed;
    GRAPHPOOL_CUDA_TRY(cudaThreadExchangeStreamCaptureMode(&thread_mode_), where());
    cudaStreamCaptureMode restore = thread_mode_;
    GRAPHPOOL_CUDA_TRY(cudaThreadExchangeStreamCaptureMode(&restore), where());
    if (options_.into != nullptr) {
      GRAPHPOOL_CUDA_TRY(cudaStreamBeginCaptureToGraph(stream_, options_.into, nullptr, nullptr, 0, options_.mode),
                         where());
    } else {
      GRAPHPOOL_CUDA_TRY(cudaStreamBeginCapture(stream_, options_.mode), where());
    }
    capturing_ = true;
  }

  capture_session(const capture_session&) = delete;
  capture_session& operator=(const capture_session&) = delete;
  capture_session(capture_session&&) = delete;
  capture_session& operator=(capture_session&&) = delete;

  /// @brief Aborts an unfinished capture (see abort()); never throws.
  ~capture_session() { abort(); }

  /// @brief A persistent request, served by the slot's persistent memory at a fixed address. A
  /// zero-byte request returns nullptr and reaches no memory (graphpool's one rule for zero bytes).
  /// @throws graphpool::error naming the slot and branch when the persistent memory refuses it.
  [[nodiscard]] void* allocate_persistent(std::size_t bytes, std::size_t alignment = default_alignment,
                                          persistent_kind kind = persistent_kind::saved) {
    require_capturing("allocate_persistent");
    if (bytes == 0) return nullptr;
    void* ptr = persistent_.allocate(*this, kind, bytes, alignment);
    persistent_ranges_.push_back({static_cast<const std::byte*>(ptr), bytes});
    ++report_.persistent_requests;
    report_.persistent_bytes += bytes;
    return ptr;
  }

  /// @brief A transient request: a graph memory alloc node after the capture's current dependencies.
  /// Work captured afterwards may use the memory until free_transient() (or the graph's end). A
  /// zero-byte request returns nullptr and adds no node.
  /// @throws graphpool::error naming the slot, branch and size when the node cannot be added.
  [[nodiscard]] void* allocate_transient(std::size_t bytes, std::size_t alignment = default_alignment) {
    require_capturing("allocate_transient");
    if (bytes == 0) return nullptr;
    detail::check_alignment(alignment, where() + ": transient request of " + std::to_string(bytes) + " bytes");
    // Graph allocations are 256-byte aligned; a stricter alignment pads the request.
    const std::size_t padding = alignment <= default_alignment ? 0 : alignment - default_alignment;
    if (bytes > SIZE_MAX - padding) {
      throw error(where() + ": transient request of " + std::to_string(bytes) + " bytes at alignment " +
                  std::to_string(alignment) + " overflows when padded to that alignment; no node was added");
    }
    void* raw = detail::add_alloc_node(stream_, device_, bytes + padding,
                                       where() + ": transient allocation of " + std::to_string(bytes) + " bytes");
    void* aligned = reinterpret_cast<void*>(align_up(reinterpret_cast<std::uintptr_t>(raw), alignment));
    transients_.push_back({aligned, raw});
    ++report_.transient_allocations;
    report_.transient_bytes += bytes;
    return aligned;
  }

  /// @brief Releases a transient request: a free node after the capture's current dependencies.
  /// nullptr (what a zero-byte request returned) is accepted and does nothing.
  /// @throws graphpool::error when `ptr` is not a live transient of this session (a double free or a
  /// foreign pointer).
  void free_transient(void* ptr) {
    require_capturing("free_transient");
    if (ptr == nullptr) return;
    for (std::size_t i = 0; i < transients_.size(); ++i) {
      if (transients_[i].aligned != ptr) continue;
      free_node(transients_[i].raw);
      transients_.erase(transients_.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
    throw error(where() + ": free_transient of " + detail::describe_pointer(ptr) + ", which is not a live transient of this capture");
  }

  /// @return true when `ptr` is a live transient of this session.
  [[nodiscard]] bool owns_transient(const void* ptr) const noexcept {
    for (const transient& t : transients_) {
      if (t.aligned == ptr) return true;
    }
    return false;
  }

  /// @return true when `ptr` lies inside persistent memory this capture was given.
  [[nodiscard]] bool owns_persistent(const void* ptr) const noexcept {
    const auto* p = static_cast<const std::byte*>(ptr);
    for (const persistent_range& r : persistent_ranges_) {
      if (p >= r.begin && p < r.begin + r.bytes) return true;
    }
    return false;
  }

  /// @brief Frees held transients at the graph's end, ends the capture, instantiates (and uploads).
  /// @throws graphpool::error naming the slot and branch; the session is then aborted (see abort()).
  [[nodiscard]] graph_executable finish() {
    require_capturing("finish");
    try {
      while (!transients_.empty()) {
        free_node(transients_.back().raw);
        transients_.pop_back();
        ++report_.transients_freed_at_end;
      }
      cudaGraph_t graph = nullptr;
      capturing_ = false;
      const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
      const bool owns_graph = options_.into == nullptr;
      if (ended != cudaSuccess || graph == nullptr) {
        if (graph != nullptr && owns_graph) {
          GRAPHPOOL_CUDA_REPORT(cudaGraphDestroy(graph),
                                (where() + ": destroying the graph of the invalidated capture").c_str());
        }
        static_cast<void>(cudaGetLastError());
        throw error(where() + ": the capture was invalidated (" + cudaGetErrorString(ended) +
                        "), most likely by a call not permitted while capturing",
                    static_cast<int>(ended));
      }
      cudaGraphExec_t exec = nullptr;
      const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
      if (instantiated != cudaSuccess) {
        if (owns_graph) {
          GRAPHPOOL_CUDA_REPORT(cudaGraphDestroy(graph),
                                (where() + ": destroying the graph that failed to instantiate").c_str());
        }
        static_cast<void>(cudaGetLastError());
        throw error(where() + ": cudaGraphInstantiate failed with " + cudaGetErrorName(instantiated),
                    static_cast<int>(instantiated));
      }
      graph_executable result(exec, graph, owns_graph);
      if (options_.upload || options_.upload_stream != nullptr) {
        GRAPHPOOL_CUDA_TRY(cudaGraphUpload(exec, options_.upload_stream != nullptr ? options_.upload_stream : stream_),
                           where() + ": uploading the graph");
      }
      restore_thread_mode();
      try {
        persistent_.commit();
      } catch (const error& e) {
        throw error(where() + ": " + e.what(), e.cuda_code());  // e.g. fewer requests than the measurement
      }
      finished_ = true;
      return result;
    } catch (...) {
      abort();
      throw;
    }
  }

  /// @brief Ends an unfinished capture and undoes it: destroys the partial graph, restores the thread's
  /// capture mode, rolls back the persistent requests and clears the CUDA error the failure left.
  /// Never throws; does nothing after finish() or a previous abort().
  void abort() noexcept {
    if (finished_ || aborted_) return;
    aborted_ = true;
    restore_thread_mode();
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream_, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
      cudaGraph_t graph = nullptr;
      static_cast<void>(cudaStreamEndCapture(stream_, &graph));
      if (graph != nullptr && options_.into == nullptr) static_cast<void>(cudaGraphDestroy(graph));
    }
    capturing_ = false;
    transients_.clear();
    persistent_ranges_.clear();
    persistent_.rollback();
    static_cast<void>(cudaGetLastError());
  }

  /// @return what the capture did so far.
  [[nodiscard]] const capture_report& report() const noexcept { return report_; }
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }
  [[nodiscard]] int device() const noexcept { return device_; }
  /// @return "slot 'S' branch 'B'", for messages.
  [[nodiscard]] std::string where() const { return "capture of slot '" + report_.slot + "' branch '" + report_.branch + "'"; }

  /// @brief Runs `body(session)` inside a capture of (slot, branch) and returns the executable.
  ///
  /// If `body` throws or the capture fails, the session is aborted (everything restored) and a
  /// graphpool::error naming the slot, the branch and the cause is thrown.
  template <class Body>
  [[nodiscard]] static graph_executable capture(cudaStream_t stream, persistent_memory& persistent, std::string slot,
                                                std::string branch, Body&& body, capture_options options = {}) {
    capture_session session(stream, persistent, std::move(slot), std::move(branch), options);
    return finish_or_roll_back(session, body);
  }

  /// @brief Runs `body(session)` in `session`, then finish(); if `body` throws, aborts the session
  /// (everything restored) and throws a graphpool::error naming the capture and the cause. `Session`
  /// is capture_session or a stand-in with abort(), finish() and where().
  template <class Session, class Body>
  [[nodiscard]] static auto finish_or_roll_back(Session& session, Body&& body) {
    try {
      body(session);
    } catch (const error& e) {
      session.abort();
      throw error(session.where() + " failed: " + e.what() + "; the capture was rolled back", e.cuda_code());
    } catch (const std::exception& e) {
      session.abort();
      throw error(session.where() + " failed: " + e.what() + "; the capture was rolled back");
    } catch (...) {
      session.abort();
      throw error(session.where() + " failed: the body threw something that is not a std::exception; the capture "
                  "was rolled back");
    }
    return session.finish();
  }

 private:
  struct transient {
    void* aligned;
    void* raw;
  };
  struct persistent_range {
    const std::byte* begin;
    std::size_t bytes;
  };

  void require_capturing(const char* call) const {
    if (!capturing_) {
      throw error(where() + ": " + call + " after the capture " + (finished_ ? "finished" : "was aborted"));
    }
  }

  void restore_thread_mode() noexcept {
    cudaStreamCaptureMode mode = thread_mode_;
    static_cast<void>(cudaThreadExchangeStreamCaptureMode(&mode));
  }

  void free_node(void* raw) { detail::add_free_node(stream_, raw, where() + ": transient free"); }

  cudaStream_t stream_;
  persistent_memory& persistent_;
  capture_options options_;
  capture_report report_;
  int device_ = 0;
  cudaStreamCaptureMode thread_mode_ = cudaStreamCaptureModeGlobal;
  bool capturing_ = false;
  bool finished_ = false;
  bool aborted_ = false;
  std::vector<transient> transients_;
  std::vector<persistent_range> persistent_ranges_;
};

}  // namespace graphpool
