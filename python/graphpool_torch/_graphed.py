"""GraphedVariants: every (chunk, slot, variant) of a model captured once, up front, into planned frames."""

from __future__ import annotations

import gc
import os
import time

import torch

from ._capture import CapturedCopy, capture_copy, warm_up
from ._native import GraphpoolError
from ._plugin import Plugin


def slot_debug_requested() -> bool:
    """True when GRAPHPOOL_SLOT_DEBUG is set to anything but "" or "0"."""
    return os.environ.get("GRAPHPOOL_SLOT_DEBUG", "") not in ("", "0")


def in_flight_schedule(depth: int) -> str:
    """The schedule of `depth` microbatches in flight on one chunk: `depth` forwards, then their backwards."""
    if depth < 1:
        raise GraphpoolError(f"graphpool_torch: in_flight is {depth}; at least one microbatch must be in flight")
    return "order=" + ",".join(["1"] * depth + ["-1"] * depth)


_C_INT = (-(1 << 31), (1 << 31) - 1)


def _whole_number(value, what: str, bounds: tuple = _C_INT) -> int:
    """`value` as an int; a float, bool or string (which ctypes would refuse with its own error) raises
    GraphpoolError naming the argument, and so does a value outside `bounds` (by default a C int's: ctypes
    would pass 2**32 as 0 without a word)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise GraphpoolError(f"graphpool_torch: {what} must be an int, not {type(value).__name__} {value!r}")
    number = value.__index__()
    if not bounds[0] <= number <= bounds[1]:
        raise GraphpoolError(f"graphpool_torch: {what} is {number}, out of range ({bounds[0]} to {bounds[1]})")
    return number


def _signature(args: tuple) -> tuple:
    return tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else ("object", type(a).__name__) for a in args)


_capture_streams: dict = {}


def _capture_stream(device: int):
    # One capture stream per device for the process: cuBLAS keeps a workspace per (handle, stream), made
    # by the first warm-up on it and kept until exit; a stream per GraphedVariants would add one each time.
    if device not in _capture_streams:
        _capture_streams[device] = torch.cuda.Stream(device)
    return _capture_streams[device]


class _Replay(torch.autograd.Function):
    """Forward replays a copy's forward graph; backward replays its backward graph."""

    @staticmethod
    def forward(ctx, owner, copy: CapturedCopy, claim, *inputs):
        owner._replay_forward(copy, inputs)
        ctx.owner, ctx.copy, ctx.claim = owner, copy, claim
        ctx.count = len(inputs)
        outputs = tuple(o.detach() for o in copy.static_outputs)
        ctx.mark_non_differentiable(*[o for o, wanted in zip(outputs, copy.output_requires_grad) if not wanted])
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        copy = ctx.copy
        ctx.owner._replay_backward(copy, grads, ctx.claim)
        result = [None] * ctx.count
        for position, index in enumerate(copy.differentiable):
            grad = copy.static_grad_inputs[position]
            if grad is None or not ctx.needs_input_grad[3 + index]:
                continue  # (an argument whose sample needed a gradient but which does not: nothing to copy)
            # The graph's gradients are in the scratch every window shares, which the next replay of any
            # graph overwrites, and autograd need not use them before that: one backward over several
            # microbatches replays their backward graphs before it adds up a parameter's gradients (or
            # before an earlier chunk's backward reads its output's gradient). So each leaves as its own
            # tensor; a leaf whose .grad is unset takes it as is, never graph memory.
            result[index] = grad.clone()
        return (None, None, None, *result)


class GraphedVariants:
    """A model's chunks captured once per (chunk, slot, variant), sharing one planned footprint.

    ``chunks`` is a module or a list of modules (pipeline chunks of one rank). ``variants`` maps each
    variant's name to its sample arguments: a tuple of tensors for one chunk, a list of tuples (one per
    chunk) otherwise. ``schedules`` are the pipeline schedules the model replays (as graphpool-plan's
    --schedule takes them, e.g. "pp=4,rank=0,microbatches=8,vpp=2", or "order=1,1,-1,-1"); without them
    one chunk runs ``in_flight`` microbatches at a time (that many forwards, then their backwards).

    Calls: ``graphed(*args, microbatch=m, variant=None, chunk=0)`` replays the copy the schedule's slot map
    gives microbatch m, of the variant named or the one whose sample arguments have the arguments' shapes
    and dtypes (tensor arguments on the device the graphs were captured on). Outputs keep their strides and
    stay valid until that copy's next replay (as with torch.cuda.make_graphed_callables) or, once its
    backward has run, the next forward of a frame whose planned pages overlap its own (the plan shares pages
    between frames the schedules never hold at once: none with ``in_flight``); the gradients a backward
    returns are their own tensors (copied out of the graph's memory), so a leaf's .grad (parameters
    included) never is graph memory and one backward may span several microbatches or chunks.

    Sample arguments are CUDA tensors whose shapes, dtypes and requires_grad match the real arguments'
    (an argument that needs a gradient its sample did not is refused). ``microbatch=`` is the index within
    one step's schedule: ``0..in_flight-1``, or that of the first schedule given, or ``0..M-1`` after
    ``begin_step(M)``.

    ``warmup``: eager forward and backward runs of each variant on the capture stream before the captures.
    ``window_capacity``: each window's address space in bytes (0: the device's memory). ``guard``: refuse a
    forward that would overwrite memory a pending backward needs (default: GRAPHPOOL_SLOT_DEBUG set).

    One GraphedVariants per process at a time (PyTorch's pluggable allocator is process-wide): ``release()``
    gives the plug-in back (``with GraphedVariants(...) as g:`` releases on exit); one dropped without it
    keeps the plug-in, and its memory, until the next GraphedVariants is made, which collects it and takes
    the plug-in over. Errors are GraphpoolError, naming what to change (an exception from the module itself
    during a capture is raised as it came).

    Thread-safety: set-up and calls from one thread, on one stream at a time.
    """

    def __init__(self, chunks, variants: dict, *, schedules: list[str] | None = None, in_flight: int = 1,
                 warmup: int = 1, window_capacity: int = 0, guard: bool | None = None):
        if not torch.cuda.is_available():
            if torch.version.cuda is None:
                raise GraphpoolError(f"graphpool_torch: PyTorch {torch.__version__} is a build without CUDA; "
                                     "GraphedVariants captures CUDA graphs and needs a CUDA 13 build of PyTorch "
                                     "(e.g. the cu130 wheels) and a GPU")
            raise GraphpoolError(f"graphpool_torch: PyTorch {torch.__version__} (CUDA {torch.version.cuda}) sees no "
                                 "CUDA device (torch.cuda.is_available() is False); GraphedVariants captures CUDA "
                                 "graphs and needs a GPU and its driver")
        modules = list(chunks) if isinstance(chunks, (list, tuple)) else [chunks]
        if not variants:
            raise GraphpoolError("graphpool_torch: no variant given; map each variant's name to its sample arguments")
        if isinstance(schedules, (str, bytes)):
            raise GraphpoolError(f"graphpool_torch: schedules is a string ({schedules!r}); give a list of schedules, "
                                 f"e.g. schedules=[{schedules!r}]")
        in_flight = _whole_number(in_flight, "in_flight")
        warmup = _whole_number(warmup, "warmup", (0, _C_INT[1]))
        window_capacity = _whole_number(window_capacity, "window_capacity", (0, (1 << 64) - 1))
        for name in variants:
            if not isinstance(name, str):
                raise GraphpoolError(f"graphpool_torch: variant names are strings, not {type(name).__name__} {name!r}")
        self.variants = list(variants)
        self._samples = {}
        for name, samples in variants.items():
            for given in (samples if len(modules) > 1 and not isinstance(samples, torch.Tensor) else [samples]):
                if isinstance(given, torch.Tensor):  # tuple() would split it into its rows, one argument each
                    raise GraphpoolError(f"graphpool_torch: the sample arguments of variant '{name}' are a tensor, "
                                         "not a tuple of arguments; write (x,) for one argument")
            per_chunk = [tuple(s) for s in samples] if len(modules) > 1 else [tuple(samples)]
            if len(per_chunk) != len(modules):
                raise GraphpoolError(f"graphpool_torch: variant '{name}' has sample arguments for {len(per_chunk)} "
                                     f"chunk(s) but there are {len(modules)}; give one tuple per chunk")
            for chunk, args in enumerate(per_chunk):
                for i, a in enumerate(args):
                    if not isinstance(a, torch.Tensor) or not a.is_cuda:
                        raise GraphpoolError(f"graphpool_torch: sample argument {i} of variant '{name}', chunk {chunk}, is "
                                             f"{type(a).__name__ if not isinstance(a, torch.Tensor) else 'a CPU tensor'}; "
                                             "captured modules take CUDA tensors only (bind other arguments with "
                                             "functools.partial or a wrapper module)")
            self._samples[name] = per_chunk
        if schedules is None:
            if len(modules) > 1:
                raise GraphpoolError("graphpool_torch: several chunks need their pipeline schedules "
                                     "(e.g. schedules=['pp=4,rank=0,microbatches=8,vpp=2'])")
            schedules = [in_flight_schedule(in_flight)]
        self.guard = slot_debug_requested() if guard is None else guard
        self.device = torch.cuda.current_device()
        self._device = torch.device("cuda", self.device)
        self._modules = modules
        self._parameters = [[p for p in m.parameters() if p.requires_grad] for m in modules]
        self._copies = {}
        self._released = False
        # A failed capture puts the RNG state back as it was before this call: the warm-ups draw from it too.
        rng_states = torch.get_rng_state(), torch.cuda.get_rng_state(self.device)
        self._plugin = Plugin(self, self.device, self.variants, list(schedules), window_capacity)
        try:
            if self._plugin.chunks != len(modules):
                raise GraphpoolError(f"graphpool_torch: the schedules have {self._plugin.chunks} chunk(s) but "
                                     f"{len(modules)} module(s) were given")
            self._microbatches = None
            self._slots = {}
            self._claims = {}
            self._dispatch = [self._dispatch_table(c) for c in range(len(modules))]
            start = time.perf_counter()
            self._capture_all(warmup)
            self._plugin.lay_out()
            self._ranges = {(c, s): self._plugin.frame_range(c, s)
                            for c in range(self._plugin.chunks) for s in range(self._plugin.slots)}
            torch.cuda.synchronize(self.device)
            torch.cuda.empty_cache()  # the warm-ups' blocks (cuBLAS workspaces stay with their handles)
            self.capture_seconds = time.perf_counter() - start
        except BaseException:
            self.release()
            torch.set_rng_state(rng_states[0])
            torch.cuda.set_rng_state(rng_states[1], self.device)
            raise

    # -- set-up -------------------------------------------------------------------------------------

    def _dispatch_table(self, chunk: int) -> dict:
        table = {}
        for index, name in enumerate(self.variants):
            key = _signature(self._samples[name][chunk])
            table[key] = None if key in table else index  # None: ambiguous, the caller must name the variant
        return table

    def _capture_all(self, warmup: int) -> None:
        stream = _capture_stream(self.device)
        for chunk, module in enumerate(self._modules):
            for name in self.variants:
                warm_up(module, self._samples[name][chunk], self._parameters[chunk], stream, warmup)
            for slot in range(self._plugin.slots):
                for branch, name in enumerate(self.variants):
                    self._copies[chunk, slot, branch] = capture_copy(
                        module, self._samples[name][chunk], self._parameters[chunk], self._plugin, chunk, slot, branch,
                        stream)

    # -- replay -------------------------------------------------------------------------------------

    def begin_step(self, microbatches: int) -> None:
        """The schedule of `microbatches` microbatches runs next (its slot map places them)."""
        self._check_alive()  # the process's plug-in may be another GraphedVariants' by now
        microbatches = _whole_number(microbatches, "begin_step's microbatches")
        self._plugin.slot_of(microbatches, 0, 0)  # raises, naming the schedules planned, for an unknown count
        self._microbatches = microbatches

    def _chunk(self, chunk) -> int:
        chunk = _whole_number(chunk, "chunk=")
        if not 0 <= chunk < len(self._modules):
            raise GraphpoolError(f"graphpool_torch: chunk {chunk} is out of range; there are {len(self._modules)}")
        return chunk

    def slot_of(self, chunk: int, microbatch: int) -> int:
        """The copy (slot) of `chunk` that microbatch `microbatch` of the current step's schedule replays (its
        slot map: the first schedule given, or that of ``begin_step(M)``)."""
        self._check_alive()
        chunk, microbatch = self._chunk(chunk), _whole_number(microbatch, "microbatch=")
        microbatches = self._microbatches
        if microbatches is None:
            microbatches = self._microbatches = self._plugin.first_microbatches()
        key = (microbatches, chunk, microbatch)
        slot = self._slots.get(key)
        if slot is None:
            try:
                slot = self._slots[key] = self._plugin.slot_of(microbatches, chunk, microbatch)
            except GraphpoolError as e:
                raise GraphpoolError(f"{e}. microbatch= is the index within one step's schedule: the graphs were "
                                     f"captured for {self._plugin.schedules}; call begin_step(M) to replay the "
                                     "schedule of M microbatches, or capture with a larger in_flight / more schedules") from None
        return slot

    def variant_of(self, args: tuple, chunk: int = 0) -> int:
        """The index (in ``variants``) of the variant of `chunk` whose sample arguments have the shapes and dtypes
        of `args`; GraphpoolError where none or several do."""
        chunk = self._chunk(chunk)
        key = _signature(args)
        table = self._dispatch[chunk]
        if key not in table:
            known = "; ".join(f"{n}: {list(_signature(self._samples[n][chunk]))}" for n in self.variants)
            raise GraphpoolError(f"graphpool_torch: no variant of chunk {chunk} takes arguments {list(key)}; "
                                 f"the variants take {known}")
        if table[key] is None:
            raise GraphpoolError(f"graphpool_torch: several variants of chunk {chunk} take arguments {list(key)}; "
                                 "name one with variant=")
        return table[key]

    def __call__(self, *args, microbatch: int = 0, variant: str | None = None, chunk: int = 0):
        self._check_alive()
        chunk, microbatch = self._chunk(chunk), _whole_number(microbatch, "microbatch=")
        if variant is None:
            branch = self.variant_of(args, chunk)
        else:
            if variant not in self.variants:
                raise GraphpoolError(f"graphpool_torch: no variant '{variant}'; the variants are {self.variants}")
            branch = self.variants.index(variant)
            expected = _signature(self._samples[variant][chunk])
            if _signature(args) != expected:
                raise GraphpoolError(f"graphpool_torch: variant '{variant}' of chunk {chunk} takes arguments "
                                     f"{list(expected)}, got {list(_signature(args))}")
        for i, given in enumerate(args):
            if isinstance(given, torch.Tensor) and given.device != self._device:
                raise GraphpoolError(f"graphpool_torch: argument {i} is on {given.device}, but the graphs were "
                                     f"captured on {self._device}; move it there first (e.g. .to('{self._device}'))")
        slot = self.slot_of(chunk, microbatch)
        copy = self._copies[chunk, slot, branch]
        if torch.is_grad_enabled():
            for i, (static, given) in enumerate(zip(copy.static_inputs, args)):
                if given.requires_grad and not static.requires_grad:
                    raise GraphpoolError(
                        f"graphpool_torch: argument {i} requires a gradient but variant '{self.variants[branch]}' of chunk "
                        f"{chunk} was captured from a sample that did not, so its backward computes none; capture with "
                        "sample arguments whose requires_grad matches the real ones")
        claim = None
        if self.guard:
            # Every forward replay overwrites the frame (under torch.no_grad too); only one whose backward
            # will run holds it until then.
            holds = torch.is_grad_enabled() and copy.backward_graph is not None
            claim = self._claim(chunk, slot, microbatch, branch, holds)
        try:
            outputs = _Replay.apply(self, copy, claim, *args, *self._parameters[chunk])
        except BaseException:
            if claim is not None:
                self._claims.pop((chunk, slot), None)
            raise
        return outputs[0] if copy.single_output else outputs

    def _claim(self, chunk: int, slot: int, microbatch: int, branch: int, holds: bool = True):
        # A frame is held from its forward to its backward; a forward may not replay a frame that is held,
        # nor one whose planned pages overlap a held frame's (the plan shares them between frames it
        # found never alive together: a runtime off its schedule would overwrite them). A forward with no
        # backward to come (`holds` false) is checked the same way but holds nothing.
        start, size = self._ranges[chunk, slot]
        for (other_chunk, other_slot), (other_microbatch, other_branch) in self._claims.items():
            other_start, other_size = self._ranges[other_chunk, other_slot]
            same = (other_chunk, other_slot) == (chunk, slot)
            if same or (start < other_start + other_size and other_start < start + size):
                where = f"slot {slot}" if same else f"slot {slot}, whose memory the plan shares with chunk {other_chunk} slot {other_slot}"
                raise GraphpoolError(
                    f"graphpool_torch: the forward of chunk {chunk} microbatch {microbatch} ({self.variants[branch]}) "
                    f"would replay {where}; microbatch {other_microbatch} ({self.variants[other_branch]}) of chunk "
                    f"{other_chunk} still needs that memory for its pending backward; run that backward first, or "
                    "capture with the schedules this step follows")
        if not holds:
            return None
        self._claims[chunk, slot] = (microbatch, branch)
        return (chunk, slot, microbatch, branch)

    def _replay_forward(self, copy: CapturedCopy, inputs: tuple) -> None:
        for static, given in zip(copy.static_inputs, inputs):
            if static.data_ptr() != given.data_ptr():
                static.copy_(given)
        copy.forward_graph.replay()

    def _check_alive(self) -> None:
        if self._released:
            raise GraphpoolError("graphpool_torch: the graphs were released (release()); make a new GraphedVariants")

    def _replay_backward(self, copy: CapturedCopy, grads: tuple, claim) -> None:
        self._check_alive()
        if copy.backward_graph is None:
            raise GraphpoolError("graphpool_torch: this copy has no backward graph (no output needed a gradient)")
        for static, grad in zip(copy.static_grad_outputs, grads):
            if static is None:
                continue
            if grad is None:
                static.zero_()
            elif static.data_ptr() != grad.data_ptr():
                static.copy_(grad)
        copy.backward_graph.replay()
        if claim is not None:
            chunk, slot, microbatch, _ = claim
            if self._claims.get((chunk, slot), (None,))[0] == microbatch:
                del self._claims[chunk, slot]

    # -- memory -------------------------------------------------------------------------------------

    def memory(self) -> dict:
        """Bytes. physical: device memory behind every frame (the plan plus the scratch). plan_footprint,
        live_bound: the plan of the frames' persistent pages over the schedules, and the least any plan of
        them takes, both with the scratch. scratch: the block every window shares for what no later replay
        reads. windows: per (chunk, slot, variant), the bytes its segments span and the persistent part.
        torch_reserved: PyTorch's memory_reserved() (it counts every window's segments: virtual, not physical)."""
        self._check_alive()
        plugin = self._plugin
        footprint, bound, scratch = plugin.plan_bytes()
        page = plugin.page_bytes()
        windows, persistent = {}, {}
        for c in range(plugin.chunks):
            for s in range(plugin.slots):
                for b, name in enumerate(self.variants):
                    windows[c, s, name] = plugin.used_bytes(c, s, b)
                    persistent[c, s, name] = plugin.window_pages(c, s, b)[0] * page
        return {
            "physical": plugin.physical_bytes(),
            "plan_footprint": footprint,
            "live_bound": bound,
            "scratch": scratch,
            "windows": windows,
            "persistent": persistent,
            "torch_reserved": torch.cuda.memory_reserved(self.device),
        }

    @property
    def slots(self) -> int:
        """Captured copies per chunk."""
        return self._plugin.slots

    def release(self) -> int:
        """Drops every graph and frame and gives the device memory back. Returns how many segments tensors
        from the graphs (outputs, input gradients still referenced elsewhere) hold: 0 when everything went
        back now; otherwise the frames go back when the last of those tensors is freed."""
        self._released = True
        for copy in self._copies.values():
            copy.release()
        self._copies.clear()
        self._claims = {}
        self._samples = {}  # the sample arguments were for the captures
        gc.collect()
        torch.cuda.synchronize(self.device)
        plugin = getattr(self, "_plugin", None)
        return plugin.destroy() if plugin is not None else 0

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.release()
