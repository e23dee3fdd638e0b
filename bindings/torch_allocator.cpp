// graphpool's PyTorch plug-in (see include/graphpool/torch_allocator.h): one torch_plugin per process
// over shared_window_arena frames.

#include "graphpool/torch_allocator.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graphpool/detail/cuda_check.hpp"
#include "graphpool/memory/shared_physical_resource.hpp"
#include "guarded.hpp"
#include "torch_plugin.hpp"

namespace {

using graphpool::bindings::guarded;
using plugin = graphpool::bindings::torch_plugin<graphpool::shared_window_arena>;

// The plug-in's state lives until the process ends and is never destroyed: PyTorch's caching allocator may
// free segments while the process exits, after this library's static objects would have been destroyed,
// and the CUDA driver reclaims the device memory at exit anyway.
struct plugin_state {
  std::mutex mutex;
  std::unique_ptr<plugin> current;
  // Plug-ins destroyed while PyTorch still held some of their segments: each is freed with its last segment.
  std::vector<std::unique_ptr<plugin>> retired;
};

plugin_state& state() {
  static plugin_state* const s = new plugin_state();
  return *s;
}

plugin& current() {
  if (!state().current) throw graphpool::error("graphpool_torch: no plug-in; call graphpool_torch_create first");
  return *state().current;
}

template <class Call>
graphpool_status with_plugin(Call&& call) noexcept {
  return guarded([&] {
    std::lock_guard<std::mutex> lock(state().mutex);
    call(current());
  });
}

template <class T>
T& out(T* pointer, const char* what) {
  if (pointer == nullptr) throw graphpool::error(std::string("graphpool_torch: ") + what + " is null");
  return *pointer;
}

// Names the one index at fault: a call without a branch argument must not be told about a branch.
std::uint32_t checked_index(int value, const char* what) {
  if (value < 0) {
    throw graphpool::error(std::string("graphpool_torch: ") + what + " " + std::to_string(value) +
                           " is negative; indices are 0-based");
  }
  return static_cast<std::uint32_t>(value);
}

graphpool::segment_source source(int chunk, int slot, int branch) {
  return {graphpool::chunk_id{checked_index(chunk, "chunk")}, graphpool::slot_id{checked_index(slot, "slot")},
          graphpool::branch_id{checked_index(branch, "branch")}};
}

std::vector<std::string> strings(const char* const* values, std::size_t count, const char* what) {
  if (count > 0 && values == nullptr) throw graphpool::error(std::string("graphpool_torch_create: ") + what + " is null");
  std::vector<std::string> result;
  for (std::size_t i = 0; i < count; ++i) {
    if (values[i] == nullptr) throw graphpool::error(std::string("graphpool_torch_create: ") + what + " " + std::to_string(i) + " is null");
    result.emplace_back(values[i]);
  }
  return result;
}

}  // namespace

extern "C" {

void* graphpool_torch_malloc(size_t bytes, int device, void* /*stream*/) {
  void* segment = nullptr;
  const graphpool_status status = with_plugin([&](plugin& p) {
    if (device != p.device()) {
      throw graphpool::error("graphpool_torch_malloc: a segment on device " + std::to_string(device) +
                             " was asked of the plug-in made for device " + std::to_string(p.device()));
    }
    segment = p.pool().allocate(bytes);
  });
  if (status != GRAPHPOOL_OK) std::fprintf(stderr, "graphpool: %s\n", graphpool_last_error());
  return segment;
}

void graphpool_torch_free(void* segment, size_t bytes, int /*device*/, void* /*stream*/) {
  if (segment == nullptr) return;
  plugin_state& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.current && s.current->pool().deallocate(segment)) return;
  for (auto it = s.retired.begin(); it != s.retired.end(); ++it) {
    if ((*it)->pool().deallocate(segment)) {
      if ((*it)->pool().live_segments() == 0) s.retired.erase(it);
      return;
    }
  }
  std::fprintf(stderr, "graphpool: graphpool_torch_free: %p (%zu bytes) is not a segment of the plug-in; ignored\n",
               segment, bytes);
}

graphpool_status graphpool_torch_create(int device, const char* const* branches, size_t branch_count,
                                        const char* const* schedules, size_t schedule_count, size_t window_capacity) {
  return guarded([&] {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (state().current) throw graphpool::error("graphpool_torch_create: a plug-in exists already; call graphpool_torch_destroy first");
    std::vector<std::string> names = strings(branches, branch_count, "branches");
    // Bad input is named before the device is asked.
    graphpool::bindings::check_branch_names(names);
    std::vector<graphpool::plan::schedule> parsed =
        graphpool::bindings::parse_schedules(strings(schedules, schedule_count, "schedules"));
    if (device < 0) {
      throw graphpool::error("graphpool_torch_create: device " + std::to_string(device) + " does not exist (devices are "
                             "numbered from 0)");
    }
    int devices = 0;
    GRAPHPOOL_CUDA_TRY(cudaGetDeviceCount(&devices), "graphpool_torch_create: counting devices");
    if (device >= devices) {
      throw graphpool::error("graphpool_torch_create: device " + std::to_string(device) + " does not exist (" +
                             std::to_string(devices) + " device(s))");
    }
    if (window_capacity == 0) {
      cudaDeviceProp prop{};
      GRAPHPOOL_CUDA_TRY(cudaGetDeviceProperties(&prop, device), "graphpool_torch_create: reading the device's memory");
      window_capacity = prop.totalGlobalMem;
    }
    const std::size_t granularity = graphpool::shared_window_arena(device, 1, 1).granularity();
    state().current = std::make_unique<plugin>(
        device, std::move(names), std::move(parsed), window_capacity, granularity,
        [device](std::size_t windows, std::size_t capacity) {
          return std::make_unique<graphpool::shared_window_arena>(device, windows, capacity);
        },
        [device, granularity](std::size_t bytes) {
          return std::make_shared<const graphpool::physical_block>(device, bytes, granularity);
        });
  });
}

graphpool_status graphpool_torch_destroy(size_t* still_held) {
  return guarded([&] {
    plugin_state& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    std::size_t& held = out(still_held, "still_held");
    held = 0;
    if (!s.current) return;
    held = s.current->pool().live_segments();
    if (held > 0) {
      s.retired.push_back(std::move(s.current));
    } else {
      s.current.reset();
    }
  });
}

graphpool_status graphpool_torch_exists(int* exists) {
  return guarded([&] {
    std::lock_guard<std::mutex> lock(state().mutex);
    out(exists, "exists") = state().current ? 1 : 0;
  });
}

graphpool_status graphpool_torch_shape(int* chunks, int* slots) {
  return with_plugin([&](plugin& p) {
    int& chunks_out = out(chunks, "chunks");
    int& slots_out = out(slots, "slots");  // both checked before either is written
    chunks_out = p.pool().chunks();
    slots_out = p.pool().slots();
  });
}

graphpool_status graphpool_torch_first_microbatches(int* microbatches) {
  return with_plugin([&](plugin& p) { out(microbatches, "microbatches") = p.first_microbatches(); });
}

graphpool_status graphpool_torch_slot_of(int microbatches, int chunk, int microbatch, int* slot) {
  return with_plugin([&](plugin& p) { out(slot, "slot") = p.slot_of(microbatches, chunk, microbatch); });
}

graphpool_status graphpool_torch_select(int chunk, int slot, int branch) {
  return with_plugin([&](plugin& p) { p.pool().select(source(chunk, slot, branch)); });
}

graphpool_status graphpool_torch_deselect(void) {
  return with_plugin([&](plugin& p) { p.pool().deselect(); });
}

graphpool_status graphpool_torch_used_bytes(int chunk, int slot, int branch, size_t* bytes) {
  return with_plugin([&](plugin& p) { out(bytes, "bytes") = p.pool().used_bytes(source(chunk, slot, branch)); });
}

graphpool_status graphpool_torch_frame_physical_bytes(int chunk, int slot, size_t* bytes) {
  return with_plugin([&](plugin& p) {
    const graphpool::chunk_id c{checked_index(chunk, "chunk")};
    const graphpool::slot_id s{checked_index(slot, "slot")};
    out(bytes, "bytes") = p.pool().frame_physical_bytes(c, s);
  });
}

graphpool_status graphpool_torch_physical_bytes(size_t* bytes) {
  return with_plugin([&](plugin& p) { out(bytes, "bytes") = p.pool().physical_bytes(); });
}

graphpool_status graphpool_torch_live_segments(size_t* count) {
  return with_plugin([&](plugin& p) { out(count, "count") = p.pool().live_segments(); });
}

graphpool_status graphpool_torch_plan_bytes(size_t* footprint, size_t* live_bound, size_t* scratch) {
  return with_plugin([&](plugin& p) {
    std::size_t& footprint_out = out(footprint, "footprint");
    std::size_t& live_bound_out = out(live_bound, "live_bound");
    std::size_t& scratch_out = out(scratch, "scratch");  // every output checked before any is written
    const plugin::footprint now = p.current_footprint();
    footprint_out = now.planned;
    live_bound_out = now.live_bound;
    scratch_out = now.scratch;
  });
}

graphpool_status graphpool_torch_add_persistent(int chunk, int slot, int branch, const void* address, size_t bytes,
                                                int* added) {
  return with_plugin([&](plugin& p) { out(added, "added") = p.pool().add_persistent(source(chunk, slot, branch), address, bytes); });
}

graphpool_status graphpool_torch_window_pages(int chunk, int slot, int branch, size_t* persistent, size_t* transient) {
  return with_plugin([&](plugin& p) {
    std::size_t& persistent_out = out(persistent, "persistent");
    std::size_t& transient_out = out(transient, "transient");  // both checked before either is written
    const graphpool::segment_source window = source(chunk, slot, branch);
    persistent_out = p.pool().persistent_pages(window);
    transient_out = p.pool().transient_pages(window);
  });
}

graphpool_status graphpool_torch_page_bytes(size_t* bytes) {
  return with_plugin([&](plugin& p) { out(bytes, "bytes") = p.pool().page_bytes(); });
}

graphpool_status graphpool_torch_frame_range(int chunk, int slot, size_t* offset, size_t* bytes) {
  return with_plugin([&](plugin& p) {
    std::size_t& offset_out = out(offset, "offset");
    std::size_t& bytes_out = out(bytes, "bytes");  // both checked before either is written
    const auto [at, size] = p.frame_range(chunk, slot);
    offset_out = at;
    bytes_out = size;
  });
}

graphpool_status graphpool_torch_lay_out(void) {
  return with_plugin([&](plugin& p) { static_cast<void>(p.lay_out()); });
}

}  // extern "C"
