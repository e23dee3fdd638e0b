#pragma once
/// @file capture_resource.hpp
/// @brief The plug-in: a resource a framework's allocator calls during capture. Requests are transient
/// (graph memory nodes) unless made inside a persistent scope, which sends them to the slot's arena.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "graphpool/capture/capture_session.hpp"
#include "graphpool/detail/format.hpp"
#include "graphpool/error.hpp"
#include "graphpool/alignment.hpp"

namespace graphpool {

/// @brief A CCCL `cuda::mr`-shaped resource over one capture session (`Session` is capture_session;
/// a template so the routing is tested on the host with a stand-in session).
///
/// `allocate(stream, bytes, alignment)` returns transient memory (an alloc node; `deallocate` adds the
/// free node) unless a persistent_scope of this resource is alive, in which case the request is
/// persistent (the slot's arena; `deallocate` of it does nothing: the arena owns it). A zero-byte
/// request returns nullptr and `deallocate(nullptr)` does nothing; deallocating any other pointer
/// that is neither a live transient nor persistent memory of the session (a double free, a foreign
/// pointer) is an error naming it. The stream must be the session's capture stream.
/// Thread-safety: like its session, it belongs to the capturing thread.
template <class Session>
class basic_capture_resource final {
 public:
  explicit basic_capture_resource(Session& session) noexcept : session_(session) {}

  /// @brief While alive, requests through `resource` are persistent, of `kind`. Scopes nest.
  class persistent_scope final {
   public:
    explicit persistent_scope(basic_capture_resource& resource, persistent_kind kind = persistent_kind::saved)
        : resource_(resource) {
      resource_.push_persistent(kind);
    }
    persistent_scope(const persistent_scope&) = delete;
    persistent_scope& operator=(const persistent_scope&) = delete;
    ~persistent_scope() { resource_.pop_persistent(); }

   private:
    basic_capture_resource& resource_;
  };

  /// @brief Enters a persistent scope without RAII (for the C ABI); pair with pop_persistent().
  void push_persistent(persistent_kind kind) { scopes_.push_back(kind); }

  /// @brief Leaves the innermost persistent scope; does nothing outside one.
  void pop_persistent() noexcept {
    if (!scopes_.empty()) scopes_.pop_back();
  }

  /// @brief Transient memory, or persistent inside a persistent_scope.
  /// @throws graphpool::error for another stream than the session's, or when the request is refused.
  [[nodiscard]] void* allocate(cudaStream_t stream, std::size_t bytes, std::size_t alignment = default_alignment) {
    check_stream(stream, "allocate");
    return persistent() ? session_.allocate_persistent(bytes, alignment, scopes_.back())
                        : session_.allocate_transient(bytes, alignment);
  }

  /// @brief Releases a transient (a free node); persistent memory stays with its arena.
  /// @throws graphpool::error naming `ptr` when it is neither a live transient nor persistent memory
  /// of the session (a double free or a foreign pointer).
  void deallocate(cudaStream_t stream, void* ptr, std::size_t bytes, std::size_t /*alignment*/ = default_alignment) {
    check_stream(stream, "deallocate");
    if (ptr == nullptr) return;
    if (session_.owns_transient(ptr)) {
      session_.free_transient(ptr);
    } else if (!session_.owns_persistent(ptr)) {
      throw error(session_.where() + ": deallocate of " + detail::describe_pointer(ptr) + " (" + std::to_string(bytes) +
                  " bytes), which is neither a live transient nor persistent memory of this capture: a double "
                  "free, or a pointer this resource did not hand out");
    }
  }

  /// @brief allocate() on the session's stream.
  [[nodiscard]] void* allocate_sync(std::size_t bytes, std::size_t alignment = default_alignment) {
    return allocate(session_.stream(), bytes, alignment);
  }
  /// @brief deallocate() on the session's stream.
  void deallocate_sync(void* ptr, std::size_t bytes, std::size_t alignment = default_alignment) {
    deallocate(session_.stream(), ptr, bytes, alignment);
  }

  /// @return true inside a persistent_scope.
  [[nodiscard]] bool persistent() const noexcept { return !scopes_.empty(); }
  [[nodiscard]] Session& session() const noexcept { return session_; }

  [[nodiscard]] friend bool operator==(const basic_capture_resource& a, const basic_capture_resource& b) noexcept {
    return &a.session_ == &b.session_;
  }
  [[nodiscard]] friend bool operator!=(const basic_capture_resource& a, const basic_capture_resource& b) noexcept {
    return !(a == b);
  }

 private:
  void check_stream(cudaStream_t stream, const char* call) const {
    if (stream != session_.stream()) {
      throw error(session_.where() + ": " + call + " on a stream other than the capture stream; graph memory nodes "
                  "join the capture only on its own stream");
    }
  }

  Session& session_;
  std::vector<persistent_kind> scopes_;  // innermost last
};

/// @brief The plug-in over a real capture_session.
using capture_resource = basic_capture_resource<capture_session>;

}  // namespace graphpool
