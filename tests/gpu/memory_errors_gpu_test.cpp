// The memory layer's error messages on a real device: what each failure says, the CUDA status it
// carries, and that nothing is left allocated or half-mapped after it.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "catch.hpp"
#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/memory/arena_allocator.hpp"
#include "graphpool/memory/cuda_pool_resource.hpp"
#include "graphpool/memory/shared_physical_resource.hpp"
#include "gpu_support.hpp"

using graphpool::arena_allocator;
using graphpool::branch_layout;
using graphpool::cuda_pool_resource;
using graphpool::part;
using graphpool::shared_physical_resource;
using graphpool::slot_id;
using graphpool::testing::contains_text;
using graphpool::testing::stream_guard;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

int this_device() {
  int device = 0;
  GRAPHPOOL_CUDA_TRY(cudaGetDevice(&device), "device");
  return device;
}

}  // namespace

TEST_CASE("the pool resource names the request, the device and the bad alignment", "[gpu][errors][resource]") {
  cuda_pool_resource pool;
  stream_guard s;
  const std::string device = std::to_string(this_device());
  CHECK_THROWS_WITH(pool.allocate(s.stream, 8, 3),
                    contains_text("cuda_pool_resource::allocate of 8 bytes on device " + device +
                                  ": alignment 3 is not a power of two"));
  CHECK_THROWS_WITH(pool.allocate_sync(64, 0), contains_text("allocate of 64 bytes on device " + device + ": alignment 0"));
  CHECK(pool.used_bytes() == 0);
}

TEST_CASE("a pool request whose alignment padding overflows is an error, not a small allocation",
          "[gpu][errors][resource]") {
  cuda_pool_resource pool;
  stream_guard s;
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  // Padding to 4096 adds 3840 bytes: without the check the size wraps to a few KiB and succeeds.
  CHECK_THROWS_WITH(pool.allocate(s.stream, max - 1000, 4096),
                    contains_text("cuda_pool_resource::allocate of " + std::to_string(max - 1000) +
                                  " bytes on device " + std::to_string(this_device()) + ": size overflows size_t"));
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
  CHECK(pool.used_bytes() == 0);
}

// Tagged: compute-sanitizer reports the planted allocation failure as an API error.
TEST_CASE("a pool request the device cannot hold carries cudaErrorMemoryAllocation and its size",
          "[gpu][errors][resource][planted-cuda-error]") {
  cuda_pool_resource pool;
  const std::size_t pebibyte = std::size_t{1} << 50;
  try {
    static_cast<void>(pool.allocate_sync(pebibyte, 256));
    FAIL("allocating 1 PiB succeeded");
  } catch (const graphpool::error& e) {
    CHECK(e.cuda_code() == static_cast<int>(cudaErrorMemoryAllocation));
    CHECK_THAT(std::string(e.what()), contains_text("cuda_pool_resource::allocate of " + std::to_string(pebibyte) +
                                                    " bytes on device " + std::to_string(this_device())));
    CHECK_THAT(std::string(e.what()), contains_text("failed with cudaErrorMemoryAllocation"));
  }
  CHECK(pool.used_bytes() == 0);
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("a window arena needs a window and grows only within its capacity", "[gpu][errors][vmm]") {
  shared_physical_resource vmm;
  CHECK_THROWS_WITH(vmm.make_arena(0, 4 * MiB), contains_text("shared_window_arena: at least one window is needed"));
  auto arena = vmm.make_arena(2, 4 * MiB);
  arena->ensure(2 * MiB);
  CHECK_THROWS_WITH(arena->ensure(8 * MiB), contains_text("shared_window_arena: 8.00 MiB asked of a window of 4.00 MiB; "
                                                          "create the arena with a larger capacity"));
  CHECK(arena->physical_bytes() == 2 * MiB);
  CHECK_THROWS_WITH(vmm.allocate_windows(64, 3, 2),
                    contains_text("shared_physical_resource::allocate_windows of 64 bytes: alignment 3 is not a power"));
  CHECK(vmm.physical_bytes() == 0);
}

TEST_CASE("a window capacity that overflows once rounded is an error, not a window of 0 bytes", "[gpu][errors][vmm]") {
  shared_physical_resource vmm;
  constexpr std::size_t most = std::numeric_limits<std::size_t>::max();
  CHECK_THROWS_WITH(vmm.make_arena(2, most), contains_text("shared_window_arena: 2 window(s) of " + std::to_string(most) +
                                                           " bytes of address space: size overflows size_t"));
  CHECK_THROWS_WITH(vmm.make_arena(3, most / 2), contains_text("overflows size_t; ask for a smaller capacity or fewer windows"));
  CHECK_THROWS_WITH(graphpool::shared_window_arena(this_device(), 1, 4 * MiB, 3 * MiB), contains_text("alignment 3145728 is not a power of two"));
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("remap names what is wrong with a run, and leaves the arena as it was", "[gpu][errors][vmm]") {
  shared_physical_resource vmm;
  auto arena = vmm.make_arena(1, 4 * MiB);
  arena->ensure(2 * MiB);
  const std::size_t page = arena->granularity();
  const auto block = std::make_shared<const graphpool::physical_block>(this_device(), 2 * page, page);
  using runs = std::vector<std::vector<graphpool::page_run>>;
  CHECK_THROWS_WITH(arena->remap(runs{{{0, block, 0, 0}}}), contains_text("window 0 run at 0 B of 0 B is empty; nothing"));
  CHECK_THROWS_WITH(arena->remap(runs{{{0, block, page, 2 * page}}}),
                    contains_text("runs past the block's " + graphpool::detail::format_bytes(2 * page)));
  CHECK_THROWS_WITH(arena->remap(runs{{{0, block, 1, page}}}), contains_text("is not in whole"));
  CHECK_THROWS_WITH(arena->remap(runs{{{arena->capacity(), block, 0, page}}}), contains_text("runs past the window's"));
  CHECK(arena->physical_bytes() == 2 * MiB);  // still its own chunk, still growable
  arena->ensure(4 * MiB);
  CHECK(arena->physical_bytes() == 4 * MiB);
  arena->remap(runs{{{0, block, 0, 2 * page}}});
  CHECK(arena->physical_bytes() == 0);
}

// Tagged: compute-sanitizer reports the planted cuMemAddressReserve failure as an API error.
TEST_CASE("address space the driver cannot reserve is reported with the driver's status",
          "[gpu][errors][vmm][planted-cuda-error]") {
  shared_physical_resource vmm;
  try {
    static_cast<void>(vmm.make_arena(1, std::size_t{1} << 62));  // 4 EiB of address space
    FAIL("reserving 4 EiB of address space succeeded");
  } catch (const graphpool::error& e) {
    CHECK_THAT(std::string(e.what()), contains_text("shared_window_arena on device " + std::to_string(this_device()) +
                                                    ": reserving "));
    CHECK_THAT(std::string(e.what()), contains_text("of address space (cuMemAddressReserve) failed with CUDA_ERROR_"));
    CHECK(e.cuda_code() != 0);
  }
  CHECK(cudaGetLastError() == cudaSuccess);
}

// Tagged: the arena of 1 PiB fails in the driver (address space or physical memory).
TEST_CASE("an arena of windows the device cannot hold fails cleanly, naming the arena", "[gpu][errors][vmm][planted-cuda-error]") {
  shared_physical_resource vmm;
  arena_allocator<shared_physical_resource> arenas(vmm);
  const slot_id small = arenas.declare_slot("small");
  arenas.declare_branch(small, "a", branch_layout{{}, {part(4 * MiB)}});
  arenas.declare_branch(small, "b", branch_layout{{}, {part(2 * MiB)}});
  const slot_id huge = arenas.declare_slot("huge");
  arenas.declare_branch(huge, "a", branch_layout{{}, {part(std::size_t{1} << 50)}});
  arenas.declare_branch(huge, "b", branch_layout{{}, {part(MiB)}});
  try {
    arenas.reserve();
    FAIL("reserving 1 PiB of windows succeeded");
  } catch (const graphpool::error& e) {
    CHECK_THAT(std::string(e.what()), contains_text("reserve: 2 arena(s) of 1024.00 TiB ("));
    CHECK_THAT(std::string(e.what()), contains_text(" bytes, 2 window(s); the largest is arena 'huge' of 1024.00 TiB) "
                                                    "could not be taken from the upstream: shared_window_arena"));
    CHECK(e.cuda_code() != 0);
  }
  CHECK_FALSE(arenas.reserved());
  CHECK(vmm.physical_bytes() == 0);  // the small arena taken first was returned
  CHECK(cudaGetLastError() == cudaSuccess);
}
