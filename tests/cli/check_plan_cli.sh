#!/usr/bin/env bash
# The graphpool-plan command line: good runs print what they promise; bad flags and bad orders exit
# 1 or 2 with exactly one line on stderr that says what is wrong, never a crash. The JSON checks need
# python3: without it this test fails (it never passes having checked nothing).
set -uo pipefail
plan=$1
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

reference=$("$plan" --schedule pp=4,rank=0,microbatches=4..64:4,vpp=4,group=4 --layers 3 --branch cp1:64MiB --mode coloring)
grep -Eq "^arenas +60 " <<<"$reference" || fail "PP4 VPP4 rank 0 reference: $reference"
"$plan" --help | grep -q -- "--schedule pp=P" || fail "--help"

json=$("$plan" --order "1,1,1,2,2,2,-2,1,-2,1,-2,2,-1,2,-1,-1,-2,-2,-1,-1" --layers 2 --branch cp1:8MiB:1MiB \
  --branch cp2:4MiB:1MiB --json) || fail "--json run"
mapped=$("$plan" --schedule pp=4,rank=2,microbatches=31..32,vpp=2,group=4 --branch cp1:8MiB:1MiB --slot-rule schedule \
  --max-copies 0 --json) || fail "--slot-rule schedule --json run"
if ! command -v python3 >/dev/null 2>&1; then
  fail "python3 is missing: the --json documents cannot be checked"
else
  python3 - "$json" "$mapped" <<'PY' || fail "--json documents"
import json, sys
doc = json.loads(sys.argv[1])
for key in ("slots", "footprint_bytes", "lower_bound_bytes", "live_bound_bytes", "naive_bytes", "coloring_bytes", "frames",
            "slot_rule", "slot_maps"):
    assert key in doc, key
assert doc["slots"] == 5
assert doc["slot_rule"] == "mod"
assert len(doc["frames"]) == 2 * 5 * 2
for f in doc["frames"]:
    assert set(f) == {"chunk", "slot", "layer", "arena", "offset", "bytes"}, f
    assert f["bytes"] == 8 << 20
assert doc["footprint_bytes"] >= doc["lower_bound_bytes"] >= doc["live_bound_bytes"]
# With --slot-rule mod the map is m mod S: one format for a runtime.
assert doc["slot_maps"] == [{"microbatches": 5, "map": [[m % 5 for m in range(5)] for chunk in range(2)]}], doc["slot_maps"]

mapped = json.loads(sys.argv[2])
assert mapped["slot_rule"] == "schedule"
assert [m["microbatches"] for m in mapped["slot_maps"]] == [31, 32]
for entry in mapped["slot_maps"]:
    assert len(entry["map"]) == 2
    for row in entry["map"]:
        assert len(row) == entry["microbatches"]
        assert all(0 <= copy < mapped["slots"] for copy in row)
# Issue 8's worst case: the live bound (56 MiB) with 7 copies, where m mod S needs 88 MiB.
assert mapped["footprint_bytes"] == mapped["live_bound_bytes"] == 56 << 20, mapped["footprint_bytes"]
assert mapped["slots"] == 7
PY
fi
tuples=$("$plan" --schedule pp=2,rank=0,microbatches=4 --layers 1 --branch a:1MiB --branch b:1MiB --emit te-slots)
[ "$(grep -c '^    (' <<<"$tuples")" -eq 8 ] || fail "te-slots: $tuples"

# Each bad invocation, then (after " => ") the text its one line on stderr must contain.
bad=(
  "--order 1,-1.5 --branch a:1MiB => entry 1 (-1.5) is fractional: delayed weight-gradient graphs are not supported"
  "--order 1,-1,-1 --branch a:1MiB => entry 2 (-1) is a backward of chunk 1 with no pending forward"
  "--order 1,1,-1 --branch a:1MiB => chunk 1 has 2 forward(s) but 1 backward(s)"
  "--order 1,x --branch a:1MiB => entry 1 ('x') is not a number"
  "--order 1,0,-1 --branch a:1MiB => entry 1 (0) is not a chunk id"
  "--schedule pp=2,rank=5,microbatches=4 --branch a:1MiB => schedule: rank 5 is outside [0, 2)"
  "--schedule pp=2 --branch a:1MiB => pp, rank and microbatches are required"
  "--schedule pp=2,rank=0,microbatches=4..2 --branch a:1MiB => microbatches range 4..2 is empty"
  "--order 1,-1 => no branch: give --branch NAME:SAVED[:GRAD]"
  "--branch a:1MiB => no schedule: give --schedule or --order"
  "--bogus => unknown flag '--bogus'"
  "--mode => --mode needs a value"
  "--mode best --order 1,-1 --branch a:1MiB => --mode 'best': use coloring or offsets"
  "--emit xml --order 1,-1 --branch a:1MiB => --emit 'xml': the only output to emit is te-slots"
  "--json --emit te-slots --order 1,-1 --branch a:1MiB => --json and --emit te-slots each print a whole document"
  "--branch a:1MB --order 1,-1 => size '1MB' is not a number with an optional unit"
  "--order 1,1,-1,-1 --slots 1 --branch a:1MiB => slot period is shorter than the schedule's liveness; use at least 2 slots"
  "--order 1,-1 --branch a:1MiB --layers 2,3 => 2 layer counts given for 1 chunk(s)"
  "--order 1,-1 --branch a:1MiB --frame-bytes chunk=0,layer=4,branch=a,saved=1MiB => override for chunk 0 layer 4: the chunk has 1 layer(s)"
  "--order 1,-1 --branch a:1MiB --branch a:2MiB => two branches are named 'a'"
  "--order 1,-1 --branch a:1MiB --alignment 3 => alignment 3 is not a power of two"
  "--order 1,-1 --branch a:1MiB --layers 100000 => --layers '100000': 100000 is outside [0, 4096]"
  "--order 1,-1 --branch a:1MiB --slot-rule best => --slot-rule 'best': use mod or schedule"
  "--order 1,1,-1,-1 --branch a:1MiB --slot-rule schedule --max-copies 1 => max_copies 1 is below the 2 microbatches one chunk holds at once"
  "--order 1,-1 --branch a:1MiB --max-copies 2 => max_copies 2 applies to the schedule slot rule"
  "--order 1,-1 --branch a:1MiB --max-copies -1 => --max-copies: -1 is outside [0, 65536]"
)
for entry in "${bad[@]}"; do
  args=${entry%% => *}
  expected=${entry#* => }
  # shellcheck disable=SC2086
  err=$("$plan" $args 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s\n' "$err" | grep -c .)
  if [ $rc -ne 1 ] && [ $rc -ne 2 ]; then fail "'$args' exited $rc"; fi
  if [ "$lines" -ne 1 ] || [[ "$err" != graphpool-plan:* ]]; then fail "'$args' printed: $err"; fi
  if [[ "$err" != *"$expected"* ]]; then fail "'$args' printed '$err', not '$expected'"; fi
done
echo "graphpool-plan: ${#bad[@]} bad invocations rejected; $failures failure(s)"
[ $failures -eq 0 ]
