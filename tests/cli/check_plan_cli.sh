#!/usr/bin/env bash
# The graphpool-plan command line: good runs print what they promise; bad flags and bad orders exit
# 1 or 2 with exactly one line on stderr, never a crash.
set -uo pipefail
plan=$1
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

reference=$("$plan" --schedule pp=4,rank=0,microbatches=4..64:4,vpp=4,group=4 --layers 3 --branch cp1:64MiB --mode coloring)
grep -Eq "^arenas +60 " <<<"$reference" || fail "PP4 VPP4 rank 0 reference: $reference"
"$plan" --help | grep -q -- "--schedule pp=P" || fail "--help"

json=$("$plan" --order "1,1,1,2,2,2,-2,1,-2,1,-2,2,-1,2,-1,-1,-2,-2,-1,-1" --layers 2 --branch cp1:8MiB:1MiB \
  --branch cp2:4MiB:1MiB --json) || fail "--json run"
if command -v python3 >/dev/null 2>&1; then
  python3 - "$json" <<'PY' || fail "--json document"
import json, sys
doc = json.loads(sys.argv[1])
for key in ("slots", "footprint_bytes", "lower_bound_bytes", "live_bound_bytes", "naive_bytes", "coloring_bytes", "frames"):
    assert key in doc, key
assert doc["slots"] == 5
assert len(doc["frames"]) == 2 * 5 * 2
for f in doc["frames"]:
    assert set(f) == {"chunk", "slot", "layer", "arena", "offset", "bytes"}, f
    assert f["bytes"] == 8 << 20
assert doc["footprint_bytes"] >= doc["lower_bound_bytes"] >= doc["live_bound_bytes"]
PY
fi
tuples=$("$plan" --schedule pp=2,rank=0,microbatches=4 --layers 1 --branch a:1MiB --branch b:1MiB --emit te-slots)
[ "$(grep -c '^    (' <<<"$tuples")" -eq 8 ] || fail "te-slots: $tuples"

bad=(
  "--order 1,-1.5 --branch a:1MiB"
  "--order 1,-1,-1 --branch a:1MiB"
  "--order 1,1,-1 --branch a:1MiB"
  "--order 1,x --branch a:1MiB"
  "--order 1,0,-1 --branch a:1MiB"
  "--schedule pp=2,rank=5,microbatches=4 --branch a:1MiB"
  "--schedule pp=2 --branch a:1MiB"
  "--schedule pp=2,rank=0,microbatches=4..2 --branch a:1MiB"
  "--order 1,-1"
  "--branch a:1MiB"
  "--bogus"
  "--mode"
  "--mode best --order 1,-1 --branch a:1MiB"
  "--emit xml --order 1,-1 --branch a:1MiB"
  "--json --emit te-slots --order 1,-1 --branch a:1MiB"
  "--branch a:1MB --order 1,-1"
  "--order 1,1,-1,-1 --slots 1 --branch a:1MiB"
  "--order 1,-1 --branch a:1MiB --layers 2,3"
  "--order 1,-1 --branch a:1MiB --frame-bytes chunk=0,layer=4,branch=a,saved=1MiB"
  "--order 1,-1 --branch a:1MiB --branch a:2MiB"
  "--order 1,-1 --branch a:1MiB --alignment 3"
  "--order 1,-1 --branch a:1MiB --layers 100000"
)
for args in "${bad[@]}"; do
  # shellcheck disable=SC2086
  err=$("$plan" $args 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s\n' "$err" | grep -c .)
  if [ $rc -ne 1 ] && [ $rc -ne 2 ]; then fail "'$args' exited $rc"; fi
  if [ "$lines" -ne 1 ] || [[ "$err" != graphpool-plan:* ]]; then fail "'$args' printed: $err"; fi
done
echo "graphpool-plan: ${#bad[@]} bad invocations rejected; $failures failure(s)"
[ $failures -eq 0 ]
