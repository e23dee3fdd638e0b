#!/usr/bin/env python3
"""Exact optimum of the schedule slot rule on the cases the planner misses issue 8's targets on.

With no copy limit, a single schedule's slot maps and layout are exactly dynamic storage allocation
on its intervals: every frame (chunk, microbatch, layer) is a rectangle (lifetime x bytes) at a free
height, and two microbatches of one chunk share a copy exactly when all their frames sit at the same
heights (they never overlap in time, since their bytes would). So the optimum footprint of one
schedule is the smallest height that packs its rectangles, which CP-SAT (NoOverlap2D) proves. A union
of schedules lays every one of them out over one set of copies, so it needs at least the largest
optimum of its schedules: a lower bound.

Every rectangle's height is searched among sums of the rectangles' sizes only. Any packing stays a
packing, no taller, when its rectangles are lowered one at a time as far as each goes, again and again
until none moves (every move lowers a unit or more, so this ends); then each one rests on 0 or on the
top of a rectangle alive beside it, which rests on another, and so on: its height is a sum of sizes.
With few distinct sizes those are far fewer heights than the byte units under the top (two sizes of 77
and 40 MiB, a 77 under 688 MiB: 72 of 612), and CP-SAT settles the same questions 3 to 20 times faster.

usage: graphpool_bench_planner_quality --misses misses.json [--misses-above RATIO];
       slot_rule_optimum.py [--target-only] [--target RATIO] misses.json [SECONDS [SCHEDULES]]
       slot_rule_optimum.py --window START:END [--target RATIO] misses.json [SECONDS]
(SECONDS per schedule, default 60; a union solves up to SCHEDULES of its schedules, heaviest first and of those the
longest first, default all,
stopping when one proves the planner's footprint optimal; --target-only asks only the target question below,
with all of SECONDS for it; --target asks about RATIO x the live bound instead of issue 8's worst-case
targets, e.g. 1.005, its median target, on plans above it)
--window asks only whether each single schedule's rectangles, clipped to events [START, END), pack under the
target (--target RATIO, default 1.05, of the live bound): clipped to a window, any packing of the schedule
is one of the window, so "no" proves the target out of reach, and the planner's footprint optimal where no
sum of the sizes lies between the two.
A window of a long steady state is far easier to settle than the whole schedule (PP 4 rank 1 VPP 2 M 128,
77 and 40 MiB frames: the whole undecided in 600 s, the 176 events [14, 190) proven in 136 s).
Prints, per case: live bound, the planner's footprint, the proven optimum (or CP-SAT's bound), and
whether the target (1.05 single, 1.10 unions, of the live bound) is reachable at all: where the least
height is not settled, CP-SAT is asked whether the schedules pack under the target height itself (a far
easier question, often answered in seconds). Needs ortools.
"""
import json
import math
import sys

try:
    from ortools.sat.python import cp_model
except ImportError:  # said in main(), after --help
    cp_model = None


def resting_heights(sizes, top):
    """Every sum of `sizes` (with repeats) from 0 to `top`: the heights a lowered rectangle can rest at."""
    reached = [False] * (top + 1)
    reached[0] = True
    for height in range(top + 1):
        if reached[height]:
            for size in sizes:
                if height + size <= top:
                    reached[height + size] = True
    return [height for height in range(top + 1) if reached[height]]


def packing_model(rectangles, unit, top):
    """A CP-SAT model of `rectangles` [start, end, bytes] packed under `top` units of `unit` bytes, and each
    rectangle's height variable (in units, among the resting heights)."""
    resting = resting_heights(sorted({b // unit for _, _, b in rectangles}), top)
    domains = {}  # per size: the resting heights it fits under the top at
    model = cp_model.CpModel()
    xs, ys, heights = [], [], []
    for i, (start, end, b) in enumerate(rectangles):
        size = b // unit
        if size not in domains:
            domains[size] = cp_model.Domain.FromValues([h for h in resting if h + size <= top])
        y = model.NewIntVarFromDomain(domains[size], f"y{i}")
        heights.append(y)
        xs.append(model.NewFixedSizeIntervalVar(start, end - start, f"x{i}"))
        ys.append(model.NewFixedSizeIntervalVar(y, size, f"yi{i}"))
    model.AddNoOverlap2D(xs, ys)
    return model, heights


def byte_unit(rectangles):
    """The largest number of bytes every rectangle's size is a multiple of."""
    unit = 0
    for _, _, b in rectangles:
        unit = math.gcd(unit, b)
    return unit


def solve(model, seconds):
    """`model` solved by CP-SAT on 2 workers within `seconds`: (solver, status)."""
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 2
    return solver, solver.Solve(model)


def optimum(rectangles, upper, seconds):
    """(lower bound, best height found) of packing `rectangles` [start, end, bytes] under `upper`."""
    unit = byte_unit(rectangles)
    model, heights = packing_model(rectangles, unit, upper // unit)
    height = model.NewIntVar(0, upper // unit, "height")
    for y, (_, _, b) in zip(heights, rectangles):
        model.Add(y + b // unit <= height)
    model.Minimize(height)
    solver, status = solve(model, seconds)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return int(solver.BestObjectiveBound()) * unit, None
    return int(solver.BestObjectiveBound()) * unit, int(solver.ObjectiveValue()) * unit


def add_levels(model, rectangles, heights, unit, top):
    """Constraints every packing under `top` units meets, which help CP-SAT prove that none exists: at a moment
    when the largest rectangles alive fill the height so far that one more would not fit (n of size w with
    (n + 1) w > top >= n w), the k-th of them from the bottom lies at k w plus at most top - n w < w, so each is
    at a level (its height's quotient by w) that no other alive with it shares, and keeps it while alive."""
    big = max(b for _, _, b in rectangles) // unit
    levels = {}
    for t in sorted({s for s, _, _ in rectangles} | {e for _, e, _ in rectangles}):
        alive = [i for i, (s, e, b) in enumerate(rectangles) if s <= t < e and b // unit == big]
        count = len(alive)
        if count < 2 or count * big > top or (count + 1) * big <= top:
            continue
        for i in alive:
            if i not in levels:
                levels[i] = model.NewIntVar(0, count - 1, f"level{i}")
                spare = model.NewIntVar(0, top - count * big, f"spare{i}")
                model.Add(heights[i] == big * levels[i] + spare)
        model.AddAllDifferent([levels[i] for i in alive])


def fits(rectangles, height, seconds, levels=False):
    """Whether `rectangles` pack under `height`: True (a packing found), False (proven not), None (unknown).
    A fixed height is a much easier question for CP-SAT than the least height. `levels`: with add_levels'
    constraints."""
    if any(b > height for _, _, b in rectangles):
        return False
    unit = byte_unit(rectangles)
    model, heights = packing_model(rectangles, unit, height // unit)
    if levels:
        add_levels(model, rectangles, heights, unit, height // unit)
    _, status = solve(model, seconds)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return True
    return False if status == cp_model.INFEASIBLE else None


def window_main(window, cases, seconds, target_ratio):
    """--window START:END: whether each single schedule's rectangles in the window pack under the target."""
    start, end = (int(x) for x in window.split(":"))
    for case in cases:
        if len(case["schedules"]) != 1:
            print(f"{case['name']}: a union of schedules: --window asks single schedules only", flush=True)
            continue
        live = case["live_bound_bytes"]
        planned = case["schedule_rule_bytes"]
        rectangles = case["schedules"][0]["rectangles"]
        target = target_ratio or 1.05
        # Clipped to the window: any packing of the schedule is one of the window.
        clipped = [(max(s, start), min(e, end), b) for s, e, b in rectangles if s < end and e > start]
        packs = fits(clipped, int(target * live), seconds, levels=True)
        verdict = {True: "the window packs (the schedule: undecided)", None: "undecided"}.get(packs)
        if packs is False:
            verdict = "target unreachable (proven)"
            # A packing's top is a sum of the sizes (a lowered packing's is): none between the target and the
            # planner's footprint leaves that footprint the least.
            unit = byte_unit(rectangles)
            tops = resting_heights(sorted({b // unit for _, _, b in rectangles}), planned // unit - 1)
            if tops[-1] * unit <= target * live:
                verdict += f"; optimum {planned >> 20} MiB ({planned / live:.3f}): the planner's"
        print(f"{case['name']}: live {live >> 20} MiB, planner {planned >> 20} MiB ({planned / live:.3f}), "
              f"events [{start}, {end}) ({len(clipped)} rectangles) under {target} x the live bound: {verdict}", flush=True)


def refuse(message):
    """A command line it cannot run: one line saying why, exit 2."""
    print(f"slot_rule_optimum.py: {message}; see --help", file=sys.stderr)
    sys.exit(2)


def flag_value(args, flag, parse, what):
    """The value after `flag` in `args` (both removed), parsed; None without the flag."""
    if flag not in args:
        return None
    at = args.index(flag)
    if at + 1 >= len(args):
        refuse(f"{flag} needs {what}")
    text = args[at + 1]
    del args[at:at + 2]
    try:
        return parse(text)
    except ValueError:
        refuse(f"{flag} '{text}': not {what}")


def window_bounds(text):
    start, end = (int(x) for x in text.split(":"))
    if not 0 <= start < end:
        raise ValueError(text)
    return f"{start}:{end}"


def main():
    args = sys.argv[1:]
    if "--help" in args or "-h" in args:
        print(__doc__)
        return
    target_only = "--target-only" in args
    args = [a for a in args if a != "--target-only"]
    target_ratio = flag_value(args, "--target", float, "a ratio to the live bound, e.g. 1.005")
    window = flag_value(args, "--window", window_bounds, "START:END, two event indices with START < END")
    unknown = [a for a in args if a.startswith("--")]
    if unknown:
        refuse(f"unknown flag '{unknown[0]}'")
    if not args or len(args) > 3:
        refuse("give misses.json (from graphpool_bench_planner_quality --misses), then optionally SECONDS and SCHEDULES")
    if cp_model is None:
        print("slot_rule_optimum.py: needs ortools (python3 -m pip install ortools)", file=sys.stderr)
        sys.exit(1)
    try:
        with open(args[0]) as f:
            cases = json.load(f)
    except (OSError, ValueError) as e:
        refuse(f"cannot read {args[0]}: {e}")
    try:
        seconds = float(args[1]) if len(args) > 1 else 60.0
        heaviest = int(args[2]) if len(args) > 2 else 1000
    except ValueError:
        refuse(f"SECONDS and SCHEDULES are numbers, not {' '.join(args[1:])}")
    if window is not None:
        window_main(window, cases, seconds, target_ratio)
        return
    for case in cases:
        live = case["live_bound_bytes"]
        planned = case["schedule_rule_bytes"]
        single = len(case["schedules"]) == 1
        target = target_ratio or (1.05 if single else 1.10)
        # The schedules with the most bytes alive at once first (their optimum bounds the union's), and of
        # those the longest: a long steady state packs worse than a short one (PP 2 rank 0 VPP 2, unequal chunks:
        # M 4 and 8 pack at the live bound, M 16 and 64 at 1.106 at best).
        schedules = sorted(case["schedules"], key=lambda s: (-peak(s["rectangles"]), -len(s["rectangles"])))[:heaviest]
        bound, best = 0, None
        for schedule in [] if target_only else schedules:
            lower, found = optimum(schedule["rectangles"], planned, seconds)
            if lower > bound or (lower == bound and best is None):
                bound, best = lower, found
            if bound >= planned:
                break  # the planner's footprint is proven optimal
        found_text = f", best packing found {best >> 20} MiB ({best / live:.3f})" if best is not None else ""
        if target_only:
            what = "optimum not asked"
        elif bound >= planned:
            what = f"optimum {planned >> 20} MiB ({planned / live:.3f}): the planner's"
        elif single and best == bound:
            what = f"optimum {bound >> 20} MiB ({bound / live:.3f})"
        else:
            what = f"lower bound {bound >> 20} MiB ({bound / live:.3f}){found_text}"
        if bound > target * live:
            verdict = "target unreachable (proven)"
        elif single and best is not None and best <= target * live:
            verdict = "target reachable: the planner misses"
        else:
            # The target height itself: a packing under it (a single schedule), or a schedule that has none.
            verdict = "undecided"
            for schedule in schedules if bound < planned else []:
                under_target = fits(schedule["rectangles"], int(target * live), seconds)
                if under_target is False:
                    verdict = "target unreachable (proven: a schedule does not pack under it)"
                    break
                if under_target and single:
                    verdict = f"target reachable: the planner misses (CP-SAT packs it under {target} x the live bound)"
        print(f"{case['name']}: live {live >> 20} MiB, planner {planned >> 20} MiB ({planned / live:.3f}), {what}: "
              f"{verdict}", flush=True)


def peak(rectangles):
    events = sorted([(s, b) for s, _, b in rectangles] + [(e, -b) for _, e, b in rectangles], key=lambda x: (x[0], x[1]))
    live = top = 0
    for _, b in events:
        live += b
        top = max(top, live)
    return top


if __name__ == "__main__":
    main()
