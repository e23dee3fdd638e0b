"""Capturing one (chunk, slot, branch) copy of a module's forward and backward into its frame.

Every copy has its own torch.cuda.MemPool over graphpool's allocator, selected to the copy's
(chunk, slot, branch) window while it captures: the copy's static inputs, saved tensors, outputs and
gradients all live in its frame, whose pages the frame's other branches share.
"""

from __future__ import annotations

import gc
import traceback
from dataclasses import dataclass, field

import torch

from ._plugin import Plugin, pluggable_allocator


@dataclass
class CapturedCopy:
    """The graphs and static tensors of one (chunk, slot, branch)."""

    pool: object
    forward_graph: object
    backward_graph: object
    static_inputs: tuple
    static_outputs: tuple
    single_output: bool
    static_grad_outputs: tuple
    static_grad_inputs: tuple  # one per differentiable input (user inputs, then parameters); None when unused
    output_requires_grad: tuple  # per output: whether the module's output needed a gradient
    differentiable: tuple = field(default_factory=tuple)  # indices into (inputs + parameters) that need grad

    def release(self) -> None:
        self.static_inputs = self.static_outputs = self.static_grad_outputs = self.static_grad_inputs = ()
        for graph in (self.forward_graph, self.backward_graph):
            if graph is not None:
                graph.reset()
        self.forward_graph = self.backward_graph = None
        self.pool = None


class _SavedState:
    """What a capture may change in PyTorch, to put back when it fails."""

    def __init__(self, parameters: list, device: int):
        self.gc_enabled = gc.isenabled()
        self.grads = [p.grad for p in parameters]
        self.parameters = parameters
        self.cpu_rng = torch.get_rng_state()
        self.cuda_rng = torch.cuda.get_rng_state(device)
        self.device = device

    def restore(self) -> None:
        for p, grad in zip(self.parameters, self.grads):
            p.grad = grad
        _end_generator_capture(self.device)
        torch.set_rng_state(self.cpu_rng)
        torch.cuda.set_rng_state(self.cuda_rng, self.device)
        self.restore_gc()

    def restore_gc(self) -> None:
        if self.gc_enabled:
            gc.enable()
        else:
            gc.disable()


def _end_allocating_to_pool(device: int, pool) -> None:
    # CUDAGraph.capture_end skips this when cudaStreamEndCapture fails (an invalidated capture), which
    # would leave the caching allocator sending the stream's allocations to the dead pool.
    end = getattr(torch._C, "_cuda_endAllocateToPool", None)
    if end is None:
        return
    try:
        end(device, pool.id)
    except RuntimeError:
        pass  # capture_end had done it


def _end_generator_capture(device: int) -> None:
    # A capture whose cudaStreamEndCapture fails (an illegal call invalidated it) leaves the CUDA
    # generator believing it is still capturing ("Offset increment outside graph capture"): a capture
    # that ends normally runs the generator's capture epilogue and clears that.
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        graph = torch.cuda.CUDAGraph()
        graph.capture_begin()
        scratch = torch.zeros(1, device=device)
        graph.capture_end()
    del scratch
    graph.reset()


def _capture(graph, pool, device: int, body):
    graph.capture_begin(pool=pool.id)
    try:
        result = body()
    except BaseException:
        try:
            graph.capture_end()
        except Exception:
            pass
        _end_allocating_to_pool(device, pool)
        raise
    try:
        graph.capture_end()
    except BaseException:
        _end_allocating_to_pool(device, pool)
        raise
    return result


def live_blocks():
    """(address, bytes) of every block PyTorch's caching allocator holds now, in every pool."""
    for segment in torch.cuda.memory_snapshot():
        address = segment["address"]
        for block in segment["blocks"]:
            if block["state"] != "inactive":
                yield block.get("address", address), block["size"]
            address += block["size"]


def _flatten(outputs) -> tuple[tuple, bool]:
    if isinstance(outputs, torch.Tensor):
        return (outputs,), True
    if isinstance(outputs, (tuple, list)) and all(isinstance(o, torch.Tensor) for o in outputs):
        return tuple(outputs), False
    raise TypeError("graphpool_torch: a captured module must return a tensor or a tuple/list of tensors, not "
                    + type(outputs).__name__)


def warm_up(module, sample_args: tuple, parameters: list, stream, iterations: int) -> None:
    """Runs forward and backward eagerly on the capture stream, so per-stream state (cuBLAS/cuBLASLt
    workspaces, compiled kernels, autotuning) is made outside any aliased frame. Leaves .grad as it was."""
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(iterations):
            inputs = tuple(a.detach().clone().requires_grad_(a.requires_grad) for a in sample_args)
            outputs, _ = _flatten(module(*inputs))
            wanted = [t for t in list(inputs) + parameters if t.requires_grad]
            needing = [o for o in outputs if o.requires_grad]
            if needing and wanted:
                torch.autograd.grad(needing, wanted, [torch.ones_like(o) for o in needing], allow_unused=True)
            del inputs, outputs, needing, wanted
    torch.cuda.current_stream().wait_stream(stream)


def capture_copy(module, sample_args: tuple, parameters: list, plugin: Plugin, chunk: int, slot: int, branch: int,
                 stream) -> CapturedCopy:
    """Captures module's forward and backward for (chunk, slot, branch). When anything fails, PyTorch's
    state (gc, RNG, .grad, the allocator's routing) is put back, the copy's segments are given back
    (the branch can be captured again) and the error is raised as it came."""
    device = plugin.device
    saved = _SavedState(parameters, device)
    pool = torch.cuda.MemPool(pluggable_allocator().allocator())
    forward_graph = torch.cuda.CUDAGraph()
    backward_graph = torch.cuda.CUDAGraph()
    static_inputs = static_outputs = grad_outputs = grads = outputs = None
    try:
        with plugin.selected(chunk, slot, branch):
            torch.cuda.synchronize(device)
            gc.collect()
            gc.disable()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                with torch.cuda.use_mem_pool(pool):
                    static_inputs = tuple(torch.empty_like(a).requires_grad_(a.requires_grad) for a in sample_args)
                outputs = _capture(forward_graph, pool, device, lambda: module(*static_inputs))
                outputs, single = _flatten(outputs)
                with torch.cuda.use_mem_pool(pool):
                    grad_outputs = tuple(torch.empty_like(o) if o.requires_grad else None for o in outputs)
                # What the copy holds now lives from its forward replay to its backward: static inputs,
                # saved tensors, outputs, the gradients' inputs. The rest of its pages are scratch.
                plugin.add_persistent(chunk, slot, branch, live_blocks())
                candidates = list(static_inputs) + parameters
                differentiable = tuple(i for i, t in enumerate(candidates) if t.requires_grad)
                needing = [o for o in outputs if o.requires_grad]
                if needing and differentiable:
                    grads = _capture(backward_graph, pool, device, lambda: torch.autograd.grad(
                        needing, [candidates[i] for i in differentiable],
                        [g for g in grad_outputs if g is not None], allow_unused=True))
                else:
                    grads = ()
                    backward_graph = None
            torch.cuda.current_stream().wait_stream(stream)
            static_outputs = tuple(o.detach() for o in outputs)
            output_requires_grad = tuple(o.requires_grad for o in outputs)
            del outputs
        saved.restore_gc()
        return CapturedCopy(pool, forward_graph, backward_graph, static_inputs, static_outputs, single,
                            grad_outputs, tuple(None if g is None else g.detach() for g in grads),
                            output_requires_grad, differentiable)
    except BaseException as failure:
        # Drop every reference to the copy's tensors, graphs and pool (the traceback's frames hold the
        # module's intermediates), so PyTorch frees the copy's segments and the branch can be captured again.
        static_inputs = static_outputs = grad_outputs = grads = outputs = None
        forward_graph = backward_graph = pool = None
        traceback.clear_frames(failure.__traceback__)
        torch.cuda.current_stream().wait_stream(stream)
        saved.restore()
        gc.collect()
        raise
