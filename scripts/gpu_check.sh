#!/usr/bin/env bash
# On a machine with a GPU: build for it, run the test suites, compute-sanitizer memcheck on the GPU
# suite, the demo and the benchmarks; logs and JSON go to the folder given (default: gpu-results).
#   CMAKE_ARGS  extra configure arguments (default: -DCMAKE_CUDA_ARCHITECTURES=native)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-gpu-results}" && cd "${1:-gpu-results}" && pwd)
build=${GRAPHPOOL_BUILD_DIR:-$root/build-gpu}
export CMAKE_ARGS=${CMAKE_ARGS:--DCMAKE_CUDA_ARCHITECTURES=native}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
status=0
GRAPHPOOL_BUILD_DIR=$build "$root/scripts/test.sh" >"$out/test.log" 2>&1 || status=1
tail -n 12 "$out/test.log"
"$build/tests/graphpool_gpu_tests" --durations yes >"$out/gpu_tests.log" 2>&1 || status=1
tail -n 3 "$out/gpu_tests.log"
# memcheck reports CUDA API errors too, except in the tests that plant one on purpose.
compute-sanitizer --tool memcheck --leak-check full --error-exitcode 1 "$build/tests/graphpool_gpu_tests" \
  "~[planted-cuda-error]" >"$out/memcheck.log" 2>&1 || status=1
compute-sanitizer --tool memcheck --leak-check full --error-exitcode 1 --report-api-errors no \
  "$build/tests/graphpool_gpu_tests" "[planted-cuda-error]" >>"$out/memcheck.log" 2>&1 || status=1
grep -E "ERROR SUMMARY|All tests passed|test cases" "$out/memcheck.log"
"$build/examples/graphpool_demo" >"$out/demo.log" 2>&1 || status=1
cat "$out/demo.log"
GRAPHPOOL_SLOT_DEBUG=1 "$build/examples/graphpool_runtime" --json "$out/runtime.json" >"$out/runtime.log" 2>&1 || status=1
cat "$out/runtime.log"
# The GPU benchmarks (planner_quality is host-only: run it anywhere).
for name in allocation_cost capture_memory; do
  "$build/benchmarks/graphpool_bench_$name" --json "$out/$name.json" >"$out/$name.log" 2>&1 || status=1
  cat "$out/$name.log"
done
exit $status
