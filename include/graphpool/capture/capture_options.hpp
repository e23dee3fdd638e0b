#pragma once
/// @file capture_options.hpp
/// @brief What a capture_session is given (how to capture, where persistent requests go) and what
/// it reports it did.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace graphpool {

class capture_session;

/// @brief What a persistent request is for: an output consumers read (identical in every branch),
/// or a tensor the branch saves for its own backward.
enum class persistent_kind { output, saved };

/// @brief Where a session's persistent requests go. Implementations: capture/persistent_memory.hpp.
///
/// Thread-safety: not thread-safe; an object serves one capture at a time, on its capturing thread.
class persistent_memory {
 public:
  virtual ~persistent_memory() = default;
  /// @brief Serves a persistent request made while `session` captures.
  virtual void* allocate(capture_session& session, persistent_kind kind, std::size_t bytes, std::size_t alignment) = 0;
  /// @brief Forgets every request since the capture began (the capture failed).
  virtual void rollback() noexcept = 0;
  /// @brief The capture succeeded.
  virtual void commit() {}
};

/// @brief How a session captures.
struct capture_options {
  /// Stream capture mode: thread-local by default; global and relaxed selectable.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeThreadLocal;
  /// When set, capture into this graph (cudaStreamBeginCaptureToGraph) for frameworks that build
  /// graphs node by node; the graph stays the caller's.
  cudaGraph_t into = nullptr;
  /// Upload the executable to this stream after instantiation (cudaGraphUpload), so the first launch
  /// does not pay the physical mapping of its memory nodes. nullptr: no upload, unless `upload` is set.
  cudaStream_t upload_stream = nullptr;
  /// Upload after instantiation even without an upload_stream: then to the capture stream.
  bool upload = false;
};

/// @brief What one capture did.
struct capture_report {
  std::string slot;
  std::string branch;
  std::size_t persistent_requests = 0;
  std::size_t persistent_bytes = 0;
  std::size_t transient_allocations = 0;
  std::size_t transient_bytes = 0;
  std::size_t transients_freed_at_end = 0;  ///< still held when the capture ended: freed at the graph's end
};

}  // namespace graphpool
