#!/usr/bin/env python3
"""graphpool against PyTorch's own CUDA graph designs, side by side in one run, on one GPU.

The model: a 2-layer bf16 transformer block (hidden 4096, 32 heads, causal SDPA, GELU MLP); four
CP-like variants of 16384 / CP tokens (CP 1, 2, 4, 8); forward + backward with the loss outside the
graphs. Designs, each in its own process (so memory starts from the same empty device):

  eager                 no graphs (reference)
  graphed_per_variant   torch.cuda.make_graphed_callables, a pool per variant
  graphed_one_pool      torch.cuda.make_graphed_callables, one pool for all variants
  graph_trees           torch.compile(mode="reduce-overhead")  (CUDA graph trees)
  graphpool             graphpool_torch over the eager module
  graphpool_compiled    graphpool_torch over torch.compile(module) (inductor, no CUDA graphs of its own)

One microbatch at a time the variants run in turn; with 2 and 4 microbatches in flight (F..F B..B) each
microbatch runs a random variant (seed fixed, the same sequence for every design). For each: device
memory in use above the model's (mem_get_info), PyTorch's memory_reserved, time to the first steady
step (compiles, captures and recordings included), and the step time (CUDA events): one at a time, the
mean over the variants of each variant's median step (the median over the four variants' steps together
falls on one variant's steps); in flight, the median over the last 50 steps, the same random variants
for every design. The graphpool designs also check outputs and parameter gradients bitwise against the
module run without graphs, with torch.use_deterministic_algorithms(True).

    python3 examples/torch/compare.py --json results.json          # every design
    python3 examples/torch/compare.py --quick                      # a small model, for a smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIB = 1 << 20

ROWS = [("eager", 1), ("graphed_per_variant", 1), ("graphed_one_pool", 1), ("graph_trees", 1), ("graphpool", 1),
        ("graphpool_compiled", 1), ("graph_trees", 2), ("graphpool", 2), ("graphpool_compiled", 2),
        ("graph_trees", 4), ("graphpool", 4), ("graphpool_compiled", 4)]


# -- one design, in its own process ---------------------------------------------------------------------

def run_design(design: str, depth: int, args) -> dict:
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch

    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent.parent / "python"))
    from model import Block, variants

    torch.use_deterministic_algorithms(True)
    for backend in ("cudnn", "mem_efficient", "math"):  # flash attention: deterministic under the flag above
        getattr(torch.backends.cuda, f"enable_{backend}_sdp")(False)
    torch.manual_seed(0)
    device = torch.device("cuda")

    def used() -> int:
        free, total = torch.cuda.mem_get_info()
        return total - free

    model = Block(args.hidden, args.heads, args.layers).to(device, torch.bfloat16)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)  # every design accumulates into the same, owned .grad
    tokens = variants(args.tokens)
    names = list(tokens)
    samples = {n: torch.randn(t, args.hidden, device=device, dtype=torch.bfloat16) for n, t in tokens.items()}
    torch.cuda.synchronize()
    baseline = used()
    result: dict = {"design": design, "depth": depth, "variants": tokens}

    start = time.perf_counter()
    mark = None
    forward = None
    graphed = None
    if design == "eager":
        def forward(m, name, x):
            return model(x)
    elif design in ("graphed_per_variant", "graphed_one_pool"):
        class Wrapper(torch.nn.Module):  # make_graphed_callables rewrites forward in place: graph a wrapper
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x)

        pool = torch.cuda.graph_pool_handle() if design == "graphed_one_pool" else None
        callables, pools = {}, {}
        for name in names:
            torch.cuda.empty_cache()
            before = torch.cuda.memory_reserved()
            callables[name] = torch.cuda.make_graphed_callables(Wrapper(model), (samples[name],), pool=pool)
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            pools[name] = torch.cuda.memory_reserved() - before
        result["pool_mib"] = {n: b / MIB for n, b in pools.items()}

        def forward(m, name, x):
            return callables[name](x)
    elif design == "graph_trees":
        compiled = torch.compile(model, mode="reduce-overhead", dynamic=False)
        mark = torch.compiler.cudagraph_mark_step_begin

        def forward(m, name, x):
            return compiled(x)
    elif design in ("graphpool", "graphpool_compiled"):
        import graphpool_torch

        module = torch.compile(model, dynamic=False) if design == "graphpool_compiled" else model
        graphed = graphpool_torch.GraphedVariants(module, {n: (samples[n],) for n in names}, in_flight=depth)
        result["capture_s"] = graphed.capture_seconds
        result["copies"] = graphed.slots * len(names)

        def forward(m, name, x):
            return graphed(x, microbatch=m, variant=name)
    else:
        raise SystemExit(f"unknown design {design}")
    torch.cuda.synchronize()
    setup_s = time.perf_counter() - start
    if graphed is not None:  # not timed: the check runs the module without graphs too
        result["bitwise"] = bitwise(torch, module, forward, names, tokens, depth, args)
        torch.cuda.empty_cache()  # the check's eager blocks are no part of the design's memory

    rng = random.Random(args.seed)
    sequence = [[names[i % len(names)]] if depth == 1 else [rng.choice(names) for _ in range(depth)]
                for i in range(args.steps)]
    events = []
    walls = []
    peak = 0
    start = time.perf_counter()
    host = []
    for step_names in sequence:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        step_start = time.perf_counter()
        if mark is not None:
            mark()
        begin.record()
        outputs = [forward(m, n, samples[n]) for m, n in enumerate(step_names)]
        for out in outputs:
            out.float().square().mean().backward()
        end.record()
        host.append(time.perf_counter() - step_start)  # the host's time to enqueue the step
        del outputs, out
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - start)
        events.append(begin.elapsed_time(end))
        peak = max(peak, used())

    step_walls = [walls[0]] + [b - a for a, b in zip(walls, walls[1:])]
    measured = events[-50:] if len(events) >= 60 else events[len(events) // 5:]
    median_ms = statistics.median(measured)  # in flight; one at a time, replaced below
    # A slow step takes the host 50 ms or more to enqueue: a compile, a capture or a recording (replays
    # and eager launches enqueue in a few ms; the GPU time of a step cannot tell, since a recording step
    # runs its kernels too).
    slow = [i for i, h in enumerate(host) if h > 0.05]
    settled = slow[-1] + 1 if slow else 1
    result.update({
        "device_mib": (peak - baseline) / MIB,
        "reserved_mib": torch.cuda.max_memory_reserved() / MIB,
        "model_mib": baseline / MIB,
        "setup_s": setup_s,
        "time_to_steady_s": setup_s + walls[settled - 1],
        "settled": settled < len(host),  # False: the last step was still slow (the time is a lower bound)
        "slow_steps": len(slow),
        "median_step_ms": median_ms,
        "median_step_ms_by_variant": {},
        "steps": len(events),
        "step_ms": events,
        "step_host_s": host,
        "step_wall_s": step_walls,
    })
    if depth == 1:
        for n in names:
            times = [t for t, s in zip(events, sequence) if s[0] == n]
            result["median_step_ms_by_variant"][n] = statistics.median(times[len(times) // 5:])
        # The variants' steps differ many times over (CP 1 and CP 8: 14x in the default model), so their
        # median together falls on one variant's steps. Each variant's median, weighted alike, is a step.
        result["median_step_ms"] = statistics.mean(result["median_step_ms_by_variant"].values())
        result["median_step_ms_over_all_steps"] = median_ms
    if graphed is not None:
        memory = graphed.memory()
        result["graphpool"] = {
            "physical_mib": memory["physical"] / MIB,
            "plan_footprint_mib": memory["plan_footprint"] / MIB,
            "live_bound_mib": memory["live_bound"] / MIB,
            "scratch_mib": memory["scratch"] / MIB,
            "torch_reserved_mib": memory["torch_reserved"] / MIB,
            "windows_mib": {f"{c}/{s}/{v}": b / MIB for (c, s, v), b in memory["windows"].items()},
            "persistent_mib": {f"{c}/{s}/{v}": b / MIB for (c, s, v), b in memory["persistent"].items()},
        }
        held = graphed.release()
        result["graphpool"]["segments_held_after_release"] = held
    return result


def bitwise(torch, reference, forward, names, tokens, depth, args) -> dict:
    """Outputs and parameter gradients of the graphs against `reference` run without graphs."""
    parameters = [p for p in reference.parameters()]
    rng = random.Random(args.seed + 1)
    if depth == 1:
        steps = [[names[i]] for order in ([0, 1, 2, 3], [3, 2, 1, 0], [1, 0, 3, 2]) for i in order]
    else:
        steps = [[rng.choice(names) for _ in range(depth)] for _ in range(4)]
    checked = 0
    mismatches = []

    def run(call, xs):
        for p in parameters:
            p.grad.zero_()
        outs = [call(m, n, x) for m, (n, x) in enumerate(xs)]
        kept = [o.clone() for o in outs]
        for o in outs:
            o.float().square().mean().backward()
        return kept, [p.grad.clone() for p in parameters]

    for step_names in steps:
        xs = [(n, torch.randn(tokens[n], args.hidden, device="cuda", dtype=torch.bfloat16)) for n in step_names]
        eager_outs, eager_grads = run(lambda m, n, x: reference(x), xs)
        again_outs, again_grads = run(lambda m, n, x: reference(x), xs)
        repeatable = all(torch.equal(a, b) for a, b in zip(eager_outs + eager_grads, again_outs + again_grads))
        outs, grads = run(forward, xs)
        same = all(torch.equal(a, b) for a, b in zip(outs + grads, eager_outs + eager_grads))
        checked += 1
        if not same or not repeatable:
            mismatches.append({"variants": step_names, "eager_repeatable": repeatable})
    for p in parameters:
        p.grad.zero_()
    return {"steps_checked": checked, "orders": steps, "bitwise_equal": not mismatches, "mismatches": mismatches}


# -- the whole comparison ---------------------------------------------------------------------------------

def commit() -> str:
    """The commit compared: GRAPHPOOL_COMMIT (a copy of the tree without its .git), else git's HEAD ("" outside
    a checkout), with "-dirty" where tracked files differ from it."""
    if os.environ.get("GRAPHPOOL_COMMIT"):
        return os.environ["GRAPHPOOL_COMMIT"]
    root = HERE.parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        changes = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                 capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return ""
    return head.stdout.strip() + ("-dirty" if changes.stdout.strip() else "")


def steady(r: dict) -> str:
    """Time to the first steady step; a design whose last step was still slow never settled in the run."""
    seconds = f"{r['time_to_steady_s']:.1f} s"
    return seconds if r.get("settled", True) else f"> {seconds} (not settled in {r['steps']} steps)"


def table(results: list[dict]) -> str:
    lines = ["| design | in flight | device MiB | memory_reserved MiB | graph memory MiB | to steady step | "
             "slow steps | median step ms | bitwise |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['design']} | {r['depth']} | failed: {r['error'][:80]} | | | | | | |")
            continue
        graph = r.get("graphpool", {}).get("physical_mib")
        if graph is None and "pool_mib" in r:
            graph = sum(r["pool_mib"].values())
        bit = r.get("bitwise", {}).get("bitwise_equal")
        lines.append(f"| {r['design']} | {r['depth']} | {r['device_mib']:.0f} | {r['reserved_mib']:.0f} | "
                     f"{'' if graph is None else f'{graph:.0f}'} | {steady(r)} | {r['slow_steps']} | "
                     f"{r['median_step_ms']:.2f} | {'' if bit is None else ('yes' if bit else 'NO')} |")
    return "\n".join(lines)


def targets(results: list[dict]) -> list[str]:
    def find(design, depth):
        return next((r for r in results if r["design"] == design and r["depth"] == depth and "error" not in r), None)

    notes = []
    per_variant = find("graphed_per_variant", 1)
    ours = find("graphpool", 1)
    if per_variant and ours:
        largest = max(per_variant["pool_mib"].values())
        ratio = ours["graphpool"]["physical_mib"] / largest
        notes.append(f"one at a time: graphpool frames {ours['graphpool']['physical_mib']:.0f} MiB / the largest "
                     f"variant's own pool {largest:.0f} MiB = {ratio:.3f} (target <= 1.02)")
        speed = ours["median_step_ms"] / per_variant["median_step_ms"]
        notes.append(f"one at a time: graphpool step / pool per variant = {speed:.3f} (each a mean of the variants' "
                     f"median steps; target <= 1.02)")
    compiled, trees = find("graphpool_compiled", 1), find("graph_trees", 1)
    if compiled and trees:
        notes.append(f"one at a time: graphpool over inductor {compiled['device_mib']:.0f} MiB vs graph trees "
                     f"{trees['device_mib']:.0f} MiB (device memory above the model)")
    for depth in (2, 4):
        trees = find("graph_trees", depth)
        for design in ("graphpool", "graphpool_compiled"):
            r = find(design, depth)
            if not r:
                continue
            g = r["graphpool"]
            notes.append(f"{depth} in flight, {design}: frames {g['physical_mib']:.0f} MiB / live bound "
                         f"{g['live_bound_mib']:.0f} MiB = {g['physical_mib'] / g['live_bound_mib']:.3f} (target <= 1.02)")
            if trees:
                notes.append(f"{depth} in flight, {design}: device {r['device_mib']:.0f} MiB vs graph trees "
                             f"{trees['device_mib']:.0f} MiB; to steady step {steady(r)} vs "
                             f"{steady(trees)}; slow steps {r['slow_steps']} vs "
                             f"{trees['slow_steps']}")
    return notes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--design", help="run one design in this process (used by the comparison itself)")
    parser.add_argument("--depth", type=int, default=1, help="microbatches in flight (with --design)")
    parser.add_argument("--designs", default="", help="comma-separated designs to compare (default: all)")
    parser.add_argument("--depths", default="1,2,4", help="comma-separated depths to compare")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=16384)
    parser.add_argument("--quick", action="store_true", help="hidden 512, 8 heads, 2048 tokens, 12 steps")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--out", help="(with --design) write this design's result here")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per design")
    args = parser.parse_args()
    if args.quick:
        args.hidden, args.heads, args.tokens, args.steps = 512, 8, 2048, 12

    if args.design:
        result = run_design(args.design, args.depth, args)
        Path(args.out).write_text(json.dumps(result, indent=1)) if args.out else print(json.dumps(result, indent=1))
        return 0

    if args.json:  # asked before the designs run (minutes), not after
        existed = Path(args.json).exists()
        try:
            open(args.json, "a").close()
        except OSError as e:
            parser.error(f"--json {args.json}: cannot write it: {e.strerror}")
        if not existed:
            Path(args.json).unlink()
    try:
        import torch
    except ImportError:
        print("graphpool torch comparison: PyTorch is not installed; nothing to compare (skipped)")
        return 77
    if not torch.cuda.is_available():
        print("graphpool torch comparison: no CUDA device; nothing to compare (skipped)")
        return 77
    wanted = [d for d in args.designs.split(",") if d]
    depths = {int(d) for d in args.depths.split(",")}
    rows = [(d, k) for d, k in ROWS if (not wanted or d in wanted) and k in depths]
    results = []
    for design, depth in rows:
        out = Path(f"/tmp/graphpool_compare_{design}_{depth}.json")
        out.unlink(missing_ok=True)
        command = [sys.executable, __file__, "--design", design, "--depth", str(depth), "--out", str(out),
                   "--steps", str(args.steps), "--seed", str(args.seed), "--hidden", str(args.hidden),
                   "--heads", str(args.heads), "--layers", str(args.layers), "--tokens", str(args.tokens)]
        began = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
            failed = done.returncode != 0 or not out.exists()
            error = (done.stderr.strip().splitlines() or ["exit " + str(done.returncode)])[-1] if failed else None
        except subprocess.TimeoutExpired:
            error = f"timed out after {args.timeout} s"
        result = {"design": design, "depth": depth, "error": error} if error else json.loads(out.read_text())
        result["process_s"] = time.perf_counter() - began
        results.append(result)
        print(f"{design} x{depth}: {'failed: ' + error if error else 'done'} ({result['process_s']:.0f} s)", flush=True)
    print()
    print(table(results))
    print()
    for note in targets(results):
        print(note)
    if args.json:
        import platform

        Path(args.json).write_text(json.dumps({
            "device": torch.cuda.get_device_name(), "torch": torch.__version__, "host": platform.node(),
            "commit": commit(), "args": vars(args), "results": results, "targets": targets(results)}, indent=1))
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
