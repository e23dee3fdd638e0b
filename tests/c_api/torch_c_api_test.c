/* The PyTorch plug-in's C calls, from C: errors before a plug-in exists and for bad input (no device
 * needed); with --device, a plug-in's segments and bookkeeping end to end (exit 77 without a device).
 * Also the capture calls of c_api.h given no resource. */
#include <graphpool/c_api.h>
#include <graphpool/torch_allocator.h>

#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(condition)                                                                                    \
  do {                                                                                                      \
    if (!(condition)) {                                                                                     \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #condition,          \
              graphpool_last_error());                                                                      \
      ++failures;                                                                                           \
    }                                                                                                       \
  } while (0)

static const char* branches[] = {"cp1", "cp2"};
static const char* in_flight[] = {"order=1,1,-1,-1"};

static int said(const char* text) { return strstr(graphpool_last_error(), text) != NULL; }

static int device_part(void);

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--device") == 0) return device_part();
  const char* bad[] = {"pp=4,microbatches=8"};
  size_t held = 99;
  int chunks = 0;
  int slots = 0;

  /* No plug-in: every call says to make one first; destroy has nothing to do. */
  CHECK(graphpool_torch_shape(&chunks, &slots) == GRAPHPOOL_ERROR && said("call graphpool_torch_create first"));
  CHECK(graphpool_torch_select(0, 0, 0) == GRAPHPOOL_ERROR && said("call graphpool_torch_create first"));
  CHECK(graphpool_torch_malloc(1024, 0, NULL) == NULL && said("call graphpool_torch_create first"));
  graphpool_torch_free((void*)0x1000, 16, 0, NULL); /* not a segment: ignored, said on stderr */
  CHECK(graphpool_torch_destroy(&held) == GRAPHPOOL_OK && held == 0);
  CHECK(graphpool_torch_destroy(NULL) == GRAPHPOOL_ERROR && said("still_held is null"));
  int exists = 1;
  CHECK(graphpool_torch_exists(&exists) == GRAPHPOOL_OK && exists == 0);
  CHECK(graphpool_torch_exists(NULL) == GRAPHPOOL_ERROR && said("exists is null"));

  /* Bad input is named before any device is asked. */
  CHECK(graphpool_torch_create(0, NULL, 2, in_flight, 1, 0) == GRAPHPOOL_ERROR && said("branches is null"));
  CHECK(graphpool_torch_create(0, branches, 2, bad, 1, 0) == GRAPHPOOL_ERROR &&
        said("pp, rank and microbatches are required"));
  CHECK(graphpool_torch_create(0, branches, 2, NULL, 0, 0) == GRAPHPOOL_ERROR && said("no schedule given"));
  const char* twice[] = {"cp1", "cp1"};
  const char* unnamed[] = {"cp1", ""};
  CHECK(graphpool_torch_create(0, twice, 2, in_flight, 1, 0) == GRAPHPOOL_ERROR && said("branch name 'cp1' is given twice"));
  CHECK(graphpool_torch_create(0, unnamed, 2, in_flight, 1, 0) == GRAPHPOOL_ERROR && said("branch 1 has an empty name"));
  CHECK(graphpool_torch_create(0, branches, 0, in_flight, 1, 0) == GRAPHPOOL_ERROR && said("no branch given"));
  CHECK(graphpool_torch_create(-1, branches, 2, in_flight, 1, 0) == GRAPHPOOL_ERROR && said("device -1 does not exist"));
  /* The capture calls name themselves when given no resource. */
  void* out = (void*)0x1;
  CHECK(graphpool_allocate(NULL, NULL, 16, 256, &out) == GRAPHPOOL_ERROR &&
        said("graphpool_allocate: the graphpool_capture_resource is null") && out == (void*)0x1);
  CHECK(graphpool_deallocate(NULL, NULL, NULL, 16, 256) == GRAPHPOOL_ERROR &&
        said("graphpool_deallocate: the graphpool_capture_resource is null"));
  CHECK(graphpool_push_persistent(NULL, GRAPHPOOL_PERSISTENT_SAVED) == GRAPHPOOL_ERROR &&
        said("graphpool_push_persistent: the graphpool_capture_resource is null"));
  CHECK(graphpool_pop_persistent(NULL) == GRAPHPOOL_ERROR && said("graphpool_pop_persistent: the graphpool_capture_resource is null"));
  if (failures == 0) printf("torch C API: the checks without a plug-in passed\n");
  return failures == 0 ? 0 : 1;
}

static int device_part(void) {
  const char* twice[] = {"cp1", "cp1"};
  size_t held = 99;
  size_t bytes = 0;
  int chunks = 0;
  int slots = 0;
  if (graphpool_torch_create(0, branches, 2, in_flight, 1, 0) != GRAPHPOOL_OK) {
    printf("torch C API: skipped: no CUDA device (%s)\n", graphpool_last_error());
    return 77;
  }
  CHECK(graphpool_torch_create(0, twice, 2, in_flight, 1, 0) == GRAPHPOOL_ERROR && said("a plug-in exists already"));
  int exists = 0;
  CHECK(graphpool_torch_exists(&exists) == GRAPHPOOL_OK && exists == 1);
  CHECK(graphpool_torch_shape(&chunks, &slots) == GRAPHPOOL_OK && chunks == 1 && slots == 2);
  int untouched = -5; /* a refused call writes nothing */
  CHECK(graphpool_torch_shape(&untouched, NULL) == GRAPHPOOL_ERROR && untouched == -5 && said("slots"));
  int microbatches = 0;
  CHECK(graphpool_torch_first_microbatches(&microbatches) == GRAPHPOOL_OK && microbatches == 2);
  int slot = -1;
  CHECK(graphpool_torch_slot_of(2, 0, 1, &slot) == GRAPHPOOL_OK && slot == 1);
  CHECK(graphpool_torch_slot_of(3, 0, 1, &slot) == GRAPHPOOL_ERROR && said("no slot map for a schedule of 3"));
  CHECK(graphpool_torch_malloc(1 << 20, 0, NULL) == NULL && said("no frame selected"));
  /* A negative index is named alone (frame_physical_bytes takes no branch: none is mentioned). */
  CHECK(graphpool_torch_frame_physical_bytes(-1, 0, &bytes) == GRAPHPOOL_ERROR && said("chunk -1 is negative") &&
        !said("branch"));
  CHECK(graphpool_torch_select(0, -2, 0) == GRAPHPOOL_ERROR && said("slot -2 is negative") && !said("chunk"));
  CHECK(graphpool_torch_select(0, 1, 1) == GRAPHPOOL_OK);
  void* segment = graphpool_torch_malloc(3 << 20, 0, NULL);
  CHECK(segment != NULL);
  CHECK(graphpool_torch_malloc(1 << 20, 1, NULL) == NULL && said("device 1"));
  CHECK(graphpool_torch_used_bytes(0, 1, 1, &bytes) == GRAPHPOOL_OK && bytes == (3u << 20));
  CHECK(graphpool_torch_physical_bytes(&bytes) == GRAPHPOOL_OK && bytes >= (3u << 20));
  CHECK(graphpool_torch_live_segments(&bytes) == GRAPHPOOL_OK && bytes == 1);
  CHECK(graphpool_torch_deselect() == GRAPHPOOL_OK);
  /* Destroyed while a segment is held: retired, and freed with that segment. */
  CHECK(graphpool_torch_destroy(&held) == GRAPHPOOL_OK && held == 1);
  CHECK(graphpool_torch_shape(&chunks, &slots) == GRAPHPOOL_ERROR);
  CHECK(graphpool_torch_exists(&exists) == GRAPHPOOL_OK && exists == 0); /* retired: a new one may be made */
  graphpool_torch_free(segment, 3 << 20, 0, NULL);
  CHECK(graphpool_torch_create(0, branches, 2, in_flight, 1, 0) == GRAPHPOOL_OK);
  /* A call with several outputs that fails writes none of them (a null one among them, here). */
  size_t first = 5;
  size_t second = 6;
  CHECK(graphpool_torch_plan_bytes(&first, &second, NULL) == GRAPHPOOL_ERROR && said("scratch is null") && first == 5 &&
        second == 6);
  CHECK(graphpool_torch_window_pages(0, 0, 0, &first, NULL) == GRAPHPOOL_ERROR && said("transient is null") && first == 5);
  CHECK(graphpool_torch_select(0, 0, 0) == GRAPHPOOL_OK);
  segment = graphpool_torch_malloc(1 << 20, 0, NULL);
  CHECK(segment != NULL);
  CHECK(graphpool_torch_deselect() == GRAPHPOOL_OK);
  CHECK(graphpool_torch_lay_out() == GRAPHPOOL_OK);
  CHECK(graphpool_torch_frame_range(0, 0, &first, NULL) == GRAPHPOOL_ERROR && said("bytes is null") && first == 5);
  CHECK(graphpool_torch_frame_range(0, 0, &first, &second) == GRAPHPOOL_OK);
  graphpool_torch_free(segment, 1 << 20, 0, NULL);
  CHECK(graphpool_torch_destroy(&held) == GRAPHPOOL_OK && held == 0);
  if (failures == 0) printf("torch C API: the device checks passed\n");
  return failures == 0 ? 0 : 1;
}
