// Capture sessions, graph memory nodes, the graph bank, virtual-memory windows and error paths on a GPU.

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "graphpool/capture.hpp"
#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/memory/arena_allocator.hpp"
#include "graphpool/memory/cuda_pool_resource.hpp"
#include "graphpool/memory/shared_physical_resource.hpp"
#include "gpu_support.hpp"
#include "kernels.hpp"

using namespace graphpool;
using graphpool::testing::add_mismatches;
using graphpool::testing::contains_text;
using graphpool::testing::device_free_bytes;
using graphpool::testing::stream_guard;
using graphpool::testing::count_mismatches;
using graphpool::testing::device_counter;
using graphpool::testing::fill_pattern;
using graphpool::testing::graph_node_count;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

std::size_t graph_memory(cudaGraphMemAttributeType which) {
  int device = 0;
  GRAPHPOOL_CUDA_TRY(cudaGetDevice(&device), "device");
  std::uint64_t value = 0;
  GRAPHPOOL_CUDA_TRY(cudaDeviceGetGraphMemAttribute(device, which, &value), "graph memory");
  return static_cast<std::size_t>(value);
}

void reset_graph_memory() {
  int device = 0;
  GRAPHPOOL_CUDA_TRY(cudaGetDevice(&device), "device");
  GRAPHPOOL_CUDA_TRY(cudaDeviceSynchronize(), "sync");
  GRAPHPOOL_CUDA_TRY(cudaDeviceGraphMemTrim(device), "trim");
  std::uint64_t zero = 0;
  GRAPHPOOL_CUDA_TRY(cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrUsedMemHigh, &zero), "reset");
  GRAPHPOOL_CUDA_TRY(cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrReservedMemHigh, &zero), "reset");
}

cudaStreamCaptureMode thread_capture_mode() {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  GRAPHPOOL_CUDA_TRY(cudaThreadExchangeStreamCaptureMode(&mode), "mode");  // mode := the thread's
  cudaStreamCaptureMode restore = mode;
  GRAPHPOOL_CUDA_TRY(cudaThreadExchangeStreamCaptureMode(&restore), "mode");  // the thread's := mode
  return mode;
}

}  // namespace

TEST_CASE("windows over shared pages: written through one branch, read through another", "[gpu][vmm]") {
  GRAPHPOOL_CUDA_TRY(cudaFree(nullptr), "context");
  GRAPHPOOL_CUDA_TRY(cudaDeviceSynchronize(), "sync");
  const std::size_t before = device_free_bytes();
  {
    shared_physical_resource vmm;
    arena_allocator<shared_physical_resource> arenas(vmm);
    const slot_id slot = arenas.declare_slot("layer0");
    const std::vector<std::size_t> sizes{37 * MiB, 100 * MiB + 4096, 8 * MiB, 64 * MiB};
    std::vector<branch_id> branches;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      branches.push_back(arenas.declare_branch(slot, "cp" + std::to_string(1 << i), {{part(2 * MiB)}, {part(sizes[i])}}));
    }
    arenas.reserve();
    const std::size_t largest = 2 * MiB + 100 * MiB + 4096;
    INFO("physical " << vmm.physical_bytes());
    CHECK(vmm.physical_bytes() == align_up(largest, 2 * MiB));  // the max, not the sum, whatever the windows
    const auto a = arenas.view(slot, branches[1]);
    const auto b = arenas.view(slot, branches[3]);
    CHECK(a.output(0) != b.output(0));  // distinct virtual addresses ...
    stream_guard s;
    fill_pattern(a.saved(0), 100 * MiB, 3, s.stream);
    CHECK(count_mismatches(b.saved(0), 64 * MiB, 3, s.stream) == 0);  // ... over the same physical pages
    CHECK(count_mismatches(b.saved(0), 64 * MiB, 4, s.stream) == 64 * MiB / 4);
    CHECK(device_free_bytes() + align_up(largest, 2 * MiB) <= before + 2 * MiB);
  }
  GRAPHPOOL_CUDA_TRY(cudaDeviceSynchronize(), "sync");
  INFO("free before " << before << ", after " << device_free_bytes());
  CHECK(device_free_bytes() + 2 * MiB >= before);  // release returned everything
}

TEST_CASE("a growing window arena: one capture per branch, physical memory the largest branch", "[gpu][vmm][capture]") {
  shared_physical_resource vmm;
  const std::vector<std::size_t> sizes{24 * MiB, 90 * MiB, 6 * MiB, 50 * MiB};
  auto arena = vmm.make_arena(sizes.size(), 1024 * MiB);
  stream_guard s;
  std::vector<graph_executable> forward;
  std::vector<void*> outputs;
  for (std::size_t b = 0; b < sizes.size(); ++b) {
    window_branch branch(*arena, b);
    forward.push_back(capture_session::capture(s.stream, branch, "layer0", "cp" + std::to_string(b), [&](capture_session& c) {
      void* out = c.allocate_persistent(4 * MiB, 256, persistent_kind::output);
      void* saved = c.allocate_persistent(sizes[b]);  // grows the arena during the capture
      fill_pattern(saved, sizes[b], static_cast<std::uint32_t>(b), c.stream());
      fill_pattern(out, 4 * MiB, 100 + static_cast<std::uint32_t>(b), c.stream());
      outputs.push_back(out);
    }));
    CHECK(branch.high_water() == 4 * MiB + sizes[b]);
  }
  CHECK(arena->physical_bytes() == 94 * MiB);  // the largest branch (4 + 90 MiB), not the 186 MiB sum
  CHECK(outputs[0] != outputs[1]);
  for (std::size_t b = 0; b < sizes.size(); ++b) {
    forward[b].launch(s.stream);
    // Branch b's output is seen through every other branch's window at the same offset.
    for (std::size_t other = 0; other < sizes.size(); ++other) {
      CHECK(count_mismatches(outputs[other], 4 * MiB, 100 + static_cast<std::uint32_t>(b), s.stream) == 0);
    }
  }
}

TEST_CASE("transients of four branches launched on one stream use the largest, not the sum", "[gpu][capture][bank]") {
  reset_graph_memory();
  const std::vector<std::size_t> workspaces{512 * MiB, 256 * MiB, 128 * MiB, 64 * MiB};
  stream_guard first;
  stream_guard second;
  graph_bank bank;
  no_persistent_memory none;
  device_counter mismatches;
  for (std::uint32_t b = 0; b < workspaces.size(); ++b) {
    bank.add({0, b, graph_phase::other},
             capture_session::capture(first.stream, none, "layer0", "b" + std::to_string(b), [&](capture_session& c) {
               void* workspace = c.allocate_transient(workspaces[b]);
               fill_pattern(workspace, workspaces[b], b, c.stream());
               add_mismatches(workspace, workspaces[b], b, mismatches.value, c.stream());
               c.free_transient(workspace);
               CHECK(c.report().transient_allocations == 1);
             }));
  }
  mismatches.reset();
  for (int round = 0; round < 3; ++round) {
    for (std::uint32_t b = 0; b < workspaces.size(); ++b) bank.launch({0, b, graph_phase::other}, first.stream);
  }
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(first.stream), "sync");
  CHECK(mismatches.read() == 0);
  const graph_memory_report one_stream = bank.report();
  INFO(one_stream.summary());
  CHECK(one_stream.graph_used_high_bytes <= 512 * MiB + 2 * MiB);
  CHECK(one_stream.graph_used_high_bytes >= 512 * MiB);
  CHECK(one_stream.streams_used == 1);
  CHECK(one_stream.warning.empty());

  // Alternating streams: the report says so.
  for (std::uint32_t b = 0; b < workspaces.size(); ++b) {
    bank.launch({0, b, graph_phase::other}, b % 2 == 0 ? first.stream : second.stream);
    GRAPHPOOL_CUDA_TRY(cudaDeviceSynchronize(), "sync");
  }
  const graph_memory_report two_streams = bank.report();
  CHECK(two_streams.streams_used == 2);
  CHECK_THAT(two_streams.warning, contains_text("launches used 2 streams"));
  CHECK_THAT(two_streams.summary(), contains_text("warning:"));
  bank.trim();
}

TEST_CASE("persistent outputs share one address; a branch's backward reads what its forward saved", "[gpu][capture]") {
  cuda_pool_resource pool;
  arena_allocator<cuda_pool_resource> arenas(pool);
  const slot_id slot = arenas.declare_slot("layer0");
  const std::vector<std::size_t> saved_sizes{48 * MiB, 16 * MiB, 32 * MiB};
  std::vector<branch_id> branches;
  for (std::size_t b = 0; b < saved_sizes.size(); ++b) {
    branches.push_back(arenas.declare_branch(slot, "cp" + std::to_string(1 << b), {{part(8 * MiB)}, {part(saved_sizes[b])}}));
  }
  arenas.reserve();
  stream_guard s;
  device_counter mismatches;
  graph_bank bank;
  std::vector<void*> outputs;
  for (std::uint32_t b = 0; b < saved_sizes.size(); ++b) {
    declared_branch<cuda_pool_resource> memory(arenas, slot, branches[b]);
    void* saved = nullptr;
    bank.add({0, b, graph_phase::forward},
             capture_session::capture(s.stream, memory, "layer0", "cp" + std::to_string(1 << b), [&](capture_session& c) {
               outputs.push_back(c.allocate_persistent(8 * MiB, 256, persistent_kind::output));
               saved = c.allocate_persistent(saved_sizes[b]);
               fill_pattern(saved, saved_sizes[b], 1000 + b, c.stream());
               fill_pattern(outputs.back(), 8 * MiB, 2000 + b, c.stream());
             }));
    bank.add({0, b, graph_phase::backward},
             capture_session::capture(s.stream, memory, "layer0", "cp" + std::to_string(1 << b), [&](capture_session& c) {
               add_mismatches(saved, saved_sizes[b], 1000 + b, mismatches.value, c.stream());
             }));
  }
  CHECK(outputs[0] == outputs[1]);
  CHECK(outputs[1] == outputs[2]);
  mismatches.reset();
  for (std::uint32_t b = 0; b < saved_sizes.size(); ++b) {
    bank.launch({0, b, graph_phase::forward}, s.stream);
    bank.launch({0, b, graph_phase::backward}, s.stream);
  }
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
  CHECK(mismatches.read() == 0);
  // The check can fail: branch 0's forward then branch 1's forward overwrites what branch 0 saved.
  bank.launch({0, 0, graph_phase::forward}, s.stream);
  bank.launch({0, 1, graph_phase::forward}, s.stream);
  bank.launch({0, 0, graph_phase::backward}, s.stream);
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
  CHECK(mismatches.read() > 0);
}

TEST_CASE("a throw inside the capture leaves a clean stream and arena", "[gpu][capture][errors]") {
  cuda_pool_resource pool;
  arena_allocator<cuda_pool_resource> arenas(pool);
  const slot_id slot = arenas.declare_slot("mlp");
  const branch_id branch = arenas.declare_branch(slot, "cp1", {{}, {part(16 * MiB)}});
  arenas.reserve();
  declared_branch<cuda_pool_resource> memory(arenas, slot, branch);
  stream_guard s;
  const cudaStreamCaptureMode mode_before = thread_capture_mode();

  CHECK_THROWS_WITH(capture_session::capture(s.stream, memory, "mlp", "cp1", [&](capture_session& c) {
                      static_cast<void>(c.allocate_persistent(16 * MiB));
                      static_cast<void>(c.allocate_transient(4 * MiB));
                      cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
                      GRAPHPOOL_CUDA_TRY(cudaThreadExchangeStreamCaptureMode(&relaxed), "user code");
                      throw std::runtime_error("user code failed");
                    }),
                    contains_text("capture of slot 'mlp' branch 'cp1' failed: user code failed; the capture was rolled back"));
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  GRAPHPOOL_CUDA_TRY(cudaStreamIsCapturing(s.stream, &status), "status");
  CHECK(status == cudaStreamCaptureStatusNone);
  CHECK(thread_capture_mode() == mode_before);  // the thread's capture mode is restored

  // The same branch captures again and works; the rolled-back request did not consume the part.
  void* saved = nullptr;
  graph_executable again = capture_session::capture(s.stream, memory, "mlp", "cp1", [&](capture_session& c) {
    saved = c.allocate_persistent(16 * MiB);
    fill_pattern(saved, 16 * MiB, 77, c.stream());
  });
  CHECK(saved == arenas.view(slot, branch).saved(0));
  again.launch(s.stream);
  CHECK(count_mismatches(saved, 16 * MiB, 77, s.stream) == 0);
}

// Tagged: compute-sanitizer reports the planted cudaMalloc failure as an API error.
TEST_CASE("an illegal call inside the capture is reported, and the stream captures again",
          "[gpu][capture][errors][planted-cuda-error]") {
  no_persistent_memory none;
  stream_guard s;
  try {
    graph_executable broken = capture_session::capture(s.stream, none, "attn", "cp4", [&](capture_session& c) {
      void* workspace = c.allocate_transient(1 * MiB);
      void* illegal = nullptr;
      static_cast<void>(cudaMalloc(&illegal, 1024));  // not permitted while this thread captures
      fill_pattern(workspace, 1 * MiB, 1, c.stream());
    });
    FAIL("a capture with cudaMalloc inside succeeded");
  } catch (const error& e) {
    CHECK_THAT(std::string(e.what()), contains_text("capture of slot 'attn' branch 'cp4'"));
  }
  CHECK(cudaGetLastError() == cudaSuccess);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  GRAPHPOOL_CUDA_TRY(cudaStreamIsCapturing(s.stream, &status), "status");
  CHECK(status == cudaStreamCaptureStatusNone);
  device_counter mismatches;
  mismatches.reset();
  graph_executable good = capture_session::capture(s.stream, none, "attn", "cp4", [&](capture_session& c) {
    void* workspace = c.allocate_transient(1 * MiB);
    fill_pattern(workspace, 1 * MiB, 5, c.stream());
    add_mismatches(workspace, 1 * MiB, 5, mismatches.value, c.stream());
    // left held on purpose: freed at the graph's end
  });
  good.launch(s.stream);
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
  CHECK(mismatches.read() == 0);
}

TEST_CASE("two threads capture on two streams at once", "[gpu][capture][threads]") {
  cuda_pool_resource pool;
  arena_allocator<cuda_pool_resource> arenas(pool);
  std::vector<slot_id> slots{arenas.declare_slot("a"), arenas.declare_slot("b")};
  for (slot_id slot : slots) arenas.declare_branch(slot, "cp1", {{}, {part(8 * MiB)}});
  arenas.reserve();
  std::atomic<int> failures{0};
  std::vector<graph_executable> graphs(2);
  std::vector<void*> saved(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      try {
        stream_guard s;
        declared_branch<cuda_pool_resource> memory(arenas, slots[static_cast<std::size_t>(t)], branch_id{0});
        for (int round = 0; round < 20; ++round) {
          graphs[static_cast<std::size_t>(t)] = capture_session::capture(s.stream, memory, "slot", "cp1", [&](capture_session& c) {
            saved[static_cast<std::size_t>(t)] = c.allocate_persistent(8 * MiB);
            void* workspace = c.allocate_transient(2 * MiB);
            fill_pattern(workspace, 2 * MiB, 9, c.stream());
            fill_pattern(saved[static_cast<std::size_t>(t)], 8 * MiB, 40 + static_cast<std::uint32_t>(t), c.stream());
            c.free_transient(workspace);
          });
        }
        graphs[static_cast<std::size_t>(t)].launch(s.stream);
        GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
      } catch (...) {
        ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(failures == 0);
  stream_guard s;
  CHECK(count_mismatches(saved[0], 8 * MiB, 40, s.stream) == 0);
  CHECK(count_mismatches(saved[1], 8 * MiB, 41, s.stream) == 0);
}

TEST_CASE("graph_bank: launches of different keys from several threads at once all run", "[gpu][bank][threads]") {
  stream_guard first;
  no_persistent_memory none;
  device_counter mismatches;
  void* buffer = nullptr;
  GRAPHPOOL_CUDA_TRY(cudaMalloc(&buffer, 64 * 1024), "buffer");
  fill_pattern(buffer, 64 * 1024, 1, first.stream);
  graph_bank bank;
  constexpr int threads = 4;
  constexpr int launches = 50;
  // One key per thread: launches of one key must not overlap (a CUDA graph executable is not thread-safe).
  auto key_of = [](int t) { return graph_key{slot_id{static_cast<std::uint32_t>(t)}, branch_id{0}, graph_phase::other}; };
  for (int t = 0; t < threads; ++t) {
    bank.add(key_of(t), capture_session::capture(first.stream, none, "shared", "b0", [&](capture_session& c) {
      add_mismatches(buffer, 64 * 1024, 2, mismatches.value, c.stream());  // pattern 1 read as 2: every launch counts
    }));
  }
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(first.stream), "sync");
  mismatches.reset();
  bank.launch(key_of(0), first.stream);
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(first.stream), "sync");
  const unsigned long long per_launch = mismatches.read();
  REQUIRE(per_launch > 0);
  mismatches.reset();
  std::atomic<int> ready{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> launchers;
  for (int t = 0; t < threads; ++t) {
    launchers.emplace_back([&, t] {
      try {
        stream_guard s;
        ++ready;
        while (ready.load() < threads) {
        }
        for (int i = 0; i < launches; ++i) bank.launch(key_of(t), s.stream);
        GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
      } catch (...) {
        ++failures;
      }
    });
  }
  for (auto& thread : launchers) thread.join();
  CHECK(failures == 0);
  CHECK(mismatches.read() == per_launch * threads * launches);
  const graph_memory_report report = bank.report();
  CHECK(report.launches == 1 + threads * launches);
  CHECK(report.streams_used == 1 + threads);
  GRAPHPOOL_CUDA_TRY(cudaFree(buffer), "free");
}

TEST_CASE("measure then capture: identical addresses, and a diverging request is reported", "[gpu][capture][measure]") {
  cuda_pool_resource pool;
  arena_allocator<cuda_pool_resource> arenas(pool);
  const slot_id slot = arenas.declare_slot("layer0");
  const std::vector<std::size_t> saved_sizes{20 * MiB, 60 * MiB, 12 * MiB};
  stream_guard s;
  auto body = [&](std::size_t b, std::size_t saved_bytes, std::vector<void*>* seen) {
    return [&, b, saved_bytes, seen](capture_session& c) {
      void* out = c.allocate_persistent(4 * MiB, 256, persistent_kind::output);
      void* saved = c.allocate_persistent(saved_bytes);
      fill_pattern(saved, saved_bytes, static_cast<std::uint32_t>(b), c.stream());
      fill_pattern(out, 4 * MiB, 7, c.stream());
      if (seen != nullptr) *seen = {out, saved};
    };
  };
  std::vector<measuring_branch> measurements(saved_sizes.size());
  for (std::size_t b = 0; b < saved_sizes.size(); ++b) {
    graph_executable discarded =
        capture_session::capture(s.stream, measurements[b], "layer0", "b" + std::to_string(b), body(b, saved_sizes[b], nullptr));
    CHECK(measurements[b].requests().size() == 2);
  }
  CHECK(pool.used_bytes() == 0);  // measuring took nothing from the arena's pool
  for (std::size_t b = 0; b < saved_sizes.size(); ++b) {
    arenas.declare_branch(slot, "b" + std::to_string(b), measurements[b].layout());
  }
  arenas.reserve();
  CHECK(pool.used_bytes() == 4 * MiB + 60 * MiB);  // the max over branches
  std::vector<std::vector<void*>> seen(saved_sizes.size());
  for (std::size_t b = 0; b < saved_sizes.size(); ++b) {
    replaying_branch<cuda_pool_resource> replay(arenas, slot, branch_id{static_cast<std::uint32_t>(b)}, measurements[b]);
    graph_executable real =
        capture_session::capture(s.stream, replay, "layer0", "b" + std::to_string(b), body(b, saved_sizes[b], &seen[b]));
    real.launch(s.stream);
    CHECK(count_mismatches(seen[b][1], saved_sizes[b], static_cast<std::uint32_t>(b), s.stream) == 0);
  }
  CHECK(seen[0][0] == seen[1][0]);
  CHECK(seen[1][0] == seen[2][0]);
  CHECK(seen[0][1] == seen[2][1]);

  replaying_branch<cuda_pool_resource> diverging(arenas, slot, branch_id{1}, measurements[1]);
  CHECK_THROWS_WITH(capture_session::capture(s.stream, diverging, "layer0", "b1", body(1, 61 * MiB, nullptr)),
                    contains_text("persistent request 1 (saved 63963136 B @256) differs from the measurement (saved "
                                  "62914560 B @256)"));
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  GRAPHPOOL_CUDA_TRY(cudaStreamIsCapturing(s.stream, &status), "status");
  CHECK(status == cudaStreamCaptureStatusNone);
}

namespace {

// Captures a graph with a 64 MiB transient under `options` (an upload on finish), waits for the stream
// the upload goes to alone (upload_stream when set, else the capture stream), checks the graph's memory
// is mapped before its first launch, then launches it.
void check_upload_on_finish(const capture_options& options) {
  reset_graph_memory();
  REQUIRE(graph_memory(cudaGraphMemAttrReservedMemCurrent) < 64 * MiB);
  no_persistent_memory none;
  stream_guard s;
  graph_executable graph = capture_session::capture(
      s.stream, none, "s", "b",
      [&](capture_session& c) {
        void* workspace = c.allocate_transient(64 * MiB);
        fill_pattern(workspace, 64 * MiB, 1, c.stream());
        c.free_transient(workspace);
      },
      options);
  const cudaStream_t upload_stream = options.upload_stream != nullptr ? options.upload_stream : s.stream;
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(upload_stream), "sync");
  CHECK(graph_memory(cudaGraphMemAttrReservedMemCurrent) >= 64 * MiB);  // mapped by the upload
  graph.launch(s.stream);
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
}

}  // namespace

TEST_CASE("upload on finish: the executable is ready before its first launch", "[gpu][capture]") {
  capture_options options;
  options.upload = true;
  check_upload_on_finish(options);
}

TEST_CASE("upload on finish to an upload_stream alone (upload left false), as capture_options documents",
          "[gpu][capture]") {
  stream_guard uploads;
  capture_options options;
  options.upload_stream = uploads.stream;
  check_upload_on_finish(options);
}

TEST_CASE("capturing into a graph the caller hands in", "[gpu][capture]") {
  cudaGraph_t graph = nullptr;
  GRAPHPOOL_CUDA_TRY(cudaGraphCreate(&graph, 0), "graph");
  no_persistent_memory none;
  stream_guard s;
  device_counter mismatches;
  mismatches.reset();
  capture_options options;
  options.into = graph;
  {
    graph_executable exec = capture_session::capture(
        s.stream, none, "s", "b",
        [&](capture_session& c) {
          void* workspace = c.allocate_transient(3 * MiB);
          fill_pattern(workspace, 3 * MiB, 8, c.stream());
          add_mismatches(workspace, 3 * MiB, 8, mismatches.value, c.stream());
          c.free_transient(workspace);
        },
        options);
    CHECK(exec.graph() == graph);
    std::size_t nodes = 0;
    GRAPHPOOL_CUDA_TRY(cudaGraphGetNodes(graph, nullptr, &nodes), "nodes");
    CHECK(nodes == 4);  // alloc, two kernels, free
    exec.launch(s.stream);
    GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
    CHECK(mismatches.read() == 0);
  }
  GRAPHPOOL_CUDA_TRY(cudaGraphDestroy(graph), "the graph stays the caller's");
}

// Tagged: compute-sanitizer reports the planted cuMemCreate failure as an API error.
TEST_CASE("growing past the device's memory says how much was asked and how much the device had",
          "[gpu][vmm][errors][planted-cuda-error]") {
  shared_physical_resource vmm;
  auto arena = vmm.make_arena(2, std::size_t{1} << 40);  // 1 TiB of address space per window
  arena->ensure(4 * MiB);
  try {
    arena->ensure(std::size_t{600} << 30);  // 600 GiB: more than an H200 has
    FAIL("mapping 600 GiB succeeded");
  } catch (const error& e) {
    CHECK_THAT(std::string(e.what()), contains_text("of physical memory to grow the arena from 4.00 MiB to 600.00 GiB"));
    CHECK_THAT(std::string(e.what()), contains_text("the device has"));
    CHECK(e.cuda_code() != 0);
  }
  CHECK(arena->physical_bytes() == 4 * MiB);  // nothing half-mapped; the arena still works
  stream_guard s;
  fill_pattern(arena->window(1), 4 * MiB, 6, s.stream);
  CHECK(count_mismatches(arena->window(0), 4 * MiB, 6, s.stream) == 0);
}

TEST_CASE("global and relaxed capture modes capture too", "[gpu][capture]") {
  no_persistent_memory none;
  stream_guard s;
  for (cudaStreamCaptureMode mode : {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeRelaxed}) {
    capture_options options;
    options.mode = mode;
    device_counter mismatches;
    mismatches.reset();
    graph_executable graph = capture_session::capture(
        s.stream, none, "s", "b",
        [&](capture_session& c) {
          void* workspace = c.allocate_transient(1 * MiB);
          fill_pattern(workspace, 1 * MiB, 2, c.stream());
          add_mismatches(workspace, 1 * MiB, 2, mismatches.value, c.stream());
          c.free_transient(workspace);
        },
        options);
    graph.launch(s.stream);
    GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
    CHECK(mismatches.read() == 0);
  }
}

TEST_CASE("a transient-only capture refuses persistent requests, naming the slot and branch", "[gpu][capture][errors]") {
  no_persistent_memory none;
  stream_guard s;
  CHECK_THROWS_WITH(capture_session::capture(s.stream, none, "s", "b",
                                             [&](capture_session& c) { static_cast<void>(c.allocate_persistent(4096)); }),
                    contains_text("capture of slot 's' branch 'b': persistent request of 4096 bytes, but this capture "
                                  "has no persistent memory"));
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  GRAPHPOOL_CUDA_TRY(cudaStreamIsCapturing(s.stream, &status), "status");
  CHECK(status == cudaStreamCaptureStatusNone);
}

TEST_CASE("zero-byte requests are nullptr on every capture path, and add no node; foreign frees are errors",
          "[gpu][capture][zero]") {
  stream_guard s;
  graphpool::no_persistent_memory none;
  // A capture session: transient and persistent zero-byte requests, and freeing nullptr.
  const graph_executable empty = capture_session::capture(s.stream, none, "zero", "b", [&](capture_session& c) {
    fill_pattern(c.allocate_transient(4096), 4096, 1, c.stream());  // one alloc node, a kernel, a free at the end
  });
  const graph_executable zero = capture_session::capture(s.stream, none, "zero", "b", [&](capture_session& c) {
    CHECK(c.allocate_transient(0) == nullptr);
    CHECK(c.allocate_persistent(0) == nullptr);  // no_persistent_memory would refuse any real request
    c.free_transient(nullptr);
    fill_pattern(c.allocate_transient(4096), 4096, 1, c.stream());
  });
  CHECK(graph_node_count(zero.graph()) == graph_node_count(empty.graph()));
  // The plug-in: nullptr for zero bytes, an error for a pointer it never handed out (the C ABI over it:
  // c_api_gpu_test.cpp).
  int foreign = 0;
  const graph_executable plugged = capture_session::capture(s.stream, none, "zero", "plug", [&](capture_session& c) {
    capture_resource plug(c);
    CHECK(plug.allocate(c.stream(), 0) == nullptr);
    plug.deallocate(c.stream(), nullptr, 0);
    CHECK_THROWS_WITH(plug.deallocate(c.stream(), &foreign, 4),
                      contains_text("which is neither a live transient nor persistent memory of this capture"));
    void* work = plug.allocate(c.stream(), 4096);
    fill_pattern(work, 4096, 1, c.stream());
    plug.deallocate(c.stream(), work, 4096);
    CHECK_THROWS_WITH(plug.deallocate(c.stream(), work, 4096), contains_text("a double free"));
  });
  plugged.launch(s.stream);
  zero.launch(s.stream);
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
  // A window branch over shared pages.
  shared_physical_resource pages;
  auto arena = pages.make_arena(2, 64 * MiB);
  window_branch window(*arena, 1);
  const graph_executable windowed = capture_session::capture(s.stream, window, "zero", "window", [&](capture_session& c) {
    CHECK(c.allocate_persistent(0) == nullptr);
    fill_pattern(c.allocate_persistent(4096), 4096, 2, c.stream());
  });
  CHECK(window.high_water() == 4096);
  windowed.launch(s.stream);
  GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(s.stream), "sync");
}
