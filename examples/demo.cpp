// graphpool demo: four context-parallel branches of one slot share one arena sized by the largest.
//
// On a GPU the arena comes from a cudaMemPool_t; without one, from host memory (the same arena
// logic). Bytes written through branch cp1 are read back through branch cp8.

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "graphpool/graphpool.hpp"

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

// Declares the slot: each CP branch keeps 1/CP of the saved activations; outputs are identical.
template <class Upstream>
void declare(graphpool::arena_allocator<Upstream>& arenas, graphpool::slot_id slot) {
  for (int cp : {1, 2, 4, 8}) {
    arenas.declare_branch(slot, "cp" + std::to_string(cp),
                          graphpool::branch_layout{{graphpool::part(16 * MiB)}, {graphpool::part(512 * MiB / cp)}});
  }
}

template <class Upstream, class Write, class Read>
int run(Upstream& upstream, const char* where, Write write, Read read) {
  graphpool::arena_allocator<Upstream> arenas(upstream);
  const graphpool::slot_id slot = arenas.declare_slot("layer0");
  declare(arenas, slot);
  arenas.reserve();

  const auto cp1 = arenas.view(slot, arenas.find_branch(slot, "cp1"));
  const auto cp8 = arenas.view(slot, arenas.find_branch(slot, "cp8"));
  const std::string message = "written through branch cp1";
  write(cp1.saved(0), message);
  const std::string seen = read(cp8.saved(0), message.size());

  std::printf("graphpool demo on %s\n\n", where);
  std::printf("%s", arenas.statistics().summary().c_str());
  std::printf("\ncp1 saved part at %p, cp8 saved part at %p\n", cp1.saved(0), cp8.saved(0));
  std::printf("read through branch cp8: \"%s\"\n", seen.c_str());
  return seen == message ? 0 : 1;
}

}  // namespace

int main() {
  try {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
      graphpool::cuda_pool_resource pool;
      const int status = run(
          pool, "the GPU (a cudaMemPool_t)",
          [](void* dst, const std::string& text) {
            GRAPHPOOL_CUDA_TRY(cudaMemcpy(dst, text.data(), text.size(), cudaMemcpyHostToDevice), "demo write");
          },
          [](const void* src, std::size_t n) {
            std::string text(n, '\0');
            GRAPHPOOL_CUDA_TRY(cudaMemcpy(text.data(), src, n, cudaMemcpyDeviceToHost), "demo read");
            return text;
          });
      std::printf("pool reserved bytes (cudaMemPoolAttrReservedMemCurrent): %s\n",
                  graphpool::detail::format_bytes(pool.reserved_bytes()).c_str());
      return status;
    }
    static_cast<void>(cudaGetLastError());
    graphpool::host_resource host;
    return run(
        host, "the host (no CUDA device found; the same arena logic over host memory)",
        [](void* dst, const std::string& text) { std::memcpy(dst, text.data(), text.size()); },
        [](const void* src, std::size_t n) { return std::string(static_cast<const char*>(src), n); });
  } catch (const graphpool::error& e) {
    std::fprintf(stderr, "graphpool demo failed: %s\n", e.what());
    return 1;
  }
}
