/* graphpool's PyTorch plug-in: the malloc/free pair torch.cuda.memory.CUDAPluggableAllocator loads, and
 * the calls the graphpool_torch Python package makes around its captures.
 *
 * One plug-in per process (PyTorch's pluggable allocator is process-wide): graphpool_torch_create()
 * makes it for one device, a list of branches (variants) and the pipeline schedules that will be
 * replayed; it has chunks x slots frames, each an arena seen through one address window per branch,
 * so the branches of a frame share physical pages while every segment has an address of its own
 * (PyTorch's caching allocator keys its bookkeeping by pointer). Before a capture the caller selects
 * the (chunk, slot, branch) the next segments come from; graphpool_torch_malloc then hands segments
 * from that window, mapping physical memory as the largest branch grows. It makes no stream-ordered
 * call and needs no sizing beforehand; it fails only with no (chunk, slot, branch) selected, when a
 * window's address space (window_capacity) runs out, or when the device is out of memory.
 *
 * Calls return GRAPHPOOL_OK or GRAPHPOOL_ERROR; graphpool_last_error() (c_api.h) gives the message.
 * A call that fails writes none of its outputs.
 * graphpool_torch_malloc returns NULL on error, sets the same message and prints it to stderr (PyTorch
 * reports it as an out-of-memory error). graphpool_torch_free reports nothing (a pointer that is not one
 * of the plug-in's segments is named on stderr and ignored) and leaves graphpool_last_error() as it was, so
 * a tensor freed between a failed call and the read of its message does not erase it.
 * Thread-safety: every call may come from any thread.
 * Implemented in bindings/torch_allocator.cpp, part of libgraphpool_c.so (graphpool::c_api). */
#ifndef GRAPHPOOL_TORCH_ALLOCATOR_H
#define GRAPHPOOL_TORCH_ALLOCATOR_H

#include <stddef.h>

#include "graphpool/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's pair: void* (size_t, int device, cudaStream_t) and void (void*, size_t, int device, cudaStream_t).
 * `stream` is a cudaStream_t (unused: segments are not stream-ordered). */
void* graphpool_torch_malloc(size_t bytes, int device, void* stream);
void graphpool_torch_free(void* segment, size_t bytes, int device, void* stream);

/* Makes the plug-in on `device` for `branch_count` branches named `branches` and the schedules in
 * `schedules`: each "pp=P,rank=R,microbatches=M[,vpp=V,group=G]" (as graphpool-plan --schedule takes it;
 * a range of M gives several) or "order=1,1,-1,-1" (Megatron-LM's signed chunk ids). Every schedule must
 * have the same chunks. Slots (captured copies per chunk) are the peak of microbatches in flight over
 * them all. `window_capacity` is each window's address space in bytes (0: the device's memory).
 * Fails when a plug-in exists (graphpool_torch_destroy first) or for bad input, naming it. */
graphpool_status graphpool_torch_create(int device, const char* const* branches, size_t branch_count,
                                        const char* const* schedules, size_t schedule_count, size_t window_capacity);

/* Forgets the plug-in (a new one may be created) and frees its memory; `still_held` gets the segments
 * PyTorch still holds (tensors from the graphs still referenced): the memory then goes back when the
 * last of them is freed. Succeeds, with 0, when there is no plug-in. */
graphpool_status graphpool_torch_destroy(size_t* still_held);

/* `exists` gets 1 while a plug-in exists (made and not yet destroyed), else 0. */
graphpool_status graphpool_torch_exists(int* exists);

/* Chunks and slots (captured copies per chunk) of the plug-in. */
graphpool_status graphpool_torch_shape(int* chunks, int* slots);

/* The microbatches of the first schedule given (a step replays it unless told another count). */
graphpool_status graphpool_torch_first_microbatches(int* microbatches);

/* The slot (captured copy) microbatch `microbatch` of chunk `chunk` replays in the schedule of
 * `microbatches` microbatches. Fails, naming the schedules planned, for a count that was not given. */
graphpool_status graphpool_torch_slot_of(int microbatches, int chunk, int microbatch, int* slot);

/* Segments asked for from now on come from (chunk, slot, branch); graphpool_torch_deselect() refuses them again. */
graphpool_status graphpool_torch_select(int chunk, int slot, int branch);
graphpool_status graphpool_torch_deselect(void);

/* Bytes (chunk, slot, branch) has taken from its window. */
graphpool_status graphpool_torch_used_bytes(int chunk, int slot, int branch, size_t* bytes);

/* Physical bytes behind the (chunk, slot) frame (its largest branch; 0 after graphpool_torch_lay_out, when
 * the frames' memory is the planned block and the scratch), and behind every frame (both blocks after it). */
graphpool_status graphpool_torch_frame_physical_bytes(int chunk, int slot, size_t* bytes);
graphpool_status graphpool_torch_physical_bytes(size_t* bytes);

/* Segments PyTorch holds (handed out, not yet freed). */
graphpool_status graphpool_torch_live_segments(size_t* count);

/* Marks [address, address + bytes) as alive from a forward replay to its backward (a block PyTorch holds
 * between the two captures) if it lies in a segment of (chunk, slot, branch); `added` gets 1 then, else 0. */
graphpool_status graphpool_torch_add_persistent(int chunk, int slot, int branch, const void* address, size_t bytes,
                                                int* added);

/* Pages of (chunk, slot, branch)'s window holding persistent bytes, and the other pages it uses; the page size. */
graphpool_status graphpool_torch_window_pages(int chunk, int slot, int branch, size_t* persistent, size_t* transient);
graphpool_status graphpool_torch_page_bytes(size_t* bytes);

/* After every capture, before any replay: plans the frames' persistent pages over the schedules and maps
 * every window anew, its persistent pages onto its frame's planned pages and all its other pages onto one
 * scratch block every window shares (graphs replayed on one stream never run at once). Physical memory is
 * then the plan plus the scratch. No segment can be handed out after it. */
graphpool_status graphpool_torch_lay_out(void);

/* After graphpool_torch_lay_out: the (chunk, slot) frame's persistent pages as [offset, offset + bytes) of
 * the planned block. Frames whose ranges overlap share memory (the plan found them never alive together). */
graphpool_status graphpool_torch_frame_range(int chunk, int slot, size_t* offset, size_t* bytes);

/* What the frames take, as planned over the schedules: before graphpool_torch_lay_out every used page of
 * each frame's largest branch; after it the persistent pages plus the scratch. `live_bound`: no plan of
 * those frames is smaller; `scratch`: the shared scratch block (0 before lay-out). */
graphpool_status graphpool_torch_plan_bytes(size_t* footprint, size_t* live_bound, size_t* scratch);

#ifdef __cplusplus
}
#endif

#endif /* GRAPHPOOL_TORCH_ALLOCATOR_H */
