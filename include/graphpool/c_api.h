/* graphpool's C ABI: the capture plug-in for runtimes that are not C++.
 *
 * A C++ runtime creates a graphpool::capture_resource for each capture and hands its address to C code
 * as a graphpool_capture_resource*. Calls return GRAPHPOOL_OK or GRAPHPOOL_ERROR; after an error,
 * graphpool_last_error() gives the message (per thread, valid until the thread's next call).
 * Thread-safety: a graphpool_capture_resource belongs to the thread that captures (as its C++ session does):
 * call these functions for one resource from that thread only; different resources are independent.
 * Implemented in bindings/c_api.cpp: the shared library libgraphpool_c.so, CMake target graphpool::c_api (in
 * the build tree and in the installed package: find_package(graphpool), then link graphpool::c_api). */
#ifndef GRAPHPOOL_C_API_H
#define GRAPHPOOL_C_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct graphpool_capture_resource graphpool_capture_resource;

typedef enum graphpool_status { GRAPHPOOL_OK = 0, GRAPHPOOL_ERROR = 1 } graphpool_status;

typedef enum graphpool_persistent_kind {
  GRAPHPOOL_PERSISTENT_OUTPUT = 0, /* read by consumers: identical in every branch of the slot */
  GRAPHPOOL_PERSISTENT_SAVED = 1   /* saved by a branch for its own backward */
} graphpool_persistent_kind;

/* Transient memory (a graph memory node), or persistent inside a persistent scope. `stream` is a
 * cudaStream_t and must be the capture's stream. Zero bytes give NULL. On GRAPHPOOL_ERROR, `*out` is
 * left as it was. */
graphpool_status graphpool_allocate(graphpool_capture_resource* resource, void* stream, size_t bytes, size_t alignment,
                                    void** out);

/* Releases a transient (a free node); persistent memory stays with its arena. */
graphpool_status graphpool_deallocate(graphpool_capture_resource* resource, void* stream, void* ptr, size_t bytes,
                                      size_t alignment);

/* Enters / leaves a persistent scope (scopes nest). A pop with no scope open fails, naming the capture;
 * nothing changes then. */
graphpool_status graphpool_push_persistent(graphpool_capture_resource* resource, graphpool_persistent_kind kind);
graphpool_status graphpool_pop_persistent(graphpool_capture_resource* resource);

/* The message of this thread's last error, or "" when the last call succeeded (graphpool_torch_free, which
 * returns no status, leaves it as it was). */
const char* graphpool_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* GRAPHPOOL_C_API_H */
