"""The process's plug-in: frames (chunk, slot) whose branches share physical pages, one window each."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import weakref

from . import _native

_allocator = None
_owner = None  # (weak reference to the object the plug-in was made for, its device) while one exists


def pluggable_allocator():
    """torch.cuda.memory.CUDAPluggableAllocator over graphpool's malloc/free (made once per process)."""
    global _allocator
    if _allocator is None:
        import torch

        # The file ctypes loaded, not library_path() again: a relative GRAPHPOOL_TORCH_LIBRARY read after a
        # chdir, or a changed environment, would load a second copy whose malloc knows no plug-in.
        _allocator = torch.cuda.memory.CUDAPluggableAllocator(
            _native.library_file(), "graphpool_torch_malloc", "graphpool_torch_free")
    return _allocator


class Plugin:
    """graphpool_torch_create() and the calls around it. One exists per process at a time."""

    def __init__(self, owner, device: int, branches: list[str], schedules: list[str], window_capacity: int = 0):
        global _owner
        if _native.int_out("graphpool_torch_exists"):
            _reclaim_dropped()
        if _native.int_out("graphpool_torch_exists"):
            raise _native.GraphpoolError(
                "graphpool_torch: another GraphedVariants holds the process's plug-in; call its release() first "
                "(one GraphedVariants per process at a time)")
        names, count = _native.strings(branches)
        specs, spec_count = _native.strings(schedules)
        _native.call("graphpool_torch_create", device, names, count, specs, spec_count, window_capacity)
        self.device = device
        self.branches = list(branches)
        self.schedules = list(schedules)
        chunks, slots = ctypes.c_int(0), ctypes.c_int(0)
        _native.call("graphpool_torch_shape", ctypes.byref(chunks), ctypes.byref(slots))
        self.chunks, self.slots = chunks.value, slots.value
        self.alive = True
        _owner = (weakref.ref(owner), device)

    def first_microbatches(self) -> int:
        """The microbatches of the first schedule given."""
        return _native.int_out("graphpool_torch_first_microbatches")

    def slot_of(self, microbatches: int, chunk: int, microbatch: int) -> int:
        return _native.int_out("graphpool_torch_slot_of", microbatches, chunk, microbatch)

    @contextlib.contextmanager
    def selected(self, chunk: int, slot: int, branch: int):
        """Segments asked for inside come from (chunk, slot, branch); refused again after."""
        _native.call("graphpool_torch_select", chunk, slot, branch)
        try:
            yield
        finally:
            _native.call("graphpool_torch_deselect")

    def used_bytes(self, chunk: int, slot: int, branch: int) -> int:
        return _native.size_out("graphpool_torch_used_bytes", chunk, slot, branch)

    def physical_bytes(self) -> int:
        return _native.size_out("graphpool_torch_physical_bytes")

    def live_segments(self) -> int:
        return _native.size_out("graphpool_torch_live_segments")

    def plan_bytes(self) -> tuple[int, int, int]:
        """(footprint, live bound, scratch) of the frames as planned now (see graphpool_torch_plan_bytes)."""
        footprint, bound, scratch = ctypes.c_size_t(0), ctypes.c_size_t(0), ctypes.c_size_t(0)
        _native.call("graphpool_torch_plan_bytes", ctypes.byref(footprint), ctypes.byref(bound), ctypes.byref(scratch))
        return int(footprint.value), int(bound.value), int(scratch.value)

    def add_persistent(self, chunk: int, slot: int, branch: int, blocks) -> int:
        """Marks the blocks [(address, bytes)] that lie in (chunk, slot, branch)'s segments as persistent."""
        added = ctypes.c_int(0)
        count = 0
        for address, size in blocks:
            _native.call("graphpool_torch_add_persistent", chunk, slot, branch, ctypes.c_void_p(address), size,
                         ctypes.byref(added))
            count += added.value
        return count

    def window_pages(self, chunk: int, slot: int, branch: int) -> tuple[int, int]:
        persistent, transient = ctypes.c_size_t(0), ctypes.c_size_t(0)
        _native.call("graphpool_torch_window_pages", chunk, slot, branch, ctypes.byref(persistent), ctypes.byref(transient))
        return int(persistent.value), int(transient.value)

    def page_bytes(self) -> int:
        return _native.size_out("graphpool_torch_page_bytes")

    def lay_out(self) -> None:
        _native.call("graphpool_torch_lay_out")

    def frame_range(self, chunk: int, slot: int) -> tuple[int, int]:
        """(offset, bytes) of the frame's persistent pages in the planned block (after lay_out())."""
        offset, size = ctypes.c_size_t(0), ctypes.c_size_t(0)
        _native.call("graphpool_torch_frame_range", chunk, slot, ctypes.byref(offset), ctypes.byref(size))
        return int(offset.value), int(size.value)

    def destroy(self) -> int:
        """Forgets the plug-in and frees its frames; returns the segments PyTorch still holds (their frames'
        memory goes back when the last of them is freed)."""
        global _owner
        if not self.alive:
            return 0
        self.alive = False
        _owner = None
        return _native.size_out("graphpool_torch_destroy")


def _reclaim_dropped() -> None:
    """The plug-in of an owner dropped without release(): once Python has collected the owner (its graphs
    went with it), the plug-in is destroyed here, after its device's work, rather than at a collection
    that may come in the middle of some other capture."""
    global _owner
    gc.collect()
    if _owner is None or _owner[0]() is not None:
        return
    import torch

    torch.cuda.synchronize(_owner[1])
    _owner = None
    _native.size_out("graphpool_torch_destroy")
