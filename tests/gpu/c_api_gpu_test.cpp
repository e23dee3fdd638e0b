// The C ABI (graphpool/c_api.h) over a capture on a GPU: requests routed to transient and persistent
// memory, zero-byte requests and foreign frees. Built where the C ABI library is (GRAPHPOOL_BUILD_BINDINGS).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "catch.hpp"
#include "graphpool/c_api.h"
#include "graphpool/capture.hpp"
#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/memory/arena_allocator.hpp"
#include "graphpool/memory/cuda_pool_resource.hpp"
#include "gpu_support.hpp"
#include "kernels.hpp"

using namespace graphpool;
using graphpool::testing::contains_text;
using graphpool::testing::count_mismatches;
using graphpool::testing::fill_pattern;
using graphpool::testing::graph_node_count;
using graphpool::testing::stream_guard;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

}  // namespace

TEST_CASE("the C ABI routes transient and persistent requests", "[gpu][capture][c-api]") {
  cuda_pool_resource pool;
  arena_allocator<cuda_pool_resource> arenas(pool);
  const slot_id slot = arenas.declare_slot("s");
  const branch_id branch = arenas.declare_branch(slot, "b", {{part(1 * MiB)}, {}});
  arenas.reserve();
  declared_branch<cuda_pool_resource> memory(arenas, slot, branch);
  stream_guard s;
  void* persistent = nullptr;
  graph_executable graph = capture_session::capture(s.stream, memory, "s", "b", [&](capture_session& c) {
    capture_resource plug(c);
    auto* handle = reinterpret_cast<graphpool_capture_resource*>(&plug);
    void* workspace = nullptr;
    REQUIRE(graphpool_allocate(handle, c.stream(), 2 * MiB, 256, &workspace) == GRAPHPOOL_OK);
    REQUIRE(graphpool_push_persistent(handle, GRAPHPOOL_PERSISTENT_OUTPUT) == GRAPHPOOL_OK);
    REQUIRE(graphpool_allocate(handle, c.stream(), 1 * MiB, 256, &persistent) == GRAPHPOOL_OK);
    CHECK(graphpool_allocate(handle, c.stream(), 1 * MiB, 256, &workspace) == GRAPHPOOL_ERROR);  // one output declared
    CHECK_THAT(std::string(graphpool_last_error()), contains_text("output request 1 (1048576 B @256) is beyond"));
    REQUIRE(graphpool_pop_persistent(handle) == GRAPHPOOL_OK);
    CHECK(graphpool_pop_persistent(handle) == GRAPHPOOL_ERROR);  // unbalanced: no scope is open
    CHECK_THAT(std::string(graphpool_last_error()),
               contains_text("capture of slot 's' branch 'b': graphpool_pop_persistent with no persistent scope open"));
    CHECK_FALSE(plug.persistent());
    CHECK(graphpool_push_persistent(handle, static_cast<graphpool_persistent_kind>(7)) == GRAPHPOOL_ERROR);
    fill_pattern(persistent, 1 * MiB, 3, c.stream());
    REQUIRE(graphpool_deallocate(handle, c.stream(), workspace, 2 * MiB, 256) == GRAPHPOOL_OK);
    CHECK(std::string(graphpool_last_error()).empty());
  });
  CHECK(persistent == arenas.view(slot, branch).output(0));
  graph.launch(s.stream);
  CHECK(count_mismatches(persistent, 1 * MiB, 3, s.stream) == 0);
}

TEST_CASE("the C ABI: zero bytes are nullptr and add no node; a pointer it never handed out is an error",
          "[gpu][capture][c-api][zero]") {
  stream_guard s;
  graphpool::no_persistent_memory none;
  auto capture = [&](bool zero_requests) {
    return capture_session::capture(s.stream, none, "zero", "c-api", [&](capture_session& c) {
      capture_resource plug(c);
      auto* handle = reinterpret_cast<graphpool_capture_resource*>(&plug);
      if (zero_requests) {
        int foreign = 0;
        void* out = &foreign;
        CHECK(graphpool_allocate(handle, c.stream(), 0, 256, &out) == GRAPHPOOL_OK);
        CHECK(out == nullptr);
        CHECK(graphpool_deallocate(handle, c.stream(), nullptr, 0, 256) == GRAPHPOOL_OK);
        CHECK(graphpool_deallocate(handle, c.stream(), &foreign, 4, 256) == GRAPHPOOL_ERROR);
        CHECK_THAT(std::string(graphpool_last_error()),
                   contains_text("which is neither a live transient nor persistent memory of this capture"));
      }
      void* work = nullptr;
      REQUIRE(graphpool_allocate(handle, c.stream(), 4096, 256, &work) == GRAPHPOOL_OK);
      fill_pattern(work, 4096, 1, c.stream());
      REQUIRE(graphpool_deallocate(handle, c.stream(), work, 4096, 256) == GRAPHPOOL_OK);
    });
  };
  const graph_executable plain = capture(false);
  const graph_executable with_zero = capture(true);
  // The zero-byte requests and the refused free added nothing.
  CHECK(graph_node_count(with_zero.graph()) == graph_node_count(plain.graph()));
  with_zero.launch(s.stream);
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
}
