#!/usr/bin/env bash
# Runs every benchmark, one JSON each, into OUTDIR (default: benchmark-results), then draws the
# figures from them (scripts/plots.py, when matplotlib is there). The GPU benchmarks need a device and
# are skipped with a line without one; the planner's corpus runs anywhere (--quick: its CI corpus).
#   CMAKE_ARGS  extra configure arguments (e.g. -DCMAKE_CUDA_ARCHITECTURES=90 -DGRAPHPOOL_COMMIT=<sha>)
#   QUICK=1     the planner's quick corpus instead of the full one (minutes)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/prerequisites.sh"
out=$(mkdir -p "${1:-benchmark-results}" && cd "${1:-benchmark-results}" && pwd)
build=${GRAPHPOOL_BUILD_DIR:-$root/build}
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} >/dev/null || exit 1
cmake --build "$build" --target graphpool_bench_allocation_cost graphpool_bench_capture_memory \
  graphpool_bench_planner_quality graphpool_runtime >/dev/null || exit 1
status=0
run() {  # name, command...: 77 means no GPU (skipped), anything else non-zero is a failure
  local name=$1
  shift
  echo "== $name"
  "$@" 2>&1 | tee "$out/$name.log"
  local code=${PIPESTATUS[0]}
  if [ "$code" -eq 77 ]; then echo "   ($name skipped: no GPU)"; elif [ "$code" -ne 0 ]; then status=1; fi
}
run allocation_cost "$build/benchmarks/graphpool_bench_allocation_cost" --json "$out/allocation_cost.json"
run capture_memory "$build/benchmarks/graphpool_bench_capture_memory" --json "$out/capture_memory.json"
run runtime "$build/examples/graphpool_runtime" --require-gpu --json "$out/runtime.json"
run planner_quality "$build/benchmarks/graphpool_bench_planner_quality" ${QUICK:+--quick} --json "$out/planner_quality.json"
if python3 -c "import matplotlib" 2>/dev/null; then
  python3 "$root/scripts/plots.py" --results "$out" --planner "$out/planner_quality.json" --out "$out/figures" || true
else
  echo "(matplotlib not found: no figures; pip install matplotlib, then scripts/plots.py)"
fi
exit $status
