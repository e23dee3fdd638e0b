#!/usr/bin/env bash
# The graphpool-plan command line: good runs print what they promise; bad flags and bad orders exit
# 1 or 2 (the code --help documents for each) with exactly one line on stderr that says what is wrong,
# never a crash. The JSON checks need python3: without it this test fails (it never passes having
# checked nothing).
#   check_plan_cli.sh GRAPHPOOL_PLAN GRAPHPOOL_READ_PLAN
set -uo pipefail
plan=$1
read_plan=$2
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
    assert set(f) == {"chunk", "slot", "layer", "arena", "offset", "bytes", "color"}, f
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
# Issue 8's worst case: the live bound (56 MiB), where m mod S needs 88 MiB, with 7 copies; the copies
# then split by backward parity (at most twice as many) so that the returned gradients need two regions.
assert mapped["footprint_bytes"] == mapped["live_bound_bytes"] == 56 << 20, mapped["footprint_bytes"]
assert 7 <= mapped["slots"] <= 14, mapped["slots"]
PY
fi
tuples=$("$plan" --schedule pp=2,rank=0,microbatches=4 --layers 1 --branch a:1MiB --branch b:1MiB --emit te-slots)
[ "$(grep -c '^    (' <<<"$tuples")" -eq 8 ] || fail "te-slots: $tuples"
grep -q "chunk and layer are 0-based" <<<"$tuples" || fail "te-slots does not say chunks are 0-based: $tuples"
colored=$("$plan" --schedule pp=2,rank=0,microbatches=4 --branch a:1MiB --branch b:1MiB --emit te-slots --mode coloring)
[ "$colored" = "$tuples" ] || fail "te-slots with --mode coloring differs from te-slots: $colored"
"$plan" --help | grep -q '2  a flag or its value is wrong on its own' || fail "--help does not document exit status 2"
# Output that cannot be written (a full disk) is a failure, never exit 0 with half a document.
if [ -w /dev/full ]; then
  for args in "--order 1,-1 --branch a:1MiB --json" "--order 1,-1 --branch a:1MiB" "--help"; do
    # shellcheck disable=SC2086
    err=$("$plan" $args 2>&1 >/dev/full)
    rc=$?
    [ $rc -eq 3 ] || fail "'$args' into /dev/full exited $rc, not 3"
    [[ "$err" == "graphpool-plan: cannot write to standard output: "* ]] || fail "'$args' into /dev/full printed: $err"
  done
fi

# Branch names with a quote and a backslash: the JSON parses (python3) and plan::from_json reads the names back.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$plan" --order "1,2,-2,-1" --branch 'cp"1:8MiB' --branch 'cp\2:4MiB' --branch 'a\"b:1MiB' --json >"$tmp/plan.json" \
  || fail "--json with quoted branch names"
python3 - "$tmp/plan.json" <<'PY' || fail "--json with quoted branch names is not valid JSON"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["branches"] == ['cp"1', 'cp\\2', 'a\\"b'], doc["branches"]
assert doc["chunks"] == 2 and {f["chunk"] for f in doc["frames"]} == {0, 1}, doc["frames"]
PY
back=$("$read_plan" "$tmp/plan.json") || fail "plan::from_json cannot read the plan back: $back"
expected_back=$(printf 'branch %s\n' 'cp"1' 'cp\2' 'a\"b'; echo "frames 2")
[ "$back" = "$expected_back" ] || fail "plan::from_json read back '$back', not '$expected_back'"

# Each bad invocation: its exit status, the arguments, then (after " => ") the text its one line on
# stderr must contain. 2: a flag or value wrong on its own; 1: valid flags that cannot be planned together.
bad=(
  "2 --order 1,-1.5 --branch a:1MiB => entry 1 (-1.5) is fractional: delayed weight-gradient graphs are not supported"
  "2 --order 1,-1,-1 --branch a:1MiB => entry 2 (-1) is a backward of chunk 0 (order id 1) with no pending forward"
  "2 --order 1,1,-1 --branch a:1MiB => chunk 0 (order id 1) has 2 forward(s) but 1 backward(s)"
  "2 --order 1,x --branch a:1MiB => entry 1 ('x') is not a decimal integer"
  "2 --order 0x1,-1 --branch a:1MiB => entry 0 ('0x1') is not a decimal integer"
  "2 --order 1,0,-1 --branch a:1MiB => entry 1 (0) is not a chunk id"
  "2 --schedule pp=2,rank=5,microbatches=4 --branch a:1MiB => schedule: rank 5 is outside [0, 2)"
  "2 --schedule pp=2 --branch a:1MiB => pp, rank and microbatches are required"
  "2 --schedule pp=2,rank=0,microbatches=4..2 --branch a:1MiB => microbatches range 4..2 is empty"
  "2 --order 1,-1 => no branch: give --branch NAME:SAVED[:GRAD]"
  "2 --branch a:1MiB => no schedule: give --schedule or --order"
  "2 --bogus => unknown flag '--bogus'"
  "2 --mode => --mode needs a value"
  "2 --mode best --order 1,-1 --branch a:1MiB => --mode 'best': use coloring or offsets"
  "2 --emit xml --order 1,-1 --branch a:1MiB => --emit 'xml': the only output to emit is te-slots"
  "1 --json --emit te-slots --order 1,-1 --branch a:1MiB => --json and --emit te-slots each print a whole document"
  "2 --branch a:1MB --order 1,-1 => --branch 'a:1MB' saved bytes: size '1MB' is not a number with an optional unit"
  "2 --order 1,-1 --branch a:1MiB:1XB => --branch 'a:1MiB:1XB' gradient bytes: size '1XB' is not a number"
  "2 --order 1,-1 --branch a:2048GiB => --branch 'a:2048GiB' saved bytes: 2048GiB is more than the 1 TiB (1099511627776 bytes) one frame may hold"
  "2 --order 1,-1 --branch a:1MiB --frame-bytes chunk=0,layer=0,branch=a,saved=4096GiB => --frame-bytes 'chunk=0,layer=0,branch=a,saved=4096GiB' saved: 4096GiB is more than the 1 TiB"
  "2 --order 1,-1 --branch a:1MiB --alignment 2048GiB => --alignment 2048GiB: 2048GiB is more than the 1 TiB"
  "2 --order 1,-1 --branch a:1MiB --alignment 4611686018427387904 => --alignment 4611686018427387904: size '4611686018427387904' is too large"
  "1 --order 1,1,-1,-1 --slots 1 --branch a:1MiB => schedule '--order 1,1,-1,-1', entry 1 (order id 1): the forward of chunk 0"
  "1 --order 1,1,-1,-1 --slots 1 --branch a:1MiB => slot period is shorter than the schedule's liveness; use at least 2 slots"
  "1 --order 1,-1 --branch a:1MiB --layers 2,3 => 2 layer counts given for 1 chunk(s) (problem::layers_per_chunk; --layers in graphpool-plan)"
  "1 --order 1,-1 --branch a:1MiB --frame-bytes chunk=0,layer=4,branch=a,saved=1MiB => override chunk=0,layer=4,branch=a (problem::overrides; --frame-bytes in graphpool-plan): chunk 0 has 1 layer(s), 0-based: layer=0..0"
  "1 --order 1,-1 --branch a:1MiB --frame-bytes chunk=5,layer=0,branch=a,saved=1MiB => override chunk=5,layer=0,branch=a (problem::overrides; --frame-bytes in graphpool-plan): the schedules have 1 chunk(s), 0-based: chunk=0..0"
  "1 --order 1,-1 --branch a:1MiB --frame-bytes chunk=0,layer=0,branch=b,saved=1MiB => branch 'b' is not declared; declare it (problem::branches, --branch)"
  "2 --order 1,-1 --branch a:1MiB --branch a:2MiB => --branch 'a:2MiB': two branches are named 'a'; name each once"
  "2 --order 1,-1 --branch a:1MiB --alignment 3 => --alignment 3: the alignment must be a power of two"
  "2 --order 1,-1 --branch a:1MiB --layers 100000 => --layers '100000': 100000 is outside [0, 4096]"
  "2 --order 1,-1 --branch a:1MiB --slot-rule best => --slot-rule 'best': use mod or schedule"
  "1 --order 1,1,-1,-1 --branch a:1MiB --slot-rule schedule --max-copies 1 => max_copies 1 (problem::max_copies; --max-copies in graphpool-plan) is below the 2 microbatches one chunk holds at once; allow at least 2 copies (0 = no limit)"
  "1 --order 1,-1 --branch a:1MiB --max-copies 2 => --max-copies 2 applies to --slot-rule schedule; add it"
  "1 --order 1,-1 --branch a:1MiB --slot-rule schedule --slots 2 => --slots 2 applies to --slot-rule mod"
  "2 --order 1,-1 --branch a:1MiB --max-copies -1 => --max-copies: -1 is outside [0, 65536]"
  "2 --schedule pp=4,pp=2,rank=0,microbatches=4 --branch a:1MiB => --schedule 'pp=4,pp=2,rank=0,microbatches=4': key 'pp' is given twice; give it once"
  "2 --schedule pp=4,rank=0,microbatches=8,group=4 --branch a:1MiB => group applies to interleaved schedules only; give vpp=V with V > 1, or drop group"
  "2 --schedule pp=4,rank=0,microbatches=8,vpp=1,group=4 --branch a:1MiB => group applies to interleaved schedules only"
  "2 --order 1,-1 --branch a:1MiB --frame-bytes chunk=0,layer=0,branch=a,saved=2MiB --frame-bytes chunk=0,layer=0,branch=a,saved=3MiB => --frame-bytes 'chunk=0,layer=0,branch=a,saved=3MiB': chunk 0 layer 0 of branch 'a' already has saved bytes; give each once"
  "2 --order 1,-1 --branch a:1MiB --frame-bytes chunk=0,chunk=1,layer=0,branch=a,saved=2MiB => key 'chunk' is given twice"
  "2 --order 1,-1, --branch a:1MiB => --order '1,-1,': entry 2 is empty, after the last entry (a trailing comma); remove the comma"
  "2 --order 1,,-1 --branch a:1MiB => --order '1,,-1': entry 1 is empty, between two commas; remove the comma"
  "2 --order ,1,-1 --branch a:1MiB => entry 0 is empty, before the first entry (a leading comma)"
  "2 --order 2,-2 --branch a:1MiB => --order '2,-2': chunk 0 (order id 1) never runs, yet the largest id is 2; number the chunks from 1 without gaps"
  "2 --order 1,-1 --branch a:1MiB --slots 0 => --slots: 0 is outside [1, 65536]"
  "2 --order 1,-1 --branch a:1MiB --slots 99999999999999999999 => --slots: 99999999999999999999 is outside [1, 65536]"
  "2 --order 1,-1 --branch a:1MiB --layers 2 --layers 3 => --layers is given twice; give it once"
  "2 --order 1,-1 --branch a:1MiB --slots 2 --slots 3 => --slots is given twice; give it once"
  "2 --order 1,-1 --branch a:1MiB --mode coloring --mode offsets => --mode is given twice; give it once"
  "2 --order 1,-1 --branch a:1MiB --slot-rule schedule --slot-rule mod => --slot-rule is given twice; give it once"
  "2 --order 1,-1 --branch a:1MiB --alignment 512 --alignment 256 => --alignment is given twice; give it once"
  "2 --order 1,-1 --branch a:1MiB --alignment 0 => --alignment 0: the alignment must be a power of two (1, 2, 4, ..., e.g. 256)"
  "1 --order 1,-1 --branch a:1MiB --emit te-slots --mode offsets => --emit te-slots always uses the coloring (TransformerEngine's saved_arena is a color); drop --mode offsets"
)
for entry in "${bad[@]}"; do
  code=${entry%% *}
  args=${entry#* }
  args=${args%% => *}
  expected=${entry#* => }
  # shellcheck disable=SC2086
  err=$("$plan" $args 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s\n' "$err" | grep -c .)
  if [ $rc -ne "$code" ]; then fail "'$args' exited $rc, not $code"; fi
  if [ "$lines" -ne 1 ] || [[ "$err" != graphpool-plan:* ]]; then fail "'$args' printed: $err"; fi
  if [[ "$err" != *"$expected"* ]]; then fail "'$args' printed '$err', not '$expected'"; fi
done
echo "graphpool-plan: ${#bad[@]} bad invocations rejected; $failures failure(s)"
[ $failures -eq 0 ]
