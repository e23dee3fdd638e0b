#!/usr/bin/env bash
# On a machine with a GPU and PyTorch (CUDA 13 build): graphpool_torch's pytest suite under
# compute-sanitizer memcheck, then examples/torch/compare.py; logs and JSON go to the folder given
# (default: torch-results). Run after a build with the plug-in (scripts/test.sh or gpu_check.sh).
#   PYTHON               the interpreter with torch (default: python3)
#   GRAPHPOOL_BUILD_DIR  the build holding bindings/libgraphpool_c.so (default: build-gpu)
#   COMPARE_ARGS         extra arguments for compare.py (e.g. --quick); COMPARE=0 skips the comparison
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-torch-results}" && cd "${1:-torch-results}" && pwd)
build=${GRAPHPOOL_BUILD_DIR:-$root/build-gpu}
python=${PYTHON:-python3}
export GRAPHPOOL_TORCH_LIBRARY=${GRAPHPOOL_TORCH_LIBRARY:-$build/bindings/libgraphpool_c.so}
status=0
# Under memcheck, left out: the compiled-module test (inductor compiles and benchmarks its kernels:
# slow under the sanitizer) and the tests that count memory going back (the sanitizer keeps the Python
# frames it records alive, and their tensors with them). The tests that make a CUDA API error on
# purpose run apart, with API errors not reported.
sanitize() {
  compute-sanitizer --tool memcheck --error-exitcode 1 "$@"
}
tests=("$python" -m pytest "$root/python/tests" -q -p no:cacheprovider -k "not compiled")
sanitize "${tests[@]}" -m "not counts_memory and not planted_cuda_error" >"$out/torch_memcheck.log" 2>&1 || status=1
sanitize --report-api-errors no "${tests[@]}" -m "planted_cuda_error and not counts_memory" \
  >>"$out/torch_memcheck.log" 2>&1 || status=1
grep -E "ERROR SUMMARY|passed|failed" "$out/torch_memcheck.log"
if [ "${COMPARE:-1}" != 0 ]; then
  # shellcheck disable=SC2086
  "$python" "$root/examples/torch/compare.py" --json "$out/torch_compare.json" ${COMPARE_ARGS:-} \
    >"$out/torch_compare.log" 2>&1 || status=1
  cat "$out/torch_compare.log"
fi
exit $status
