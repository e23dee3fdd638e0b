#!/usr/bin/env bash
# With no CUDA device visible (CUDA_VISIBLE_DEVICES=-1, set by CTest; or no GPU or driver at all), the GPU
# suite prints one plain line and exits 77, which CTest reports as skipped.
out=$("$1" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 77 ] || { echo "FAILED: exit $rc, not 77"; exit 1; }
[[ "$out" == *"graphpool_gpu_tests: skipped: no CUDA device/driver found"* ]] || { echo "FAILED: not the skip line"; exit 1; }
[ "$(grep -c . <<<"$out")" -eq 1 ] || { echo "FAILED: more than one line"; exit 1; }
