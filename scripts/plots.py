#!/usr/bin/env python3
"""Turns the benchmarks' JSON into the README's figures (PNG, matplotlib).

usage: scripts/plots.py [--results DIR] [--planner FILE] [--out DIR]

  --results  the GPU results: capture_memory.json, allocation_cost.json, runtime.json
             (default: benchmarks/results/h200)
  --planner  the planner-quality corpus (default: benchmarks/results/planner_quality.json)
  --out      where the PNGs go, with a copy of the JSON they came from (default: docs/figures)
"""

import argparse
import json
import pathlib
import shutil
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MIB = 1 << 20
WIDTH = 7.0  # inches: readable at README width
COLORS = {"pool per branch": "#c44e52", "one shared pool": "#dd8452", "graphpool, pool": "#4c72b0",
          "graphpool, pages": "#55a868", "planner's bound": "#8172b3", "largest branch": "#937860"}


def load(path):
    with open(path) as f:
        return json.load(f)


def source_line(data):
    commit = data.get("commit")
    parts = [data.get("gpu"), commit[:12] if commit and commit != "unknown" else None]
    return " · ".join(str(p) for p in parts if p)


def memory_vs_branches(data, out):
    rows = data["memory"]
    n = [r["branches"] for r in rows]
    series = [("pool per branch", "pool_per_branch_bytes"), ("one shared pool", "shared_pool_bytes"),
              ("graphpool, pool", "graphpool_pool_bytes"),
              ("graphpool, pages", "graphpool_pages_device_bytes" if "graphpool_pages_device_bytes" in rows[0]
               else "graphpool_pages_bytes"),
              ("largest branch", "largest_bytes")]
    # Lines that coincide (the two pools; graphpool and the largest branch) stay visible by style.
    styles = {"pool per branch": ("-", "o", 7), "one shared pool": ("--", "s", 4), "graphpool, pool": ("-", "o", 7),
              "graphpool, pages": ("--", "^", 5), "largest branch": (":", "x", 6)}
    fig, ax = plt.subplots(figsize=(WIDTH, 3.8))
    for name, key in series:
        line, marker, size = styles[name]
        ax.plot(n, [r[key] / MIB for r in rows], line, marker=marker, markersize=size, label=name, color=COLORS[name])
    ax.set_xlabel("branches (variants) of one slot")
    ax.set_ylabel("device memory (MiB)")
    ax.set_xticks(n)
    ax.set_title("Device memory against the number of branches")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.99, 0.01, "graphpool_bench_capture_memory · " + source_line(data), ha="right", fontsize=6, color="gray")
    fig.tight_layout()
    fig.savefig(out / "memory_vs_branches.png", dpi=130)
    plt.close(fig)


def allocation_cost(data, out):
    results = data["results"]
    names = [r["name"] for r in results]
    values = [r["median_ns"] for r in results]
    fig, ax = plt.subplots(figsize=(WIDTH, 3.6))
    colors = ["#4c72b0" if n.startswith("arena") else "#999999" for n in names]
    bars = ax.barh(names, values, color=colors)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("host time per allocation (ns, log scale; median of runs)")
    ax.set_title("Serving one allocation")
    for bar, value in zip(bars, values):
        ax.text(value * 1.1, bar.get_y() + bar.get_height() / 2, f"{value:,.1f} ns", va="center", fontsize=8)
    ax.set_xlim(right=max(values) * 30)
    ax.grid(axis="x", alpha=0.3)
    fig.text(0.99, 0.01, "graphpool_bench_allocation_cost · " + source_line(data), ha="right", fontsize=6, color="gray")
    fig.tight_layout()
    fig.savefig(out / "allocation_cost.png", dpi=130)
    plt.close(fig)


def planner_quality(data, out):
    cases = [c for c in data["cases"] if c.get("live_bound_bytes")]
    series = [("m mod S (offsets)", "offsets_bytes", "#dd8452")]
    if cases and "no_copy_limit_bytes" in cases[0]:
        series.append(("slot maps from the schedule, no copy limit", "no_copy_limit_bytes", "#4c72b0"))
    if cases and "schedule_rule_bytes" in cases[0]:
        series.append(("slot maps from the schedule, default copies", "schedule_rule_bytes", "#55a868"))
    fig, ax = plt.subplots(figsize=(WIDTH, 3.8))
    for name, key, color in series:
        ratios = sorted(c[key] / c["live_bound_bytes"] for c in cases)
        fraction = [100.0 * (i + 1) / len(ratios) for i in range(len(ratios))]
        ax.plot(fraction, ratios, label=name, color=color)
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xlabel(f"plans of the corpus, sorted (% of {len(cases)})")
    ax.set_ylabel("footprint / live bound")
    ax.set_title("Planner footprint against the live bound, across the corpus")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.text(0.99, 0.01, "graphpool_bench_planner_quality · " + source_line(data), ha="right", fontsize=6, color="gray")
    fig.tight_layout()
    fig.savefig(out / "planner_quality.png", dpi=130)
    plt.close(fig)


def runtime_memory(data, out):
    rows = [r for r in data["rows"] if r["design"] != "eager"]
    names = [r["design"] for r in rows] + ["planner's bound"]
    frames = [r["frames_bytes"] / MIB for r in rows] + [data["planner_bound_bytes"] / MIB]
    device = [r["device_bytes"] / MIB for r in rows] + [0]
    fig, ax = plt.subplots(figsize=(WIDTH, 3.6))
    y = range(len(names))
    ax.barh([i + 0.2 for i in y], device, height=0.4, color="#bbbbbb", label="device memory during the step")
    ax.barh([i - 0.2 for i in y], frames, height=0.4, color=[COLORS[n] for n in names], label="frames reserved")
    for i, value in enumerate(frames):
        ax.text(value + 80, i - 0.2, f"{value:,.0f} MiB", va="center", fontsize=8)
    ax.set_yticks(list(y))
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_xlabel("MiB")
    ax.set_xlim(right=max(device + frames) * 1.2)
    ax.set_title("Runtime example: a pipeline rank, four CP variants")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    fig.text(0.99, 0.01, "examples/runtime · " + source_line(data), ha="right", fontsize=6, color="gray")
    fig.tight_layout()
    fig.savefig(out / "runtime_memory.png", dpi=130)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", default="benchmarks/results/h200")
    parser.add_argument("--planner", default="benchmarks/results/planner_quality.json")
    parser.add_argument("--out", default="docs/figures")
    args = parser.parse_args()
    results = pathlib.Path(args.results)
    out = pathlib.Path(args.out)
    (out / "data").mkdir(parents=True, exist_ok=True)
    jobs = [(results / "capture_memory.json", memory_vs_branches), (results / "allocation_cost.json", allocation_cost),
            (pathlib.Path(args.planner), planner_quality), (results / "runtime.json", runtime_memory)]
    missing = 0
    for path, plot in jobs:
        if not path.exists():
            print(f"plots: {path} is missing; skipping {plot.__name__}", file=sys.stderr)
            missing += 1
            continue
        plot(load(path), out)
        shutil.copy(path, out / "data" / path.name)
        print(f"plots: {out / (plot.__name__ + '.png')} from {path}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
