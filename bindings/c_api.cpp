// graphpool's C ABI over capture_resource (see include/graphpool/c_api.h).

#include "graphpool/c_api.h"

#include <string>

#include "graphpool/capture/capture_resource.hpp"
#include "guarded.hpp"

namespace {

graphpool::capture_resource& unwrap(graphpool_capture_resource* resource, const char* call) {
  if (resource == nullptr) throw graphpool::error(std::string(call) + ": the graphpool_capture_resource is null");
  return *reinterpret_cast<graphpool::capture_resource*>(resource);
}

using graphpool::bindings::guarded;

}  // namespace

extern "C" {

graphpool_status graphpool_allocate(graphpool_capture_resource* resource, void* stream, size_t bytes, size_t alignment,
                                    void** out) {
  return guarded([&] {
    if (out == nullptr) throw graphpool::error("graphpool_allocate: out is null");
    *out = unwrap(resource, "graphpool_allocate").allocate(static_cast<cudaStream_t>(stream), bytes, alignment);
  });
}

graphpool_status graphpool_deallocate(graphpool_capture_resource* resource, void* stream, void* ptr, size_t bytes,
                                      size_t alignment) {
  return guarded([&] { unwrap(resource, "graphpool_deallocate").deallocate(static_cast<cudaStream_t>(stream), ptr, bytes, alignment); });
}

graphpool_status graphpool_push_persistent(graphpool_capture_resource* resource, graphpool_persistent_kind kind) {
  return guarded([&] {
    if (kind != GRAPHPOOL_PERSISTENT_OUTPUT && kind != GRAPHPOOL_PERSISTENT_SAVED) {
      throw graphpool::error("graphpool_push_persistent: kind " + std::to_string(static_cast<int>(kind)) +
                             " is neither GRAPHPOOL_PERSISTENT_OUTPUT nor GRAPHPOOL_PERSISTENT_SAVED");
    }
    unwrap(resource, "graphpool_push_persistent").push_persistent(kind == GRAPHPOOL_PERSISTENT_OUTPUT ? graphpool::persistent_kind::output
                                                                         : graphpool::persistent_kind::saved);
  });
}

graphpool_status graphpool_pop_persistent(graphpool_capture_resource* resource) {
  return guarded([&] {
    graphpool::capture_resource& plug = unwrap(resource, "graphpool_pop_persistent");
    // The C++ scope's pop is a destructor and may not fail; from C an unbalanced pop is a caller's bug to report.
    if (!plug.persistent()) {
      throw graphpool::error(plug.session().where() + ": graphpool_pop_persistent with no persistent scope open; "
                             "pair each pop with an earlier graphpool_push_persistent");
    }
    plug.pop_persistent();
  });
}

const char* graphpool_last_error(void) { return graphpool::bindings::last_error().c_str(); }

}  // extern "C"
