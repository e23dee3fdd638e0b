// Host cost of one allocation: served from a reserved graphpool arena, against
// cudaMallocFromPoolAsync + cudaFreeAsync, cudaMalloc + cudaFree, and RAPIDS RMM's pool_memory_resource
// and arena_memory_resource (when built with RMM: scripts/fetch_rmm.sh), side by side in one run.
//
// usage: graphpool_bench_allocation_cost [--json PATH] [--runs N]   (--help says more)
// Prints a table and writes JSON (default: allocation_cost.json). Needs a CUDA device.

#include <cuda_runtime_api.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "rmm_allocators.hpp"
#include "graphpool/graphpool.hpp"

namespace {

using graphpool::bench::median;

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t allocation_bytes = 1 * MiB;
constexpr int branches = 4;
constexpr int parts_per_branch = 8;

struct measurement {
  std::string name;
  std::string what;
  int operations_per_run = 0;
  std::vector<double> runs_ns;  // per operation, one value per run
  double median_ns = 0;
};

// Times `body(operations)` `runs` times after one warm-up; each run's figure is ns per operation.
measurement measure(std::string name, std::string what, int operations, int runs,
                    const std::function<void(int)>& body) {
  measurement m{std::move(name), std::move(what), operations, {}, 0};
  body(operations);  // warm-up
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    body(operations);
    const auto stop = std::chrono::steady_clock::now();
    m.runs_ns.push_back(std::chrono::duration<double, std::nano>(stop - start).count() / operations);
  }
  m.median_ns = median(m.runs_ns);
  return m;
}

std::uintptr_t sink = 0;  // keeps the arena lookups from being optimized away

constexpr const char* help = R"(usage: graphpool_bench_allocation_cost [--json PATH] [--runs N]
Host cost of one allocation: an address from a reserved graphpool arena against cudaMallocFromPoolAsync +
cudaFreeAsync, cudaMalloc + cudaFree and, when built with RMM (scripts/fetch_rmm.sh), RMM's
pool_memory_resource and arena_memory_resource, side by side in one run. Needs a CUDA device.
  --json PATH  where the JSON goes (default: allocation_cost.json; checked before anything is measured)
  --runs N     timed runs of each method after one warm-up run; the median is reported (default: 9)
  --help       this text
Exit status: 0 measured; 1 a CUDA error; 2 a bad flag or an output path that cannot be written;
77 no CUDA device (nothing measured).
)";

}  // namespace

int main(int argc, char** argv) {
  std::string json_path = "allocation_cost.json";
  int runs = 9;
  graphpool::bench::command_line args(argc, argv, "graphpool_bench_allocation_cost", help);
  const int status = args.read([&](const std::string& flag) {
    if (flag == "--json") {
      json_path = args.value();
    } else if (flag == "--runs") {
      runs = static_cast<int>(args.integer(1, 100000));
    } else {
      return false;
    }
    return true;
  });
  if (status >= 0) return status;
  if (!args.writable(json_path)) return 2;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("allocation_cost: no CUDA device; this benchmark compares against the CUDA allocators and needs one\n");
    return 77;
  }
  try {
    cudaDeviceProp prop{};
    GRAPHPOOL_CUDA_TRY(cudaGetDeviceProperties(&prop, 0), "device properties");
    cudaStream_t stream = nullptr;
    GRAPHPOOL_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");

    graphpool::cuda_pool_resource pool;
    graphpool::arena_allocator<graphpool::cuda_pool_resource> arenas(pool);
    const graphpool::slot_id slot = arenas.declare_slot("layer0");
    for (int b = 0; b < branches; ++b) {
      std::vector<graphpool::part> saved(parts_per_branch, graphpool::part(allocation_bytes / (b + 1)));
      arenas.declare_branch(slot, "b" + std::to_string(b), graphpool::branch_layout{{}, saved});
    }
    arenas.reserve();

    std::vector<measurement> results;
    results.push_back(measure("arena view", "view(slot, branch).saved(i): the address of a declared part", 1 << 20, runs,
                              [&](int n) {
                                for (int i = 0; i < n; ++i) {
                                  const graphpool::branch_id branch{static_cast<std::uint32_t>(i & (branches - 1))};
                                  sink ^= reinterpret_cast<std::uintptr_t>(
                                      arenas.view(slot, branch).saved(static_cast<std::size_t>(i >> 2) % parts_per_branch));
                                }
                              }));
    results.push_back(measure("arena cursor", "branch_cursor::allocate: the next part, checked against its declaration",
                              1 << 20, runs, [&](int n) {
                                for (int i = 0; i < n; i += parts_per_branch) {
                                  auto cursor = arenas.cursor(slot, graphpool::branch_id{static_cast<std::uint32_t>(
                                                                        (i / parts_per_branch) & (branches - 1))});
                                  for (int p = 0; p < parts_per_branch; ++p) {
                                    sink ^= reinterpret_cast<std::uintptr_t>(cursor.allocate(allocation_bytes / branches));
                                  }
                                }
                              }));
    results.push_back(measure("cudaMallocFromPoolAsync+cudaFreeAsync", "1 MiB from a pool with release threshold max",
                              20000, runs, [&](int n) {
                                for (int i = 0; i < n; ++i) {
                                  void* ptr = nullptr;
                                  GRAPHPOOL_CUDA_TRY(cudaMallocFromPoolAsync(&ptr, allocation_bytes, pool.pool(), stream),
                                                     "pool allocate");
                                  GRAPHPOOL_CUDA_TRY(cudaFreeAsync(ptr, stream), "pool free");
                                }
                                GRAPHPOOL_CUDA_TRY(cudaStreamSynchronize(stream), "sync");
                              }));
    results.push_back(measure("cudaMalloc+cudaFree", "1 MiB", 500, runs, [&](int n) {
      for (int i = 0; i < n; ++i) {
        void* ptr = nullptr;
        GRAPHPOOL_CUDA_TRY(cudaMalloc(&ptr, allocation_bytes), "cudaMalloc");
        GRAPHPOOL_CUDA_TRY(cudaFree(ptr), "cudaFree");
      }
    }));
    graphpool::bench::rmm_allocators rmm(stream, 256 * MiB);
    if (rmm.available()) {
      results.push_back(measure("RMM pool_memory_resource", rmm.describe() + ", 1 MiB allocate+deallocate, 256 MiB pool",
                                20000, runs, [&](int n) { rmm.pool_pairs(n, allocation_bytes); }));
      results.push_back(measure("RMM arena_memory_resource", rmm.describe() + ", 1 MiB allocate+deallocate, 256 MiB arena",
                                20000, runs, [&](int n) { rmm.arena_pairs(n, allocation_bytes); }));
    }
    GRAPHPOOL_CUDA_TRY(cudaStreamDestroy(stream), "stream");

    const double pool_ns = results[2].median_ns;
    std::printf("host cost per allocation on %s (median of %d runs)\n\n", prop.name, runs);
    std::printf("%-40s %12s %14s\n", "method", "ns / alloc", "pool / method");
    for (const measurement& m : results) {
      std::printf("%-40s %12.1f %13.1fx\n", m.name.c_str(), m.median_ns, pool_ns / m.median_ns);
    }
    const double ratio = pool_ns / results[0].median_ns;
    std::printf("\narena view is %.0fx cheaper than the pool pair (target: at least 25x)\n", ratio);
    double rmm_pool_ratio = std::nan("");  // without RMM: not measured, written null
    double rmm_arena_ratio = std::nan("");
    if (rmm.available()) {
      rmm_pool_ratio = results[4].median_ns / results[0].median_ns;
      rmm_arena_ratio = results[5].median_ns / results[0].median_ns;
      std::printf("arena view is %.0fx cheaper than RMM's pool_memory_resource (target: 25x) and %.0fx cheaper than RMM's "
                  "arena_memory_resource (target: 10x)\n", rmm_pool_ratio, rmm_arena_ratio);
    } else {
      std::printf("RMM rows skipped: %s\n", rmm.describe().c_str());
    }

    std::FILE* out = std::fopen(json_path.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "allocation_cost: cannot write %s: %s\n", json_path.c_str(), std::strerror(errno));
      return 1;
    }
    std::fprintf(out, "{\n  \"benchmark\": \"allocation_cost\",\n%s%s  \"runs\": %d,\n",
                 graphpool::bench::commit_json().c_str(), graphpool::bench::device_json(0).c_str(), runs);
    std::fprintf(out, "  \"allocation_bytes\": %zu,\n  \"results\": [\n", allocation_bytes);
    for (std::size_t i = 0; i < results.size(); ++i) {
      const measurement& m = results[i];
      std::fprintf(out, "    {\"name\": \"%s\", \"what\": \"%s\", \"operations_per_run\": %d, \"median_ns\": %.3f, \"runs_ns\": [",
                   m.name.c_str(), m.what.c_str(), m.operations_per_run, m.median_ns);
      for (std::size_t r = 0; r < m.runs_ns.size(); ++r) std::fprintf(out, "%s%.3f", r ? ", " : "", m.runs_ns[r]);
      std::fprintf(out, "]}%s\n", i + 1 < results.size() ? "," : "");
    }
    std::fprintf(out, "  ],\n  \"pool_over_arena_view\": %.2f,\n  \"pool_over_arena_cursor\": %.2f,\n", ratio,
                 pool_ns / results[1].median_ns);
    std::fprintf(out, "  \"rmm\": \"%s\",\n  \"rmm_pool_over_arena_view\": %s,\n  \"rmm_arena_over_arena_view\": %s,\n",
                 rmm.describe().c_str(), graphpool::bench::json_figure(rmm_pool_ratio, 2).c_str(),
                 graphpool::bench::json_figure(rmm_arena_ratio, 2).c_str());
    std::fprintf(out, "  \"target_ratio\": 25,\n  \"sink\": %llu\n}\n", static_cast<unsigned long long>(sink & 1));
    std::fclose(out);
    std::printf("wrote %s\n", json_path.c_str());
    return 0;
  } catch (const std::exception& e) {  // graphpool's errors, and RMM's (std::bad_alloc, rmm::logic_error)
    std::fprintf(stderr, "allocation_cost failed: %s\n", e.what());
    return 1;
  }
}
