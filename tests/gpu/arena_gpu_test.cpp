// Arenas on a real cudaMemPool_t: real addresses, real pool counters, real device memory.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "catch.hpp"
#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/memory/arena_allocator.hpp"
#include "graphpool/memory/cuda_pool_resource.hpp"
#include "graphpool/memory/shared_physical_resource.hpp"
#include "gpu_support.hpp"
#include "kernels.hpp"

using graphpool::arena_allocator;
using graphpool::branch_id;
using graphpool::branch_layout;
using graphpool::cuda_pool_resource;
using graphpool::part;
using graphpool::shared_physical_resource;
using graphpool::slot_id;
using graphpool::testing::contains_text;
using graphpool::testing::device_bytes_taken_by;
using graphpool::testing::device_free_bytes;
using graphpool::testing::stream_guard;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t granularity = 2 * MiB;  // device allocation granularity
// A pool grows by whole chunks: for allocations this large the H200 (driver 580) was measured to
// reserve multiples of 32 MiB (100 MiB -> 128 MiB, 528 MiB -> 544 MiB).
constexpr std::size_t pool_chunk = 32 * MiB;

}  // namespace

TEST_CASE("four branches of different sizes reserve the max from the pool, not the sum", "[gpu][arena]") {
  cuda_pool_resource pool;
  REQUIRE(pool.owns_pool());
  arena_allocator<cuda_pool_resource> arenas(pool);
  const slot_id slot = arenas.declare_slot("layer0");
  const std::vector<std::size_t> saved{40 * MiB, 96 * MiB, 8 * MiB + 4096, 64 * MiB};
  const part output(4 * MiB);
  std::vector<branch_id> branches;
  std::size_t largest = 0;
  std::size_t sum = 0;
  for (std::size_t i = 0; i < saved.size(); ++i) {
    branches.push_back(arenas.declare_branch(slot, "cp" + std::to_string(1 << i), branch_layout{{output}, {part(saved[i])}}));
    largest = std::max(largest, 4 * MiB + saved[i]);
    sum += 4 * MiB + saved[i];
  }
  CHECK(pool.reserved_bytes() == 0);
  const std::size_t taken = device_bytes_taken_by([&] { arenas.reserve(); });

  INFO("pool reserved " << pool.reserved_bytes() << " bytes, device memory taken " << taken << ", largest branch "
                        << largest << ", sum " << sum);
  CHECK(pool.used_bytes() == largest);
  CHECK(pool.reserved_bytes() >= largest);
  CHECK(pool.reserved_bytes() <= graphpool::align_up(largest, pool_chunk));
  CHECK(pool.reserved_bytes() < largest + (sum - largest) / 2);  // nowhere near the sum
  // Measured on the device, bounded from both sides: the largest branch, at most rounded to the pool's steps.
  CHECK(taken + granularity >= largest);
  CHECK(taken <= graphpool::align_up(largest, pool_chunk) + granularity);
  CHECK(arenas.statistics().reserved_bytes == largest);
  CHECK(arenas.statistics().per_branch_pool_bytes == sum);
}

TEST_CASE("bytes a kernel writes through one branch are read through another", "[gpu][arena]") {
  cuda_pool_resource pool;
  arena_allocator<cuda_pool_resource> arenas(pool);
  const slot_id slot = arenas.declare_slot("attn");
  const branch_id cp1 = arenas.declare_branch(slot, "cp1", branch_layout{{part(2 * MiB)}, {part(48 * MiB)}});
  const branch_id cp8 = arenas.declare_branch(slot, "cp8", branch_layout{{part(2 * MiB)}, {part(6 * MiB)}});
  arenas.reserve();
  stream_guard writer;
  stream_guard reader;

  const auto a = arenas.view(slot, cp1);
  const auto b = arenas.view(slot, cp8);
  REQUIRE(a.output(0) == b.output(0));
  REQUIRE(a.saved(0) == b.saved(0));

  graphpool::testing::fill_pattern(a.output(0), 2 * MiB, 11, writer.stream);
  graphpool::testing::fill_pattern(a.saved(0), 48 * MiB, 12, writer.stream);
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(writer.stream), "writer");
  CHECK(graphpool::testing::count_mismatches(b.output(0), 2 * MiB, 11, reader.stream) == 0);
  CHECK(graphpool::testing::count_mismatches(b.saved(0), 6 * MiB, 12, reader.stream) == 0);
  // The check can fail: a different seed finds every word different.
  CHECK(graphpool::testing::count_mismatches(b.saved(0), 6 * MiB, 13, reader.stream) == 6 * MiB / 4);

  // Branch cp8 now writes; cp1 reads the shared prefix it sees.
  graphpool::testing::fill_pattern(b.saved(0), 6 * MiB, 21, writer.stream);
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(writer.stream), "writer");
  CHECK(graphpool::testing::count_mismatches(a.saved(0), 6 * MiB, 21, reader.stream) == 0);
}

TEST_CASE("the resource returns its memory to the device on destruction", "[gpu][resource]") {
  GRAPHPOOL_CUDA_TRY(cudaFree(nullptr), "context");  // the context's own memory is not ours to count
  const std::size_t before = device_free_bytes();
  {
    cuda_pool_resource pool;
    arena_allocator<cuda_pool_resource> arenas(pool);
    for (int s = 0; s < 3; ++s) {
      const slot_id slot = arenas.declare_slot("slot" + std::to_string(s));
      for (int b = 1; b <= 4; ++b) arenas.declare_branch(slot, "b" + std::to_string(b), branch_layout{{}, {part(b * 32 * MiB)}});
    }
    arenas.reserve();
    CHECK(pool.used_bytes() == 3 * 128 * MiB);
    CHECK(device_free_bytes() + 3 * 128 * MiB <= before + granularity);
    // ... and no more than three 128 MiB arenas, each rounded to the pool's 32 MiB steps.
    CHECK(before - device_free_bytes() <= 3 * graphpool::align_up(128 * MiB, pool_chunk) + granularity);
    CHECK(pool.reserved_bytes() <= 3 * graphpool::align_up(128 * MiB, pool_chunk));
    arenas.release();
    CHECK(pool.used_bytes() == 0);
    CHECK(pool.reserved_bytes() >= 3 * 128 * MiB);  // release threshold = max: the pool keeps it
  }
  GRAPHPOOL_CUDA_TRY(cudaDeviceSynchronize(), "sync");
  const std::size_t after = device_free_bytes();
  INFO("free before " << before << ", after " << after);
  CHECK(after + granularity >= before);
}

TEST_CASE("a wrapped pool is used, not owned, and survives the resource", "[gpu][resource]") {
  int device = 0;
  GRAPHPOOL_CUDA_TRY(cudaGetDevice(&device), "device");
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t raw = nullptr;
  GRAPHPOOL_CUDA_TRY(cudaMemPoolCreate(&raw, &props), "test pool");
  {
    cuda_pool_resource wrapped(raw, device);
    CHECK_FALSE(wrapped.owns_pool());
    CHECK(wrapped.pool() == raw);
    void* ptr = wrapped.allocate_sync(3 * MiB, 4096);
    CHECK(reinterpret_cast<std::uintptr_t>(ptr) % 4096 == 0);
    CHECK(wrapped.used_bytes() >= 3 * MiB);
    CHECK(wrapped.used_bytes() <= 3 * MiB + 4096);  // at most the padding that 4096-byte alignment needs
    wrapped.deallocate_sync(ptr, 3 * MiB, 4096);
    CHECK(wrapped.used_bytes() == 0);
  }
  std::uint64_t used = 1;
  GRAPHPOOL_CUDA_TRY(cudaMemPoolGetAttribute(raw, cudaMemPoolAttrUsedMemCurrent, &used), "pool still alive");
  CHECK(used == 0);
  GRAPHPOOL_CUDA_TRY(cudaMemPoolDestroy(raw), "test pool");
  CHECK_THROWS_WITH(cuda_pool_resource(nullptr, device), contains_text("the pool to wrap is null"));
}

TEST_CASE("stream-ordered allocate and deallocate honour large alignments", "[gpu][resource]") {
  cuda_pool_resource pool;
  stream_guard s;
  std::vector<void*> pointers;
  for (std::size_t alignment : {256, 512, 4096, 65536}) {
    void* ptr = pool.allocate(s.stream, 1 * MiB + 17, alignment);
    CHECK(reinterpret_cast<std::uintptr_t>(ptr) % alignment == 0);
    graphpool::testing::fill_pattern(ptr, 1 * MiB, 5, s.stream);
    CHECK(graphpool::testing::count_mismatches(ptr, 1 * MiB, 5, s.stream) == 0);
    pool.deallocate(s.stream, ptr, 1 * MiB + 17, alignment);
  }
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
  CHECK(pool.used_bytes() == 0);
}

TEST_CASE("windows over shared pages take the largest branch once, whatever the number of windows",
          "[gpu][arena][vmm]") {
  shared_physical_resource vmm;
  arena_allocator<shared_physical_resource> arenas(vmm);
  const slot_id slot = arenas.declare_slot("layer0");
  const std::vector<std::size_t> saved{96 * MiB + 4096, 40 * MiB, 8 * MiB, 64 * MiB};
  std::size_t largest = 0;
  for (std::size_t i = 0; i < saved.size(); ++i) {
    arenas.declare_branch(slot, "cp" + std::to_string(1 << i), branch_layout{{part(2 * MiB)}, {part(saved[i])}});
    largest = std::max(largest, 2 * MiB + saved[i]);
  }
  const std::size_t taken = device_bytes_taken_by([&] { arenas.reserve(); });
  INFO("device memory taken " << taken << ", library counter " << vmm.physical_bytes() << ", largest branch " << largest);
  const std::size_t rounded = graphpool::align_up(largest, granularity);  // VMM maps whole 2 MiB chunks
  CHECK(vmm.physical_bytes() == rounded);
  CHECK(taken + granularity >= largest);
  CHECK(taken <= rounded + granularity);  // four windows, one set of pages (the sum would be 4x)
  stream_guard s;
  graphpool::testing::fill_pattern(arenas.view(slot, branch_id{0}).base(), largest, 31, s.stream);
  CHECK(graphpool::testing::count_mismatches(arenas.view(slot, branch_id{3}).base(), 2 * MiB + saved[3], 31, s.stream) == 0);
}

// Tagged so that compute-sanitizer's run over the rest reports every CUDA API error: this one plants one.
TEST_CASE("an arena the device cannot hold fails cleanly, naming the arena and its size",
          "[gpu][errors][planted-cuda-error]") {
  cuda_pool_resource pool;
  arena_allocator<cuda_pool_resource> arenas(pool);
  const slot_id small = arenas.declare_slot("small");
  arenas.declare_branch(small, "b", branch_layout{{}, {part(16 * MiB)}});
  const slot_id huge = arenas.declare_slot("huge");
  arenas.declare_branch(huge, "b", branch_layout{{}, {part(std::size_t{1} << 50)}});  // 1 PiB
  try {
    arenas.reserve();
    FAIL("reserving 1 PiB succeeded");
  } catch (const graphpool::error& e) {
    CHECK_THAT(std::string(e.what()), contains_text("arena 'huge' of 1024.00 TiB"));
    CHECK(e.cuda_code() == static_cast<int>(cudaErrorMemoryAllocation));
  }
  CHECK_FALSE(arenas.reserved());
  CHECK(pool.used_bytes() == 0);  // the small arena taken first was returned
  CHECK(cudaGetLastError() == cudaSuccess);
}
