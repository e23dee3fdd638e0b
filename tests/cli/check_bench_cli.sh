#!/usr/bin/env bash
# The benchmarks' command lines. --help prints the usage on stdout and exits 0; an unknown flag, a flag
# without its value, a bad number and an output path that cannot be written exit 2 with one line on stderr
# naming it, before anything is measured. With no CUDA device visible (CTest sets CUDA_VISIBLE_DEVICES=-1)
# the GPU benchmarks print one line saying so, exit 77 and write no JSON: never a figure. planner_quality
# on parts of its quick corpus: the JSON holds what the table prints and its summary follows from its cases
# (check_planner_quality_json.py; needs python3: without it this test fails, having checked nothing).
#   check_bench_cli.sh ALLOCATION_COST CAPTURE_MEMORY PLANNER_QUALITY
set -uo pipefail
allocation_cost=$1
capture_memory=$2
planner_quality=$3
here=$(cd "$(dirname "$0")" && pwd)
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for bench in "$allocation_cost" "$capture_memory" "$planner_quality"; do
  "$bench" --help >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 0 ] || fail "$(basename "$bench") --help: exit $rc, not 0"
  head -n 1 "$tmp/out" | grep -q "^usage: $(basename "$bench") " || fail "$(basename "$bench") --help: no usage on stdout"
  grep -q "^Exit status" "$tmp/out" || fail "$(basename "$bench") --help does not document its exit statuses"
  [ -s "$tmp/err" ] && fail "$(basename "$bench") --help wrote to stderr: $(cat "$tmp/err")"
done

# Each bad invocation: the benchmark, its arguments, then (after " => ") the text its one line on stderr must
# contain. Every one exits 2, prints nothing on stdout and, where it names an output, leaves no file there.
missing=$tmp/no-such-folder/out.json
bad=(
  "allocation_cost --bogus => unknown flag '--bogus'"
  "allocation_cost --json => --json needs a value"
  "allocation_cost --runs 0 => --runs: 0 is outside [1, 100000]"
  "allocation_cost --runs many => --runs: 'many' is not an integer"
  "allocation_cost --json $missing => cannot write $missing"
  "capture_memory --runs 3 => unknown flag '--runs'"
  "capture_memory --launches 3 => --launches: 3 is odd"
  "capture_memory --launches => --launches needs a value"
  "capture_memory --json $missing => cannot write $missing"
  "planner_quality --threads 0 => --threads: 0 is outside"
  "planner_quality --random-sizes 5 => --random-sizes '5': give SEED:COUNT"
  "planner_quality --random-sizes 1:0 => --random-sizes count: 0 is outside"
  "planner_quality --misses $tmp/m.json --misses-above 0.9 => --misses-above: '0.9' is not a number of at least 1"
  "planner_quality --misses-above 1.05 => --misses-above says which cases --misses PATH writes"
  "planner_quality --quick --random-sizes 1:2 => --quick and --random-sizes are two corpora"
  "planner_quality --quick --json $missing => cannot write $missing"
  "planner_quality --quick --misses $missing => cannot write $missing"
  "planner_quality --quick --only no-such-case => no corpus case's name contains 'no-such-case'"
)
for entry in "${bad[@]}"; do
  call=${entry%% => *}
  expected=${entry#* => }
  name=${call%% *}
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=-1 "${!name}" ${call#* } >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 2 ] || fail "$call: exit $rc, not 2"
  [ "$(grep -c . "$tmp/err")" -eq 1 ] || fail "$call: not one line on stderr: $(cat "$tmp/err")"
  grep -qF -- "$expected" "$tmp/err" || fail "$call: stderr does not say '$expected': $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "$call: printed on stdout: $(cat "$tmp/out")"
done
[ -e "$tmp/m.json" ] && fail "a refused command line left $tmp/m.json behind"

# No device: one line saying so, exit 77 (skipped), no JSON.
for name in allocation_cost capture_memory; do
  CUDA_VISIBLE_DEVICES=-1 "${!name}" --json "$tmp/$name.json" >"$tmp/out" 2>&1
  rc=$?
  [ $rc -eq 77 ] || fail "$name without a device: exit $rc, not 77"
  [ "$(grep -c . "$tmp/out")" -eq 1 ] || fail "$name without a device: not one line: $(cat "$tmp/out")"
  grep -q "no CUDA device" "$tmp/out" || fail "$name without a device does not say so: $(cat "$tmp/out")"
  [ -e "$tmp/$name.json" ] && fail "$name without a device wrote $tmp/$name.json"
done

# planner_quality: single schedules and unions, equal and unequal frames; then single schedules only, whose
# union figures were measured over no plan and must read "-" in the table and null in the JSON.
if ! command -v python3 >/dev/null 2>&1; then
  fail "python3 is missing: planner_quality's JSON cannot be checked"
else
  "$planner_quality" --quick --only "1f1b pp2 " --json "$tmp/both.json" >"$tmp/both.txt" 2>&1 ||
    fail "planner_quality --quick --only '1f1b pp2 ': exit $?: $(tail -n 3 "$tmp/both.txt")"
  python3 "$here/check_planner_quality_json.py" "$tmp/both.json" "$tmp/both.txt" || fail "planner_quality's JSON and table"
  "$planner_quality" --quick --only "1f1b pp2 r0 M=24 " --json "$tmp/single.json" >"$tmp/single.txt" 2>&1 ||
    fail "planner_quality --quick --only '1f1b pp2 r0 M=24 ': exit $?: $(tail -n 3 "$tmp/single.txt")"
  python3 "$here/check_planner_quality_json.py" "$tmp/single.json" "$tmp/single.txt" ||
    fail "planner_quality's JSON and table, single schedules only"
  grep -Eq "^m mod S +[0-9.]+ / [0-9.]+ +- / - " "$tmp/single.txt" || fail "no unions, yet the table prints union figures"
  python3 - "$tmp/single.json" <<'PY' || fail "no unions, yet the JSON holds union figures"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["only"] == "1f1b pp2 r0 M=24 " and "only the cases" in doc["corpus"], (doc["only"], doc["corpus"])
for name, rule in doc["slot_rules_footprint_over_live_bound"].items():
    assert rule["unions_median"] is None and rule["unions_worst"] is None, (name, rule)
    assert rule["single_median"] is not None, (name, rule)
PY
fi
[ $failures -eq 0 ] && echo "benchmark command lines: all checks passed"
exit $((failures > 0))
