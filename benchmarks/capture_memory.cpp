// The capture layer on a GPU, side by side with what a user would do without graphpool:
//  1. capture + instantiate time per branch (graphpool session vs plain capture with cudaMallocAsync);
//  2. host cost per launch: cudaGraphLaunch, graph_bank, variant_graphs with the guard off and on;
//  3. device memory for N = 1, 2, 4, 8 branches of different sizes: (a) a cudaMemPool_t per branch,
//     (b) one shared pool in which every branch's persistent buffers stay alive at once (a shared pool
//     whose branches may all have a microbatch in flight; PyTorch's shared graph pool, replayed one
//     branch at a time, reuses a branch's freed blocks for the next capture and can do better), (c)
//     graphpool (an arena on a pool, and windows over shared pages); (a), (b) and graphpool's pool are
//     the pools' reserved bytes (cudaMemPoolAttrReservedMemCurrent);
//  4. the first launch of a graph with a 2 GiB memory node, with and without cudaGraphUpload. The pages
//     figure is measured on the device (cudaMemGetInfo before and after reserve()); the library's own
//     counter is written beside it.
//
// usage: graphpool_bench_capture_memory [--json PATH] [--launches N]   (needs a CUDA device; --help says more)

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "graphpool/graphpool.hpp"

namespace {

using graphpool::bench::median;

constexpr std::size_t MiB = std::size_t{1} << 20;

__attribute__((noinline)) void enqueue_memset(void* ptr, std::size_t bytes, cudaStream_t stream) {
  GRAPHPOOL_CUDA_TRY(cudaMemsetAsync(ptr, 1, bytes, stream), "memset");
}

// Device memory that `reserve` takes: free memory (cudaMemGetInfo) before minus after, each read once
// the device is idle, so the figure is the driver's, not graphpool's own count.
template <class Reserve>
std::size_t device_bytes_taken_by(Reserve&& reserve) {
  auto free_bytes = [] {
    GRAPHPOOL_CUDA_TRY(cudaDeviceSynchronize(), "synchronizing before reading free memory");
    std::size_t free = 0;
    std::size_t total = 0;
    GRAPHPOOL_CUDA_TRY(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return free;
  };
  const std::size_t before = free_bytes();
  reserve();
  const std::size_t after = free_bytes();
  return before > after ? before - after : 0;
}

double microseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

// The median of the runs' differences `a[r] - b[r]`: a cost above another timed in the same run, so that
// drift from run to run (clocks, the other processes) cancels instead of adding to the difference.
double median_difference(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> differences;
  for (std::size_t r = 0; r < a.size() && r < b.size(); ++r) differences.push_back(a[r] - b[r]);
  return median(differences);
}

constexpr const char* help = R"(usage: graphpool_bench_capture_memory [--json PATH] [--launches N]
The capture layer on a GPU, side by side with what a user would do without graphpool: capture +
instantiate per branch, host cost per graph launch (cudaGraphLaunch, graph_bank, variant_graphs with the
guard off and on), device memory for 1, 2, 4 and 8 branches, and the first launch of a graph with a
2 GiB memory node with and without cudaGraphUpload. Needs a CUDA device.
  --json PATH     where the JSON goes (default: capture_memory.json; checked before anything is measured)
  --launches N    graph launches per timed run of the launch cost (even; default 200, far fewer than a
                  stream's launch queue holds, so that a run times the host's work, not the GPU's)
  --help          this text
Exit status: 0 measured, graphpool within 1.02x of the largest branch; 1 a CUDA error or graphpool above
that; 2 a bad flag or an output path that cannot be written; 77 no CUDA device (nothing measured).
)";

}  // namespace

int main(int argc, char** argv) {
  std::string json_path = "capture_memory.json";
  int launches = 200;
  graphpool::bench::command_line args(argc, argv, "graphpool_bench_capture_memory", help);
  const int status = args.read([&](const std::string& flag) {
    if (flag == "--json") {
      json_path = args.value();
    } else if (flag == "--launches") {
      launches = static_cast<int>(args.integer(2, 1000000));
      if (launches % 2 != 0) {
        throw graphpool::error("--launches: " + std::to_string(launches) + " is odd; a run launches forward/backward pairs");
      }
    } else {
      return false;
    }
    return true;
  });
  if (status >= 0) return status;
  if (!args.writable(json_path)) return 2;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("capture_memory: no CUDA device; this benchmark needs one\n");
    return 77;
  }
  try {
    using namespace graphpool;
    cudaStream_t stream = nullptr;
    GRAPHPOOL_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    std::string json = "{\n  \"benchmark\": \"capture_memory\",\n" + graphpool::bench::commit_json() +
                       graphpool::bench::device_json(0);
    char line[512];

    // 1. Capture + instantiate per branch: output, saved tensor, workspace, three memsets.
    cuda_pool_resource pool;
    arena_allocator<cuda_pool_resource> arenas(pool);
    const slot_id slot = arenas.declare_slot("layer0");
    const branch_id branch = arenas.declare_branch(slot, "cp1", {{part(8 * MiB)}, {part(64 * MiB)}});
    arenas.reserve();
    declared_branch<cuda_pool_resource> declared(arenas, slot, branch);
    shared_physical_resource vmm;
    auto window_arena = vmm.make_arena(1, 256 * MiB);
    window_branch window(*window_arena, 0);
    auto graphpool_body = [&](capture_session& c) {
      void* out = c.allocate_persistent(8 * MiB, 256, persistent_kind::output);
      void* saved = c.allocate_persistent(64 * MiB);
      void* workspace = c.allocate_transient(32 * MiB);
      enqueue_memset(workspace, 32 * MiB, c.stream());
      enqueue_memset(saved, 64 * MiB, c.stream());
      enqueue_memset(out, 8 * MiB, c.stream());
      c.free_transient(workspace);
    };
    constexpr int captures = 41;
    std::vector<double> declared_us;
    std::vector<double> window_us;
    std::vector<double> plain_us;
    for (int i = 0; i <= captures; ++i) {  // i = 0: the warm-up, not kept
      auto keep = [&](std::vector<double>& into, std::chrono::steady_clock::time_point start) {
        const double us = microseconds_since(start);
        if (i > 0) into.push_back(us);
      };
      auto start = std::chrono::steady_clock::now();
      graph_executable g1 = capture_session::capture(stream, declared, "layer0", "cp1", graphpool_body);
      keep(declared_us, start);
      start = std::chrono::steady_clock::now();
      graph_executable g2 = capture_session::capture(stream, window, "layer0", "cp1", graphpool_body);
      keep(window_us, start);
      // Without graphpool: every buffer from cudaMallocAsync inside the capture (alloc nodes in the graph).
      start = std::chrono::steady_clock::now();
      GRAPHPOOL_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "plain capture");
      void* out = nullptr;
      void* saved = nullptr;
      void* workspace = nullptr;
      GRAPHPOOL_CUDA_TRY(cudaMallocAsync(&out, 8 * MiB, stream), "plain");
      GRAPHPOOL_CUDA_TRY(cudaMallocAsync(&saved, 64 * MiB, stream), "plain");
      GRAPHPOOL_CUDA_TRY(cudaMallocAsync(&workspace, 32 * MiB, stream), "plain");
      enqueue_memset(workspace, 32 * MiB, stream);
      enqueue_memset(saved, 64 * MiB, stream);
      enqueue_memset(out, 8 * MiB, stream);
      GRAPHPOOL_CUDA_TRY(cudaFreeAsync(workspace, stream), "plain");
      GRAPHPOOL_CUDA_TRY(cudaFreeAsync(saved, stream), "plain");
      GRAPHPOOL_CUDA_TRY(cudaFreeAsync(out, stream), "plain");
      cudaGraph_t graph = nullptr;
      GRAPHPOOL_CUDA_TRY(cudaStreamEndCapture(stream, &graph), "plain");
      cudaGraphExec_t exec = nullptr;
      GRAPHPOOL_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0), "plain");
      keep(plain_us, start);
      GRAPHPOOL_CUDA_TRY(cudaGraphExecDestroy(exec), "plain");
      GRAPHPOOL_CUDA_TRY(cudaGraphDestroy(graph), "plain");
    }
    std::printf("capture + instantiate per branch (median of %d, after one warm-up)\n", captures);
    std::printf("  %-48s %10.1f us\n", "graphpool session, declared arena (pool)", median(declared_us));
    std::printf("  %-48s %10.1f us\n", "graphpool session, window over shared pages", median(window_us));
    std::printf("  %-48s %10.1f us\n", "plain capture, cudaMallocAsync inside", median(plain_us));
    std::snprintf(line, sizeof(line),
                  "  \"capture_instantiate_us\": {\"captures\": %d, \"declared_arena\": %.2f, \"window\": %.2f, "
                  "\"plain_capture\": %.2f},\n",
                  captures, median(declared_us), median(window_us), median(plain_us));
    json += line;

    // 2. Host cost per launch of a tiny graph: forward then backward, through cudaGraphLaunch,
    //    graph_bank, and variant_graphs (the one path) with the guard off and on.
    void* small = nullptr;
    GRAPHPOOL_CUDA_TRY(cudaMalloc(&small, 4096), "small");
    auto tiny = [&](capture_session& c) { enqueue_memset(small, 4096, c.stream()); };
    graphpool::no_persistent_memory none;
    graph_bank bank;
    graph_executable raw = capture_session::capture(stream, none, "tiny", "raw", tiny);
    bank.add({slot_id{0}, branch_id{0}, graph_phase::forward}, capture_session::capture(stream, none, "tiny", "f", tiny));
    bank.add({slot_id{0}, branch_id{0}, graph_phase::backward}, capture_session::capture(stream, none, "tiny", "b", tiny));
    cuda_pool_resource launch_pool;
    auto variant_forward = [](frame_capture& f) { enqueue_memset(f.allocate_saved(4096), 4096, f.stream()); };
    auto variant_backward = [](frame_capture& f) { enqueue_memset(f.saved(0), 4096, f.stream()); };
    variant_options guard_off;
    guard_off.guard = false;
    variant_options guard_on;
    guard_on.guard = true;
    variant_graphs graphs_off(launch_pool, {"cp1", "cp2"}, guard_off);
    variant_graphs graphs_on(launch_pool, {"cp1", "cp2"}, guard_on);
    graphs_off.capture(stream, variant_forward, variant_backward);
    graphs_on.capture(stream, variant_forward, variant_backward);
    // Each run times the four ways one after the other, from an idle stream; a run's launches are few
    // enough not to fill the stream's launch queue (a full queue makes the host wait: it would time the GPU).
    // Costs above cudaGraphLaunch are medians of each run's difference.
    constexpr int launch_runs = 31;
    std::vector<double> raw_ns;
    std::vector<double> bank_ns;
    std::vector<double> off_ns;
    std::vector<double> on_ns;
    for (int run = -1; run < launch_runs; ++run) {  // run -1: the warm-up, not kept
      auto time_launches = [&](const std::function<void()>& pair) {
        GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(stream), "sync");
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < launches / 2; ++i) pair();
        const double ns = microseconds_since(start) * 1000.0 / launches;
        GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(stream), "sync");
        return ns;
      };
      const double direct = time_launches([&] {
        GRAPHPOOL_CUDA_TRY(cudaGraphLaunch(raw.get(), stream), "raw");
        GRAPHPOOL_CUDA_TRY(cudaGraphLaunch(raw.get(), stream), "raw");
      });
      const double through_bank = time_launches([&] {
        bank.launch({slot_id{0}, branch_id{0}, graph_phase::forward}, stream);
        bank.launch({slot_id{0}, branch_id{0}, graph_phase::backward}, stream);
      });
      const double guard_off = time_launches([&] {
        graphs_off.forward(chunk_id{0}, 0, layer_id{0}, branch_id{1}, stream);
        graphs_off.backward(chunk_id{0}, 0, layer_id{0}, branch_id{1}, stream);
      });
      const double guard_on = time_launches([&] {
        graphs_on.forward(chunk_id{0}, 0, layer_id{0}, branch_id{1}, stream);
        graphs_on.backward(chunk_id{0}, 0, layer_id{0}, branch_id{1}, stream);
      });
      if (run < 0) continue;
      raw_ns.push_back(direct);
      bank_ns.push_back(through_bank);
      off_ns.push_back(guard_off);
      on_ns.push_back(guard_on);
    }
    GRAPHPOOL_CUDA_TRY(cudaFree(small), "small");
    const double overhead_bank = median_difference(bank_ns, raw_ns);
    const double overhead_off = median_difference(off_ns, raw_ns);
    const double overhead_on = median_difference(on_ns, raw_ns);
    std::printf("\nhost cost per launch (median of %d runs of %d launches, after one warm-up run; in brackets the\n"
                "median of each run's difference from cudaGraphLaunch)\n", launch_runs, launches);
    std::printf("  %-48s %10.1f ns\n", "cudaGraphLaunch", median(raw_ns));
    std::printf("  %-48s %10.1f ns (%+.1f)\n", "graph_bank::launch", median(bank_ns), overhead_bank);
    std::printf("  %-48s %10.1f ns (%+.1f; target under 50)\n", "variant_graphs forward/backward, guard off",
                median(off_ns), overhead_off);
    std::printf("  %-48s %10.1f ns (%+.1f)\n", "variant_graphs forward/backward, guard on", median(on_ns), overhead_on);
    std::snprintf(line, sizeof(line),
                  "  \"launch_ns\": {\"runs\": %d, \"launches_per_run\": %d, \"cudaGraphLaunch\": %.1f, \"graph_bank\": %.1f, "
                  "\"variant_graphs_guard_off\": %.1f, \"variant_graphs_guard_on\": %.1f, \"graph_bank_overhead\": %.1f, "
                  "\"variant_graphs_overhead_guard_off\": %.1f, \"variant_graphs_overhead_guard_on\": %.1f},\n",
                  launch_runs, launches, median(raw_ns), median(bank_ns), median(off_ns), median(on_ns), overhead_bank,
                  overhead_off, overhead_on);
    json += line;

    // 3. Device memory for N branches of different sizes: 32 MiB of outputs plus the branch's saved bytes.
    const std::vector<std::size_t> saved_sizes{1024 * MiB, 768 * MiB, 512 * MiB, 384 * MiB,
                                               256 * MiB,  192 * MiB, 128 * MiB, 96 * MiB};
    const std::size_t outputs = 32 * MiB;
    std::printf("\ndevice memory, N branches (outputs 32 MiB + saved 1024, 768, 512, 384, 256, 192, 128, 96 MiB)\n");
    std::printf("  %3s %12s %18s %18s %18s %18s\n", "N", "largest", "pool per branch", "one shared pool",
                "graphpool (pool)", "graphpool (pages)*");
    json += "  \"memory\": [\n";
    bool within_target = true;
    for (std::size_t n : {1, 2, 4, 8}) {
      const std::size_t largest = outputs + saved_sizes[0];
      // (a) a pool per branch, each holding its branch's buffers
      std::size_t per_branch = 0;
      {
        std::vector<std::unique_ptr<cuda_pool_resource>> pools;
        std::vector<void*> held;
        for (std::size_t b = 0; b < n; ++b) {
          pools.push_back(std::make_unique<cuda_pool_resource>());
          held.push_back(pools.back()->allocate_sync(outputs));
          held.push_back(pools.back()->allocate_sync(saved_sizes[b]));
          per_branch += pools.back()->reserved_bytes();
        }
        for (std::size_t b = 0; b < n; ++b) {
          pools[b]->deallocate_sync(held[2 * b], outputs);
          pools[b]->deallocate_sync(held[2 * b + 1], saved_sizes[b]);
        }
      }
      // (b) one shared pool; every branch keeps its own outputs and saved buffers alive
      std::size_t shared = 0;
      {
        cuda_pool_resource one;
        std::vector<std::pair<void*, std::size_t>> held;
        for (std::size_t b = 0; b < n; ++b) {
          held.emplace_back(one.allocate_sync(outputs), outputs);
          held.emplace_back(one.allocate_sync(saved_sizes[b]), saved_sizes[b]);
        }
        shared = one.reserved_bytes();
        for (auto& [ptr, bytes] : held) one.deallocate_sync(ptr, bytes);
      }
      // (c) graphpool: one arena for the slot, on a pool and on shared pages
      std::size_t ours_pool = 0;
      std::size_t ours_pages = 0;          // measured: device memory the reservation took
      std::size_t ours_pages_counter = 0;  // what graphpool says it mapped (its own counter)
      {
        cuda_pool_resource backing;
        arena_allocator<cuda_pool_resource> slot_arenas(backing);
        shared_physical_resource pages;
        arena_allocator<shared_physical_resource> window_arenas(pages);
        const slot_id a = slot_arenas.declare_slot("layer0");
        const slot_id w = window_arenas.declare_slot("layer0");
        for (std::size_t b = 0; b < n; ++b) {
          slot_arenas.declare_branch(a, "b" + std::to_string(b), {{part(outputs)}, {part(saved_sizes[b])}});
          window_arenas.declare_branch(w, "b" + std::to_string(b), {{part(outputs)}, {part(saved_sizes[b])}});
        }
        slot_arenas.reserve();
        ours_pool = backing.reserved_bytes();
        ours_pages = device_bytes_taken_by([&] { window_arenas.reserve(); });
        ours_pages_counter = pages.physical_bytes();
      }
      const double l = static_cast<double>(largest);
      std::printf("  %3zu %9.0f MiB %12.0f (%.2fx) %12.0f (%.2fx) %12.0f (%.2fx) %12.0f (%.2fx)\n", n,
                  l / MiB, static_cast<double>(per_branch) / MiB, per_branch / l, static_cast<double>(shared) / MiB,
                  shared / l, static_cast<double>(ours_pool) / MiB, ours_pool / l, static_cast<double>(ours_pages) / MiB,
                  ours_pages / l);
      within_target = within_target && ours_pool <= 1.02 * l && ours_pages <= 1.02 * l;
      std::snprintf(line, sizeof(line),
                    "    {\"branches\": %zu, \"largest_bytes\": %zu, \"pool_per_branch_bytes\": %zu, "
                    "\"shared_pool_bytes\": %zu, \"graphpool_pool_bytes\": %zu, \"graphpool_pages_device_bytes\": %zu, "
                    "\"graphpool_pages_library_counter_bytes\": %zu}%s\n",
                    n, largest, per_branch, shared, ours_pool, ours_pages, ours_pages_counter, n == 8 ? "" : ",");
      json += line;
    }
    json += "  ],\n  \"graphpool_within_1_02_of_largest\": " + std::string(within_target ? "true" : "false") + ",\n";
    std::printf("* measured on the device: free memory before and after reserve() (cudaMemGetInfo)\n");
    std::printf("graphpool within 1.02x of the largest branch for every N: %s\n", within_target ? "yes" : "NO");

    // 4. The first launch of a graph with a 2 GiB memory node maps its physical pages; cudaGraphUpload
    //    (capture_options::upload) does that ahead. Host time until the launch's work is done, graph
    //    memory trimmed before each pair so every first launch maps anew.
    constexpr std::size_t node_bytes = 2048 * MiB;
    std::vector<double> cold_us;
    std::vector<double> uploaded_us;
    std::vector<double> upload_us;
    std::vector<double> warm_us;
    for (int run = 0; run < 7; ++run) {
      for (bool upload : {false, true}) {
        GRAPHPOOL_CUDA_TRY(cudaDeviceSynchronize(), "sync");
        GRAPHPOOL_CUDA_TRY(cudaDeviceGraphMemTrim(0), "trim");
        capture_options options;
        options.upload = upload;
        const auto captured = std::chrono::steady_clock::now();
        graph_executable graph = capture_session::capture(stream, none, "first launch", upload ? "uploaded" : "cold",
                                                          [&](capture_session& c) {
                                                            void* big = c.allocate_transient(node_bytes);
                                                            enqueue_memset(big, 4096, c.stream());
                                                            c.free_transient(big);
                                                          }, options);
        GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(stream), "upload");
        if (upload) upload_us.push_back(microseconds_since(captured));
        auto first = std::chrono::steady_clock::now();
        graph.launch(stream);
        GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(stream), "first launch");
        (upload ? uploaded_us : cold_us).push_back(microseconds_since(first));
        first = std::chrono::steady_clock::now();
        graph.launch(stream);
        GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(stream), "second launch");
        if (!upload) warm_us.push_back(microseconds_since(first));
      }
    }
    std::printf("\nfirst launch of a graph with a 2 GiB memory node (median of 7, host time to completion)\n");
    std::printf("  %-48s %10.1f us\n", "first launch, no upload", median(cold_us));
    std::printf("  %-48s %10.1f us\n", "first launch after cudaGraphUpload", median(uploaded_us));
    std::printf("  %-48s %10.1f us\n", "capture + instantiate + upload", median(upload_us));
    std::printf("  %-48s %10.1f us\n", "a later launch", median(warm_us));
    std::snprintf(line, sizeof(line),
                  "  \"first_launch_us\": {\"node_bytes\": %zu, \"no_upload\": %.1f, \"after_upload\": %.1f, "
                  "\"capture_instantiate_upload\": %.1f, \"later_launch\": %.1f}\n}\n",
                  node_bytes, median(cold_us), median(uploaded_us), median(upload_us), median(warm_us));
    json += line;
    GRAPHPOOL_CUDA_TRY(cudaStreamDestroy(stream), "stream");

    std::FILE* out = std::fopen(json_path.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "capture_memory: cannot write %s\n", json_path.c_str());
      return 1;
    }
    std::fputs(json.c_str(), out);
    std::fclose(out);
    std::printf("wrote %s\n", json_path.c_str());
    return within_target ? 0 : 1;
  } catch (const std::exception& e) {  // graphpool's errors, and std::bad_alloc
    std::fprintf(stderr, "capture_memory failed: %s\n", e.what());
    return 1;
  }
}
