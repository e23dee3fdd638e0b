#!/usr/bin/env python3
"""graphpool_bench_planner_quality's JSON against its own cases and against the table it printed: every
summary figure is recomputed from the cases, and every figure of the table is found in the JSON, so that
the table prints nothing the run did not measure and the JSON holds what the table says.

usage: check_planner_quality_json.py RESULT.json TABLE.txt
"""
import json
import math
import re
import sys


def percentile(values, q):
    """As the benchmark takes it: linear between the two values around q; None for no values."""
    if not values:
        return None
    values = sorted(values)
    at = q * (len(values) - 1)
    below = int(at)
    if below + 1 >= len(values):
        return values[-1]
    return values[below] + (at - below) * (values[below + 1] - values[below])


def ratio(a, b):
    return 1.0 if b == 0 else a / b


problems = []


def same(what, printed, expected, digits, units=0.6):
    """`printed` (a figure of the table, or of the JSON at `digits` decimals) is `expected` rounded: within
    `units` of its last digit. 0.6, not 0.5: the table and the JSON each round the same value, to different
    digits; 1.1 where `expected` comes from the cases' times, themselves rounded to the same digits."""
    if expected is None or printed is None:
        if expected is not printed:
            problems.append(f"{what}: {printed!r} where {expected!r} was expected")
        return
    if not math.isclose(printed, expected, abs_tol=units * 10 ** -digits):
        problems.append(f"{what}: {printed} where {expected:.{digits + 2}f} was expected")


def number(text):
    return None if text == "-" else float(text)


def main():
    doc = json.load(open(sys.argv[1]))
    table = open(sys.argv[2]).read()
    cases = doc["cases"]
    if doc["plans"] != len(cases):
        problems.append(f"plans {doc['plans']} but {len(cases)} cases")

    # The summary, recomputed from the cases.
    offsets = [ratio(c["offsets_bytes"], c["lower_bound_bytes"]) for c in cases]
    coloring = [ratio(c["coloring_bytes"], c["lower_bound_bytes"]) for c in cases]
    naive = [ratio(c["naive_bytes"], c["lower_bound_bytes"]) for c in cases]
    times = [c["offsets_ms"] for c in cases]
    for key, values, digits, units in (("offsets_ratio", offsets, 4, 0.6), ("coloring_ratio", coloring, 4, 0.6),
                                       ("naive_ratio", naive, 4, 0.6), ("offsets_planning_ms", times, 3, 1.1)):
        for name, q in (("median", 0.5), ("p90", 0.9), ("worst", 1.0)):
            same(f"{key}.{name}", doc[key][name], percentile(values, q), digits, units)
    counts = {
        "offsets_above_coloring": sum(c["offsets_bytes"] > c["dsatur_bytes"] for c in cases),
        "coloring_more_arenas_than_dsatur": sum(c["coloring_arenas"] > c["dsatur_arenas"] for c in cases),
        "offsets_above_1_10": sum(ratio(c["offsets_bytes"], c["lower_bound_bytes"]) > 1.10 for c in cases),
        "offsets_above_1_10_proven_optimal": sum(ratio(c["offsets_bytes"], c["lower_bound_bytes"]) > 1.10
                                                 and c["optimum_bytes"] == c["offsets_bytes"] for c in cases),
        "schedule_rule_above_mod": sum(c["schedule_rule_bytes"] > c["offsets_bytes"] for c in cases),
        "schedule_rule_over_copies_budget": sum(c["schedule_rule_copies"] > 2 * c["slots"] for c in cases),
        "equal_frames_off_live_bound": sum(c["equal_frames"] and c["no_copy_limit_bytes"] != c["live_bound_bytes"]
                                           for c in cases),
        "offsets_strictly_below_coloring": sum(c["offsets_bytes"] < c["coloring_bytes"] for c in cases),
        "cases_rejected_by_verifier": sum(bool(c["rejected"]) for c in cases),
        "schedule_rule_grads_above_mod": sum(c["schedule_rule_grad_bytes"] > c["mod_grad_bytes"] for c in cases),
    }
    off_target = [c for c in cases
                  if ratio(c["no_copy_limit_bytes"], c["live_bound_bytes"]) > (1.05 if c["single"] else 1.10)]
    counts["schedule_rule_off_target"] = len(off_target)
    counts["schedule_rule_off_target_proven_optimal"] = sum(
        c["no_copy_limit_bytes"] == c["no_copy_limit_lower_bound_bytes"] for c in off_target)
    for key, value in counts.items():
        if doc[key] != value:
            problems.append(f"{key}: {doc[key]} in the JSON, {value} from the cases")
    grads = {"m_mod_s": "mod_grad_bytes", "default_copies": "schedule_rule_grad_bytes",
             "no_copy_limit": "no_copy_limit_grad_bytes"}
    for key, field in grads.items():
        value = sum(c[field] > c["grad_live_bound_bytes"] for c in cases)
        if doc["grads_above_live_bound"][key] != value:
            problems.append(f"grads_above_live_bound.{key}: {doc['grads_above_live_bound'][key]}, {value} from the cases")
    known = [ratio(c["offsets_bytes"], c["optimum_bytes"]) for c in cases if c["optimum_bytes"] > 0]
    same("worst_offsets_over_proven_optimum", doc["worst_offsets_over_proven_optimum"], max(known) if known else None, 4)
    rules = {"m mod S": ("offsets_bytes", "slots", "offsets_ms"),
             "schedule, default copies": ("schedule_rule_bytes", "schedule_rule_copies", "schedule_rule_ms"),
             "schedule, no copy limit": ("no_copy_limit_bytes", "no_copy_limit_copies", "no_copy_limit_ms")}
    for name, (size, copies, ms) in rules.items():
        got = doc["slot_rules_footprint_over_live_bound"][name]
        for kind, single in (("single", True), ("unions", False)):
            values = [ratio(c[size], c["live_bound_bytes"]) for c in cases if c["single"] == single]
            same(f"{name} {kind}_median", got[f"{kind}_median"], percentile(values, 0.5), 4)
            same(f"{name} {kind}_worst", got[f"{kind}_worst"], percentile(values, 1.0), 4)
        copies_ratio = [c[copies] / c["slots"] for c in cases]
        same(f"{name} copies_over_mod_median", got["copies_over_mod_median"], percentile(copies_ratio, 0.5), 4)
        same(f"{name} copies_over_mod_worst", got["copies_over_mod_worst"], percentile(copies_ratio, 1.0), 4)
        same(f"{name} planning_ms_median", got["planning_ms_median"], percentile([c[ms] for c in cases], 0.5), 3, 1.1)
        same(f"{name} planning_ms_worst", got["planning_ms_worst"], percentile([c[ms] for c in cases], 1.0), 3, 1.1)
    worst = max(cases, key=lambda c: ratio(c["offsets_bytes"], c["lower_bound_bytes"]))
    worst_unlimited = max(cases, key=lambda c: ratio(c["no_copy_limit_bytes"], c["live_bound_bytes"]))
    for key, case in (("worst_offsets_case", worst), ("worst_no_copy_limit_case", worst_unlimited)):
        if doc[key] != case["name"]:
            problems.append(f"{key}: {doc[key]!r}, {case['name']!r} from the cases")

    # The table, figure by figure, against the JSON.
    def line(pattern):
        found = re.search(pattern, table, re.MULTILINE)
        if not found:
            problems.append(f"the table has no line matching {pattern!r}")
        return found

    for label, key in (("offsets / lower bound", "offsets_ratio"), ("coloring / lower bound", "coloring_ratio"),
                       ("naive / lower bound", "naive_ratio"), ("offsets planning ms", "offsets_planning_ms")):
        found = line(rf"^{re.escape(label)} +(\S+) +(\S+) +(\S+)$")
        digits = 2 if key == "offsets_planning_ms" else 3
        if found:
            for printed, name in zip(found.groups(), ("median", "p90", "worst")):
                same(f"table {label} {name}", number(printed), doc[key][name], digits)
    found = line(r"^worst offsets case: (.*) \((\S+)\)$")
    if found and found.group(1) != doc["worst_offsets_case"]:
        problems.append(f"table worst offsets case {found.group(1)!r}, JSON {doc['worst_offsets_case']!r}")
    found = line(r"^offsets above the DSATUR coloring: (\d+) plans; coloring with more arenas than DSATUR: (\d+) plans$")
    if found and [int(x) for x in found.groups()] != [doc["offsets_above_coloring"], doc["coloring_more_arenas_than_dsatur"]]:
        problems.append(f"table {found.group(0)!r} against the JSON")
    found = line(r"^offsets above 1.10 x lower bound: (\d+) plans, (\d+) of them proven optimal")
    if found and [int(x) for x in found.groups()] != [doc["offsets_above_1_10"], doc["offsets_above_1_10_proven_optimal"]]:
        problems.append(f"table {found.group(0)!r} against the JSON")
    found = line(r"^worst offsets / proven optimum, over plans whose optimum is known: (\S+)$")
    if found:
        same("table worst offsets / proven optimum", number(found.group(1)), doc["worst_offsets_over_proven_optimum"], 3)
    found = line(r"footprint / live bound over (\d+) single schedules and (\d+) unions$")
    if found and [int(x) for x in found.groups()] != [sum(c["single"] for c in cases), sum(not c["single"] for c in cases)]:
        problems.append(f"table {found.group(0)!r} against the cases")
    pair = r"(\S+) / (\S+)"
    for name in rules:
        found = line(rf"^{re.escape(name)} +{pair} +{pair} +{pair} +{pair}$")
        if not found:
            continue
        got = doc["slot_rules_footprint_over_live_bound"][name]
        keys = ["single_median", "single_worst", "unions_median", "unions_worst", "copies_over_mod_median",
                "copies_over_mod_worst", "planning_ms_median", "planning_ms_worst"]
        for printed, key in zip(found.groups(), keys):
            same(f"table {name} {key}", number(printed), got[key], 3)
    found = line(r"^worst schedule rule without a copy limit: (.*) \((\S+) of the live bound\)$")
    if found and found.group(1) != doc["worst_no_copy_limit_case"]:
        problems.append(f"table worst schedule rule case {found.group(1)!r}, JSON {doc['worst_no_copy_limit_case']!r}")
    for pattern, keys in (
            (r"^offsets \(m mod S\) strictly below the coloring: (\d+) plans$", ["offsets_strictly_below_coloring"]),
            (r"^schedule rule above m mod S: (\d+) plans; above twice m mod S's copies: (\d+) plans; equal frames off "
             r"the live bound \(no copy limit\): (\d+) plans$",
             ["schedule_rule_above_mod", "schedule_rule_over_copies_budget", "equal_frames_off_live_bound"]),
            (r"above issue 8's targets .*: (\d+) plans, (\d+) of them proven optimal by the planner$",
             ["schedule_rule_off_target", "schedule_rule_off_target_proven_optimal"]),
            (r"^cases with a plan the independent verifier rejects .*: (\d+) of (\d+)", ["cases_rejected_by_verifier", "plans"]),
            (r"^returned gradients above their live bound: m mod S (\d+) plans, schedule rule (\d+) \(default copies\), "
             r"(\d+) \(no copy limit\); schedule rule \(default copies\) above m mod S's gradients: (\d+) plans$",
             ["grads_above_live_bound.m_mod_s", "grads_above_live_bound.default_copies",
              "grads_above_live_bound.no_copy_limit", "schedule_rule_grads_above_mod"])):
        found = line(pattern)
        if not found:
            continue
        for printed, key in zip(found.groups(), keys):
            value = doc
            for part in key.split("."):
                value = value[part]
            if int(printed) != value:
                problems.append(f"table {key} {printed}, JSON {value}")
    timings = {"m mod S": ("target_case_planning_ms", "m_mod_s"),
               "schedule rule, default copies": (("target_case_planning_ms_schedule_rule", "default_copies"), "default_copies"),
               "schedule rule, no copy limit": (("target_case_planning_ms_schedule_rule", "no_copy_limit"), "no_copy_limit")}
    for what, (rank0_key, slowest_key) in timings.items():
        found = line(rf"4 branches, {re.escape(what)}: rank 0 \(\d+ frames\) (\S+) ms, slowest of ranks 0\.\.7: "
                     rf"rank (\d+) (\S+) ms")
        if not found:
            continue
        rank0 = doc[rank0_key] if isinstance(rank0_key, str) else doc[rank0_key[0]][rank0_key[1]]
        same(f"table planning {what} rank 0", float(found.group(1)), rank0, 1)
        rank, slowest = doc["target_case_planning_ms_slowest_rank"][slowest_key]
        if int(found.group(2)) != rank:
            problems.append(f"table planning {what}: slowest rank {found.group(2)}, JSON {rank}")
        same(f"table planning {what} slowest", float(found.group(3)), slowest, 1)
    for what, key in (("m mod S", "m_mod_s"), ("schedule rule, default copies", "default_copies"),
                      ("schedule rule, no copy limit", "no_copy_limit")):
        found = line(rf"unequal layers, {re.escape(what)}: rank 0 \(\d+ frames\) (\S+) ms")
        if found:
            same(f"table unequal layers {what}", float(found.group(1)), doc["target_case_planning_ms_unequal_layers"][key], 1)
    found = line(r"^PP4 VPP4 reference, saved arenas on ranks 0\.\.3: (\d+) (\d+) (\d+) (\d+)")
    if found and [int(x) for x in found.groups()] != doc["reference_pp4_vpp4_arenas"]:
        problems.append(f"table reference arenas {found.groups()}, JSON {doc['reference_pp4_vpp4_arenas']}")
    missed = re.findall(r"^THRESHOLD MISSED: (.*)$", table, re.MULTILINE)
    if missed != doc["thresholds_missed"]:
        problems.append(f"table missed {missed}, JSON {doc['thresholds_missed']}")

    for p in problems:
        print("FAILED:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
