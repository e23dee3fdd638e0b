// The messages of capture_session, graph_bank and window_branch errors (they need a device): each names
// the capture (slot and branch) or the graph, and says what went wrong.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "catch.hpp"
#include "graphpool/capture.hpp"
#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/memory/arena_allocator.hpp"
#include "graphpool/memory/cuda_pool_resource.hpp"
#include "graphpool/memory/shared_physical_resource.hpp"
#include "gpu_support.hpp"

using namespace graphpool;
using graphpool::testing::contains_text;
using graphpool::testing::stream_guard;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

bool stream_is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  GRAPHPOOL_CUDA_TRY(cudaStreamIsCapturing(stream, &status), "status");
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace

TEST_CASE("a session on a stream that is already capturing is refused, naming the capture", "[gpu][capture][errors]") {
  no_persistent_memory none;
  stream_guard s;
  GRAPHPOOL_CUDA_TRY(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal), "begin");
  CHECK_THROWS_WITH(capture_session(s.stream, none, "attn", "cp2"),
                    contains_text("capture of slot 'attn' branch 'cp2': the stream is already capturing; end that "
                                  "capture first"));
  cudaGraph_t graph = nullptr;
  GRAPHPOOL_CUDA_TRY(cudaStreamEndCapture(s.stream, &graph), "end");
  if (graph != nullptr) GRAPHPOOL_CUDA_TRY(cudaGraphDestroy(graph), "destroy");
  CHECK_FALSE(stream_is_capturing(s.stream));
}

TEST_CASE("free_transient of a pointer the session did not hand out, and calls after the end, are errors",
          "[gpu][capture][errors]") {
  no_persistent_memory none;
  stream_guard s;
  int foreign = 0;
  {
    capture_session session(s.stream, none, "attn", "cp4");
    void* workspace = session.allocate_transient(1 * MiB);
    session.free_transient(workspace);
    CHECK_THROWS_WITH(session.free_transient(workspace),
                      contains_text("capture of slot 'attn' branch 'cp4': free_transient of 0x"));
    CHECK_THROWS_WITH(session.free_transient(&foreign), contains_text(", which is not a live transient of this capture"));
    session.abort();
    CHECK_THROWS_WITH(session.allocate_transient(64),
                      contains_text("capture of slot 'attn' branch 'cp4': allocate_transient after the capture was aborted"));
  }
  CHECK_FALSE(stream_is_capturing(s.stream));
  capture_session session(s.stream, none, "attn", "cp4");
  graph_executable done = session.finish();
  CHECK(static_cast<bool>(done));
  CHECK_THROWS_WITH(session.free_transient(nullptr),
                    contains_text("capture of slot 'attn' branch 'cp4': free_transient after the capture finished"));
}

// Tagged: compute-sanitizer reports the planted cudaMalloc failure as an API error.
TEST_CASE("an invalidated capture says so: at the next memory node, and at finish()",
          "[gpu][capture][errors][planted-cuda-error]") {
  no_persistent_memory none;
  stream_guard s;
  {
    capture_session session(s.stream, none, "mlp", "cp1");
    void* illegal = nullptr;
    static_cast<void>(cudaMalloc(&illegal, 1024));  // not permitted while this thread captures: invalidates it
    CHECK_THROWS_WITH(session.allocate_transient(1 * MiB),
                      contains_text("capture of slot 'mlp' branch 'cp1': transient allocation of 1048576 bytes: the "
                                    "capture is no longer active (status "));
    CHECK_THROWS_WITH(session.allocate_transient(1 * MiB),
                      contains_text("); an earlier call inside the capture invalidated it"));
    CHECK_THROWS_WITH(session.finish(),
                      contains_text("capture of slot 'mlp' branch 'cp1': the capture was invalidated ("));
  }
  static_cast<void>(cudaGetLastError());
  CHECK_FALSE(stream_is_capturing(s.stream));
  capture_session session(s.stream, none, "mlp", "cp1");
  void* illegal = nullptr;
  static_cast<void>(cudaMalloc(&illegal, 1024));
  CHECK_THROWS_WITH(session.finish(), contains_text("), most likely by a call not permitted while capturing"));
  static_cast<void>(cudaGetLastError());
  CHECK_FALSE(stream_is_capturing(s.stream));
}

TEST_CASE("the graph bank refuses an empty executable, a second one for a key, and a launch of a missing key",
          "[gpu][bank][errors]") {
  no_persistent_memory none;
  stream_guard s;
  graph_bank bank;
  CHECK_THROWS_WITH(bank.add({slot_id{0}, branch_id{1}, graph_phase::forward}, graph_executable{}),
                    contains_text("graph_bank::add: the executable for slot 0 branch 1 forward is empty"));
  bank.add({slot_id{0}, branch_id{1}, graph_phase::forward},
           capture_session::capture(s.stream, none, "layer0", "cp2", [](capture_session&) {}));
  CHECK_THROWS_WITH(bank.add({slot_id{0}, branch_id{1}, graph_phase::forward},
                             capture_session::capture(s.stream, none, "layer0", "cp2", [](capture_session&) {})),
                    contains_text("graph_bank::add: slot 0 branch 1 forward already has an executable"));
  CHECK_THROWS_WITH(bank.launch({slot_id{0}, branch_id{1}, graph_phase::backward}, s.stream),
                    contains_text("graph_bank::launch: no executable for slot 0 branch 1 backward"));
  bank.launch({slot_id{0}, branch_id{1}, graph_phase::forward}, s.stream);
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
}

TEST_CASE("a window branch names a window the arena does not have", "[gpu][capture][errors][vmm]") {
  shared_physical_resource vmm;
  auto arena = vmm.make_arena(2, 4 * MiB);
  CHECK_THROWS_WITH(window_branch(*arena, 2), contains_text("window_branch: window 2 of an arena with 2 window(s); windows are numbered from 0"));
  CHECK_NOTHROW(window_branch(*arena, 1));
  // A request beyond the arena's capacity: the arena's message, named by the capture.
  window_branch branch(*arena, 1);
  stream_guard s;
  capture_session session(s.stream, branch, "attn", "cp2");
  CHECK_THROWS_WITH(session.allocate_persistent(8 * MiB, 256, persistent_kind::saved),
                    contains_text("capture of slot 'attn' branch 'cp2': shared_window_arena: 8.00 MiB asked of a "
                                  "window of 4.00 MiB"));
  session.abort();
}

TEST_CASE("a transient or window request whose size overflows when padded or placed is refused, naming it",
          "[gpu][capture][errors]") {
  no_persistent_memory none;
  stream_guard s;
  {
    capture_session session(s.stream, none, "attn", "cp2");
    // bytes + (4096 - 256) wraps past SIZE_MAX: once a node of a few KiB was added and handed out as the whole request.
    CHECK_THROWS_WITH(session.allocate_transient(SIZE_MAX - 1000, 4096),
                      contains_text("capture of slot 'attn' branch 'cp2': transient request of " +
                                    std::to_string(SIZE_MAX - 1000) + " bytes at alignment 4096 overflows"));
    CHECK(session.report().transient_allocations == 0);
    session.abort();
  }
  shared_physical_resource vmm;
  auto arena = vmm.make_arena(2, 4 * MiB);
  window_branch branch(*arena, 0);
  capture_session session(s.stream, branch, "attn", "cp4");
  CHECK(session.allocate_persistent(4096, 256, persistent_kind::saved) != nullptr);
  CHECK_THROWS_WITH(session.allocate_persistent(SIZE_MAX - 100, 256, persistent_kind::saved),
                    contains_text("capture of slot 'attn' branch 'cp4': persistent request of " +
                                  std::to_string(SIZE_MAX - 100) + " bytes after 4096 bytes of window 0 overflows"));
  session.abort();
  CHECK_FALSE(stream_is_capturing(s.stream));
}

TEST_CASE("a real capture making fewer persistent requests than its measurement is refused at finish(), naming "
          "the slot and branch",
          "[gpu][capture][errors][measure]") {
  cuda_pool_resource pool;
  arena_allocator<cuda_pool_resource> arenas(pool);
  const slot_id slot = arenas.declare_slot("layer0");
  stream_guard s;
  measuring_branch measured;
  graph_executable discarded = capture_session::capture(s.stream, measured, "layer0", "cp2", [](capture_session& c) {
    static_cast<void>(c.allocate_persistent(1 * MiB));
    static_cast<void>(c.allocate_persistent(2 * MiB));
  });
  const branch_id branch = arenas.declare_branch(slot, "cp2", measured.layout());
  arenas.reserve();
  replaying_branch<cuda_pool_resource> replay(arenas, slot, branch, measured);
  CHECK_THROWS_WITH(capture_session::capture(s.stream, replay, "layer0", "cp2",
                                             [](capture_session& c) { static_cast<void>(c.allocate_persistent(1 * MiB)); }),
                    contains_text("capture of slot 'layer0' branch 'cp2': the real capture made 1 persistent "
                                  "request(s), its measurement 2"));
  CHECK_FALSE(stream_is_capturing(s.stream));
  // The replay was rolled back: the same requests capture now.
  graph_executable real = capture_session::capture(s.stream, replay, "layer0", "cp2", [](capture_session& c) {
    static_cast<void>(c.allocate_persistent(1 * MiB));
    static_cast<void>(c.allocate_persistent(2 * MiB));
  });
  CHECK(static_cast<bool>(real));
}
