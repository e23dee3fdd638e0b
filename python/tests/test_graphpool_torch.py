"""graphpool_torch on a GPU: dispatch, bitwise equality with eager, strides, gradient accumulation with
microbatches in flight, the guard, a failed capture's clean-up, and teardown.

Skipped (not passed) where PyTorch or a CUDA device is missing."""

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: graphpool_torch's tests need one", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import graphpool_torch  # noqa: E402
from graphpool_torch import GraphedVariants, GraphpoolError  # noqa: E402

HIDDEN = 256
TOKENS = {"cp1": 512, "cp2": 256, "cp4": 128, "cp8": 64}


class Block(torch.nn.Module):
    """A GEMM-heavy residual MLP (cuBLAS workspaces are made on the capture stream by the warm-up)."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(HIDDEN)
        self.up = torch.nn.Linear(HIDDEN, 4 * HIDDEN)
        self.down = torch.nn.Linear(4 * HIDDEN, HIDDEN)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


@pytest.fixture(autouse=True)
def deterministic():
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    yield
    torch.use_deterministic_algorithms(False)
    gc.collect()
    torch.cuda.synchronize()


def samples(requires_grad=True, names=None):
    return {name: (torch.randn(tokens, HIDDEN, device="cuda", requires_grad=requires_grad),)
            for name, tokens in TOKENS.items() if names is None or name in names}


def grads_of(module):
    return [None if p.grad is None else p.grad.clone() for p in module.parameters()]


def clear_grads(module):
    for p in module.parameters():
        p.grad = None


def test_variants_dispatch_by_shape_and_by_name():
    block = Block().cuda()
    graphed = GraphedVariants(block, samples())
    try:
        for name, tokens in TOKENS.items():
            x = torch.randn(tokens, HIDDEN, device="cuda")
            assert torch.equal(graphed(x), block(x))
            assert torch.equal(graphed(x, variant=name), block(x))
        with pytest.raises(GraphpoolError, match="no variant of chunk 0 takes arguments"):
            graphed(torch.randn(100, HIDDEN, device="cuda"))
        with pytest.raises(GraphpoolError, match="variant 'cp2' of chunk 0 takes arguments"):
            graphed(torch.randn(512, HIDDEN, device="cuda"), variant="cp2")
        with pytest.raises(GraphpoolError, match="no variant 'cp3'"):
            graphed(torch.randn(512, HIDDEN, device="cuda"), variant="cp3")
    finally:
        graphed.release()


def test_an_argument_needing_a_gradient_its_sample_did_not_is_refused():
    block = Block().cuda()
    with GraphedVariants(block, samples(requires_grad=False)) as graphed:
        x = torch.randn(TOKENS["cp2"], HIDDEN, device="cuda", requires_grad=True)
        with pytest.raises(GraphpoolError, match="argument 0 requires a gradient but variant 'cp2'"):
            graphed(x)
        with pytest.raises(GraphpoolError, match=r"microbatch 1 is out of range.*call begin_step\(M\)"):
            graphed(x.detach(), microbatch=1)
        with pytest.raises(GraphpoolError, match=r"microbatch= must be an int, not float 0\.0"):
            graphed(x.detach(), microbatch=0.0)
        with pytest.raises(GraphpoolError, match=r"chunk= must be an int, not str '0'"):
            graphed(x.detach(), chunk="0")
        with pytest.raises(GraphpoolError, match=r"begin_step's microbatches must be an int, not float 1\.0"):
            graphed.begin_step(1.0)


def test_same_shapes_need_a_variant_name():
    block = Block().cuda()
    x = torch.randn(64, HIDDEN, device="cuda")
    graphed = GraphedVariants(block, {"a": (x,), "b": (x,)})
    try:
        with pytest.raises(GraphpoolError, match="name one with variant="):
            graphed(x)
        assert torch.equal(graphed(x, variant="b"), block(x))
    finally:
        graphed.release()


@pytest.mark.parametrize("order", [[0, 1, 2, 3], [3, 2, 1, 0], [1, 0, 3, 2]])
def test_outputs_and_gradients_are_bitwise_equal_to_eager(order):
    block = Block().cuda()
    graphed = GraphedVariants(block, samples())
    names = list(TOKENS)
    try:
        for step in range(2):
            for index in order:
                tokens = TOKENS[names[index]]
                x = torch.randn(tokens, HIDDEN, device="cuda", requires_grad=True)
                g = torch.randn(tokens, HIDDEN, device="cuda")
                clear_grads(block)
                eager = block(x)
                eager.backward(g)
                eager_x_grad, eager_grads = x.grad.clone(), grads_of(block)
                x.grad = None
                clear_grads(block)
                out = graphed(x)
                out.backward(g)
                assert torch.equal(out, eager), (step, names[index])
                assert torch.equal(x.grad, eager_x_grad), (step, names[index])
                for ours, theirs in zip(grads_of(block), eager_grads):
                    assert torch.equal(ours, theirs), (step, names[index])
    finally:
        graphed.release()


class Strided(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x):
        y = self.linear(x)
        return y.t(), y[:, :1].expand(-1, 8), y


def test_outputs_keep_their_strides():
    module = Strided().cuda()
    x = torch.randn(32, HIDDEN, device="cuda", requires_grad=True)
    graphed = GraphedVariants(module, {"only": (x,)})
    try:
        eager = module(x)
        ours = graphed(x)
        for a, b in zip(ours, eager):
            assert a.shape == b.shape and a.stride() == b.stride()
            assert torch.equal(a, b)
        sum(o.float().sum() for o in ours).backward()
    finally:
        graphed.release()


def test_gradients_accumulate_over_two_microbatches_in_flight_on_different_variants():
    block = Block().cuda()
    graphed = GraphedVariants(block, samples(), in_flight=2)
    assert graphed.slots == 2
    try:
        for first, second in [("cp1", "cp8"), ("cp4", "cp4"), ("cp2", "cp1")]:
            xs = [torch.randn(TOKENS[n], HIDDEN, device="cuda") for n in (first, second)]
            clear_grads(block)
            for x in xs:
                block(x).square().sum().backward()
            eager = grads_of(block)
            clear_grads(block)
            y0 = graphed(xs[0], microbatch=0)  # F F B B: both frames alive at once
            y1 = graphed(xs[1], microbatch=1)
            y0.square().sum().backward()
            y1.square().sum().backward()
            for ours, theirs in zip(grads_of(block), eager):
                assert torch.equal(ours, theirs), (first, second)
            # The gradients are the parameters' own tensors, not graph memory a later replay overwrites.
            kept = grads_of(block)
            graphed(xs[1], microbatch=0).sum().backward()
            graphed(xs[0], microbatch=1).sum().backward()
            for p, before in zip(block.parameters(), kept):
                assert p.grad.data_ptr() != 0 and not torch.equal(p.grad, before)
        memory = graphed.memory()
        assert memory["physical"] <= 1.02 * memory["live_bound"] + (4 << 20)
        assert memory["plan_footprint"] == memory["live_bound"]
    finally:
        graphed.release()


@pytest.mark.parametrize("pair", [("cp4", "cp4"), ("cp1", "cp8")])
def test_one_backward_over_two_microbatches_in_flight_accumulates_right(pair):
    # Both backward graphs replay before autograd adds a parameter's two gradients into its .grad (set
    # already): the first one must not be the graph's scratch, which the second replay overwrites.
    block = Block().cuda()
    with GraphedVariants(block, samples(), in_flight=2) as graphed:
        xs = [torch.randn(TOKENS[n], HIDDEN, device="cuda") for n in pair]
        start = [torch.randn_like(p) for p in block.parameters()]
        for p, g in zip(block.parameters(), start):
            p.grad = g.clone()
        (block(xs[0]).square().sum() + block(xs[1]).square().sum()).backward()
        eager = grads_of(block)
        for p, g in zip(block.parameters(), start):
            p.grad = g.clone()
        y0, y1 = graphed(xs[0], microbatch=0), graphed(xs[1], microbatch=1)
        (y0.square().sum() + y1.square().sum()).backward()
        for ours, theirs in zip(grads_of(block), eager):
            assert torch.equal(ours, theirs), pair


def test_one_backward_through_a_two_chunk_pipeline_is_right():
    # Chunk 1's backward of microbatch 0 replays before chunk 0's backward of microbatch 1 reads the
    # gradient chunk 1 returned for microbatch 1.
    chunks = [Block().cuda(), Block().cuda()]
    variants = {n: [(torch.randn(t, HIDDEN, device="cuda"),), (torch.randn(t, HIDDEN, device="cuda", requires_grad=True),)]
                for n, t in list(TOKENS.items())[:2]}
    with GraphedVariants(chunks, variants, schedules=["order=1,1,2,2,-2,-2,-1,-1"]) as graphed:
        xs = [torch.randn(TOKENS["cp2"], HIDDEN, device="cuda") for _ in range(2)]
        eager = [chunks[1](chunks[0](x)) for x in xs]
        (eager[0].sum() + eager[1].sum()).backward()
        expected = [grads_of(c) for c in chunks]
        for c in chunks:
            clear_grads(c)
        hidden = [graphed(x, microbatch=m, chunk=0) for m, x in enumerate(xs)]
        outs = [graphed(h, microbatch=m, chunk=1) for m, h in enumerate(hidden)]
        (outs[0].sum() + outs[1].sum()).backward()
        for c, grads in zip(chunks, expected):
            for ours, theirs in zip(grads_of(c), grads):
                assert torch.equal(ours, theirs)


def test_the_guard_catches_a_replay_over_a_pending_backward(monkeypatch):
    monkeypatch.setenv("GRAPHPOOL_SLOT_DEBUG", "1")
    block = Block().cuda()
    graphed = GraphedVariants(block, samples())
    assert graphed.guard
    try:
        x = torch.randn(TOKENS["cp2"], HIDDEN, device="cuda")
        pending = graphed(x, microbatch=0)
        with pytest.raises(GraphpoolError, match=r"microbatch 0 \(cp1\) would replay slot 0; microbatch 0 \(cp2\) "
                                                 r"of chunk 0 still needs that memory for its pending backward"):
            graphed(torch.randn(TOKENS["cp1"], HIDDEN, device="cuda"), microbatch=0)
        with torch.no_grad():  # a forward without a backward to come overwrites the frame all the same
            with pytest.raises(GraphpoolError, match=r"microbatch 0 \(cp1\) would replay slot 0; microbatch 0 \(cp2\)"):
                graphed(torch.randn(TOKENS["cp1"], HIDDEN, device="cuda"), microbatch=0)
        pending.sum().backward()
        with torch.no_grad():
            graphed(x)  # nothing pending: allowed, and it holds nothing
        graphed(x).sum().backward()  # after the backward the slot is free again
    finally:
        graphed.release()


# A plan that shares a frame's pages with another's: "order=1,2,-2,1,2,-2,-1,-1" plans chunk 0 slot 1 and
# chunk 1 slot 0 at one offset (never alive together in that order).
SHARING = "order=1,2,-2,1,2,-2,-1,-1"


def sharing_pipeline():
    chunks = [Block().cuda(), Block().cuda()]
    variants = {n: [(torch.randn(TOKENS[n], HIDDEN, device="cuda"),),
                    (torch.randn(TOKENS[n], HIDDEN, device="cuda", requires_grad=True),)] for n in ("cp4", "cp8")}
    return chunks, variants


def assert_shared(graphed):
    (a, n), (b, m) = graphed._ranges[0, 1], graphed._ranges[1, 0]
    assert a < b + m and b < a + n, "the plan shares no pages between chunk 0 slot 1 and chunk 1 slot 0"


# Guard: "... or a frame whose planned pages overlap such a copy's, raises, naming both microbatches and variants".
def test_the_guard_names_a_frame_whose_planned_pages_a_pending_backward_holds():
    chunks, variants = sharing_pipeline()
    with GraphedVariants(chunks, variants, schedules=[SHARING], guard=True) as graphed:
        assert_shared(graphed)
        xs = [torch.randn(TOKENS["cp4"], HIDDEN, device="cuda"), torch.randn(TOKENS["cp8"], HIDDEN, device="cuda")]
        h0 = graphed(xs[0], microbatch=0, chunk=0)
        i0 = h0.detach().requires_grad_()
        o0 = graphed(i0, microbatch=0, chunk=1)
        with pytest.raises(GraphpoolError, match=r"the forward of chunk 0 microbatch 1 \(cp8\) would replay slot 1, whose "
                                                 r"memory the plan shares with chunk 1 slot 0; microbatch 0 \(cp4\) of "
                                                 r"chunk 1 still needs that memory for its pending backward"):
            graphed(xs[1], microbatch=1, chunk=0)
        o0.sum().backward()  # the order's -2: chunk 1's backward of microbatch 0 frees its frame
        h1 = graphed(xs[1], microbatch=1, chunk=0)
        i1 = h1.detach().requires_grad_()
        graphed(i1, microbatch=1, chunk=1).sum().backward()
        h0.backward(i0.grad)
        h1.backward(i1.grad)


class FailsUnderCapture(torch.nn.Module):
    """Runs eagerly (the warm-up) but fails inside a capture: raising, or making an illegal call."""

    def __init__(self, how):
        super().__init__()
        self.block = Block()
        self.how = how

    def forward(self, x):
        y = self.block(x)
        if torch.cuda.is_current_stream_capturing() and x.shape[0] == TOKENS["cp4"]:
            if self.how == "raise":
                raise ValueError("planted failure")
            if self.how == "illegal":
                y = y * y.sum().item()  # a synchronizing call: illegal in a capture
        return y


# An illegal call inside a capture is a CUDA API error on purpose: memcheck runs those tests apart, with
# API errors not reported (scripts/torch_check.sh).
FAILURES = ["raise", pytest.param("illegal", marks=pytest.mark.planted_cuda_error)]


@pytest.mark.parametrize("how", FAILURES)
def test_a_failed_capture_leaves_pytorch_as_it_was(how):
    module = FailsUnderCapture(how).cuda()
    marker = [torch.full_like(p, 7.0) for p in module.parameters()]
    for p, g in zip(module.parameters(), marker):
        p.grad = g
    inputs = samples()
    gc_was = gc.isenabled()
    cpu_rng, cuda_rng = torch.get_rng_state(), torch.cuda.get_rng_state()
    with pytest.raises(Exception) as failure:
        GraphedVariants(module, inputs)
    if how == "raise":
        assert failure.type is ValueError and "planted failure" in str(failure.value)
    else:
        assert "operation not permitted when stream is capturing" in str(failure.value)
    assert gc.isenabled() == gc_was
    assert all(p.grad is g for p, g in zip(module.parameters(), marker))
    assert torch.equal(torch.get_rng_state(), cpu_rng) and torch.equal(torch.cuda.get_rng_state(), cuda_rng)
    torch.randn(4, device="cuda")  # the generator is out of its capture state
    # The stream and the allocator work as before, and the same branches capture again.
    module.how = "none"
    graphed = GraphedVariants(module, samples())
    try:
        x = torch.randn(TOKENS["cp4"], HIDDEN, device="cuda")
        assert torch.equal(graphed(x), module(x))
    finally:
        graphed.release()


class DropsAndFails(FailsUnderCapture):
    """Draws from the CUDA generator in every run (the warm-ups too), and raises inside cp4's capture."""

    def forward(self, x):
        return F.dropout(super().forward(x), 0.1, training=True)


def test_a_failed_capture_puts_back_the_rng_state_of_before_the_call():
    module = DropsAndFails("raise").cuda()
    inputs = samples()
    cpu_rng, cuda_rng = torch.get_rng_state(), torch.cuda.get_rng_state()
    with pytest.raises(ValueError, match="planted failure"):
        GraphedVariants(module, inputs)
    assert torch.equal(torch.get_rng_state(), cpu_rng) and torch.equal(torch.cuda.get_rng_state(), cuda_rng)
    torch.rand(4, device="cuda")
    module.how = "none"
    GraphedVariants(module, inputs).release()


# Tests that count memory going back. compute-sanitizer keeps the Python frames it records for its
# backtraces alive, and the tensors they refer to with them: the memcheck run leaves these tests out, the
# plain run (CTest's torch_tests) makes them.
@pytest.mark.counts_memory
@pytest.mark.parametrize("how", FAILURES)
def test_a_failed_capture_gives_its_memory_back(how):
    module = FailsUnderCapture(how).cuda()
    inputs = samples()
    gc.collect()  # what earlier tests left in reference cycles is not this test's to count
    torch.cuda.synchronize()
    allocated = torch.cuda.memory_allocated()
    # The planted failure, not an earlier one (a plug-in left by another test) that captured nothing.
    with pytest.raises(Exception, match="planted failure|operation not permitted when stream is capturing"):
        GraphedVariants(module, inputs)
    gc.collect()
    assert torch.cuda.memory_allocated() == allocated


@pytest.mark.counts_memory
def test_release_gives_the_memory_back():
    block = Block().cuda()
    # The first use of the capture stream makes cuBLAS workspaces; with no tensor kept, everything goes back.
    assert GraphedVariants(block, samples(), in_flight=2).release() == 0
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    free_before = torch.cuda.mem_get_info()[0]
    allocated_before = torch.cuda.memory_allocated()
    graphed = GraphedVariants(block, samples(), in_flight=2)
    memory = graphed.memory()
    assert memory["physical"] > 0
    assert free_before - torch.cuda.mem_get_info()[0] >= memory["physical"]
    kept = graphed(torch.randn(TOKENS["cp1"], HIDDEN, device="cuda"))
    assert graphed.release() > 0  # an output still refers to a frame: its memory goes back with it
    assert free_before - torch.cuda.mem_get_info()[0] >= memory["physical"]
    del kept
    gc.collect()
    torch.cuda.empty_cache()
    assert torch.cuda.memory_allocated() == allocated_before
    assert abs(torch.cuda.mem_get_info()[0] - free_before) <= (2 << 20)


def test_one_plugin_per_process_and_clear_errors():
    block = Block().cuda()
    first = GraphedVariants(block, samples())
    try:
        with pytest.raises(GraphpoolError, match=r"another GraphedVariants holds the process's plug-in; call its release\(\)"):
            GraphedVariants(block, samples())
    finally:
        first.release()
    for call in (lambda: first(torch.randn(TOKENS["cp1"], HIDDEN, device="cuda")), lambda: first.begin_step(1),
                 lambda: first.slot_of(0, 0), first.memory):
        with pytest.raises(GraphpoolError, match="the graphs were released"):
            call()
    with pytest.raises(GraphpoolError, match="sample argument 0 of variant 'a', chunk 0, is int"):
        GraphedVariants(block, {"a": (3,)})
    with pytest.raises(GraphpoolError, match="several chunks need their pipeline schedules"):
        GraphedVariants([block, block], {"a": [(torch.randn(8, HIDDEN, device="cuda"),)] * 2})
    with pytest.raises(GraphpoolError, match="the schedules have 2 chunk"):
        GraphedVariants(block, samples(), schedules=["pp=2,rank=0,microbatches=4,vpp=2"])
    assert graphpool_torch.library_path().is_file()
    # The plug-in loads the file ctypes loaded, by its absolute path, wherever the process goes next.
    from graphpool_torch import _native
    loaded = _native.library_file()
    assert os.path.isabs(loaded) and os.path.samefile(loaded, graphpool_torch.library_path())


@pytest.mark.counts_memory
def test_one_dropped_without_release_is_taken_over_by_the_next():
    block = Block().cuda()
    # The first use of the capture stream makes cuBLAS workspaces; with no tensor kept, everything goes back.
    assert GraphedVariants(block, samples()).release() == 0
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    free_before, allocated_before = torch.cuda.mem_get_info()[0], torch.cuda.memory_allocated()
    dropped = GraphedVariants(block, samples())
    dropped(torch.randn(TOKENS["cp1"], HIDDEN, device="cuda"))
    del dropped  # no release(): its plug-in stays until the next one is made
    with GraphedVariants(block, samples()) as again:
        again(torch.randn(TOKENS["cp2"], HIDDEN, device="cuda"))
        # One that is still referenced is never taken over.
        with pytest.raises(GraphpoolError, match="another GraphedVariants holds the process's plug-in"):
            GraphedVariants(block, samples())
    gc.collect()
    torch.cuda.empty_cache()
    assert torch.cuda.memory_allocated() == allocated_before
    assert abs(torch.cuda.mem_get_info()[0] - free_before) <= (2 << 20)


def test_arguments_ctypes_would_misread_are_refused():
    block = Block().cuda()
    x = torch.randn(8, HIDDEN, device="cuda")
    # A tensor where a tuple belongs: tuple(x) would give its 8 rows as 8 arguments.
    with pytest.raises(GraphpoolError, match=r"sample arguments of variant 'a' are a tensor.*\(x,\)"):
        GraphedVariants(block, {"a": x})
    with pytest.raises(GraphpoolError, match=r"sample arguments of variant 'a' are a tensor"):
        GraphedVariants([block, block], {"a": [x, x]}, schedules=["order=1,2,-2,-1"])
    # A string where a list belongs: list() would give one schedule per character.
    with pytest.raises(GraphpoolError, match=r"schedules is a string \('order=1,-1'\); give a list"):
        GraphedVariants(block, {"a": (x,)}, schedules="order=1,-1")
    with pytest.raises(GraphpoolError, match="variant names are strings, not int 1"):
        GraphedVariants(block, {1: (x,)})
    with pytest.raises(GraphpoolError, match="in_flight must be an int, not float 2.0"):
        GraphedVariants(block, {"a": (x,)}, in_flight=2.0)
    with pytest.raises(GraphpoolError, match="window_capacity is -1, out of range"):
        GraphedVariants(block, {"a": (x,)}, window_capacity=-1)
    with pytest.raises(GraphpoolError, match="warmup is -1, out of range"):
        GraphedVariants(block, {"a": (x,)}, warmup=-1)
    # Indices past a C int: ctypes would pass 2**32 as 0 and replay microbatch 0's slot.
    with GraphedVariants(block, {"a": (x,)}, in_flight=2) as graphed:
        with pytest.raises(GraphpoolError, match=r"microbatch= is 4294967296, out of range"):
            graphed(x, microbatch=1 << 32)
        with pytest.raises(GraphpoolError, match=r"begin_step's microbatches is 4294967298, out of range"):
            graphed.begin_step((1 << 32) + 2)
        # An argument off the graphs' device would be copied in without a word: refused, naming both.
        with pytest.raises(GraphpoolError, match=r"argument 0 is on cpu, but the graphs were captured on cuda:\d"):
            graphed(x.cpu(), microbatch=0)
        # A chunk index Python would read from the end is refused, whichever call is given it.
        for call in (lambda: graphed.variant_of((x,), chunk=-1), lambda: graphed.slot_of(-1, 0),
                     lambda: graphed(x, chunk=1)):
            with pytest.raises(GraphpoolError, match=r"chunk -?1 is out of range; there are 1"):
                call()


def test_a_pipeline_of_two_chunks_follows_the_schedule_slot_map():
    chunks = [Block().cuda(), Block().cuda()]
    variants = {n: [(torch.randn(t, HIDDEN, device="cuda"),), (torch.randn(t, HIDDEN, device="cuda", requires_grad=True),)]
                for n, t in list(TOKENS.items())[:2]}
    graphed = GraphedVariants(chunks, variants, schedules=["order=1,1,2,2,-2,-2,-1,-1"])
    try:
        assert graphed.slots == 2
        xs = [torch.randn(TOKENS["cp1"], HIDDEN, device="cuda"), torch.randn(TOKENS["cp2"], HIDDEN, device="cuda")]
        eager = [chunks[1](chunks[0](x)) for x in xs]
        for c in chunks:
            clear_grads(c)
        for e in eager:
            e.sum().backward()
        expected = [grads_of(c) for c in chunks]
        for c in chunks:
            clear_grads(c)
        hidden = [graphed(x, microbatch=m, chunk=0) for m, x in enumerate(xs)]
        outs = [graphed(h, microbatch=m, chunk=1) for m, h in enumerate(hidden)]
        for out, e in zip(outs, eager):
            assert torch.equal(out, e)
        for out in outs:
            out.sum().backward()
        for c, grads in zip(chunks, expected):
            for ours, theirs in zip(grads_of(c), grads):
                assert torch.equal(ours, theirs)
    finally:
        graphed.release()


@pytest.mark.parametrize("mode", ["default", "max-autotune-no-cudagraphs"])
def test_a_compiled_module_is_captured_with_its_fusions(mode):
    block = Block().cuda()
    compiled = torch.compile(block, mode=mode)  # inductor without its own CUDA graphs
    small = {n: s for n, s in samples().items() if n in ("cp4", "cp8")}
    graphed = GraphedVariants(compiled, small)
    try:
        for name, (sample,) in small.items():
            x = torch.randn_like(sample)
            assert torch.equal(graphed(x), compiled(x))
    finally:
        graphed.release()


def test_begin_step_and_microbatch_indices_follow_the_schedules():
    block = Block().cuda()
    one_f_one_b = "order=1,1,-1,1,-1,1,-1,-1"  # 4 microbatches, 2 in flight
    one_at_a_time = "order=1,-1,1,-1"  # 2 microbatches
    names = ["cp4", "cp8", "cp8", "cp4"]
    with GraphedVariants(block, samples(names=("cp4", "cp8")), schedules=[one_f_one_b, one_at_a_time],
                         guard=True) as graphed:
        assert graphed.slots == 2
        xs = [torch.randn(TOKENS[n], HIDDEN, device="cuda") for n in names]
        eager_outputs = []
        for x in xs:
            y = block(x)
            eager_outputs.append(y.detach().clone())
            y.square().sum().backward()
        eager = grads_of(block)
        clear_grads(block)
        outputs = {}
        for kind, m in [("F", 0), ("F", 1), ("B", 0), ("F", 2), ("B", 1), ("F", 3), ("B", 2), ("B", 3)]:
            if kind == "F":
                outputs[m] = graphed(xs[m], microbatch=m)  # the first schedule's 4 microbatches, no begin_step
                assert torch.equal(outputs[m], eager_outputs[m]), m
            else:
                outputs.pop(m).square().sum().backward()
        for ours, theirs in zip(grads_of(block), eager):
            assert torch.equal(ours, theirs)
        x = xs[0]
        with pytest.raises(GraphpoolError, match=r"microbatch 4 is out of range for a schedule of 4 microbatch"):
            graphed(x, microbatch=4)
        with pytest.raises(GraphpoolError, match=r"microbatch -1 is out of range"):
            graphed(x, microbatch=-1)
        graphed.begin_step(2)
        for m in range(2):
            graphed(xs[m], microbatch=m).sum().backward()
        with pytest.raises(GraphpoolError, match=r"microbatch 2 is out of range for a schedule of 2 microbatch"):
            graphed(x, microbatch=2)
        with pytest.raises(GraphpoolError, match=r"no slot map for a schedule of 3 microbatch"):
            graphed.begin_step(3)
        graphed.begin_step(4)
        graphed(xs[3], microbatch=3).sum().backward()


def test_memory_reports_every_documented_key_consistently():
    block = Block().cuda()
    with GraphedVariants(block, samples(), in_flight=2) as graphed:
        memory = graphed.memory()
        assert {"physical", "plan_footprint", "live_bound", "scratch", "windows", "persistent",
                "torch_reserved"} <= set(memory)
        copies = {(0, s, n) for s in range(graphed.slots) for n in TOKENS}
        assert set(memory["windows"]) == copies and set(memory["persistent"]) == copies
        assert memory["physical"] == memory["plan_footprint"]
        assert 0 < memory["scratch"] <= memory["physical"]
        assert 0 < memory["live_bound"] <= memory["plan_footprint"]
        assert all(memory["windows"][k] > 0 and memory["persistent"][k] > 0 for k in copies)
        assert memory["torch_reserved"] == torch.cuda.memory_reserved()


class Scale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, 16))

    def forward(self, x):
        return x * self.weight.to(x.dtype)


def test_variants_dispatch_by_dtype_and_cpu_samples_are_refused():
    module = Scale().cuda()
    with pytest.raises(GraphpoolError, match="sample argument 0 of variant 'cpu', chunk 0, is a CPU tensor"):
        GraphedVariants(module, {"cpu": (torch.randn(8, 16),)})
    variants = {"f32": (torch.randn(8, 16, device="cuda"),),
                "bf16": (torch.randn(8, 16, device="cuda", dtype=torch.bfloat16),)}
    with GraphedVariants(module, variants) as graphed:
        for name, (sample,) in variants.items():
            x = torch.randn_like(sample)
            y = graphed(x)
            assert y.dtype == sample.dtype and torch.equal(y, module(x)), name
        with pytest.raises(GraphpoolError, match="no variant of chunk 0 takes arguments"):
            graphed(torch.randn(8, 16, device="cuda", dtype=torch.float16))
        with pytest.raises(GraphpoolError, match="no variant of chunk 0 takes arguments"):
            graphed(torch.randn(8, 16, device="cuda"), torch.randn(8, 16, device="cuda"))


# A child process that exits with graph memory still held: without release(), or after a release() that
# left a plug-in holding an output's segment. PyTorch may free segments while the process exits.
EXITS_HOLDING = """
import torch
from graphpool_torch import GraphedVariants
module = torch.nn.Linear(64, 64).cuda()
graphed = GraphedVariants(module, {{"a": (torch.randn(32, 64, device="cuda", requires_grad=True),),
                                    "b": (torch.randn(16, 64, device="cuda", requires_grad=True),)}})
kept = graphed(torch.randn(32, 64, device="cuda"))
if {release}:
    assert graphed.release() > 0
torch.cuda.synchronize()
print("exiting with an output alive")
"""


@pytest.mark.parametrize("release", [False, True])
def test_the_process_exits_cleanly_with_graph_memory_held(release):
    package = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH")) if p)}
    child = subprocess.run([sys.executable, "-c", EXITS_HOLDING.format(release=release)], env=env,
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr
    assert "exiting with an output alive" in child.stdout
    assert "graphpool:" not in child.stderr, child.stderr
