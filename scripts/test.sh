#!/usr/bin/env bash
# Builds graphpool with -Werror and runs its tests: the host suite always, the GPU suite where a
# CUDA device is present (reported as skipped otherwise, with the reason printed after CTest's summary).
#   GRAPHPOOL_BUILD_DIR  build folder (default: build)
#   CMAKE_ARGS           extra configure arguments, e.g. -DCMAKE_CUDA_ARCHITECTURES=90
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/prerequisites.sh"
build=${GRAPHPOOL_BUILD_DIR:-$root/build}
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAPHPOOL_WERROR=ON ${CMAKE_ARGS:-}
cmake --build "$build"
status=0
ctest --test-dir "$build" --output-on-failure 2>&1 | tee "$build/ctest.out" || status=$?
# CTest prints only "Skipped" for a skipped test; say why (each skipping test prints one line saying so).
log="$build/Testing/Temporary/LastTest.log"
skipped=$(sed -nE 's/^[[:space:]]*[0-9]+ - (.*) \(Skipped\)$/\1/p' "$build/ctest.out")
if [ -n "$skipped" ] && [ -f "$log" ]; then
  echo "skipped, and why:"
  for name in $skipped; do
    awk -v name="$name" '$0 ~ "^[0-9]+/[0-9]+ Test: " name "$" {on = 1} on && /<end of output>/ {on = 0}
                         on && /: skipped|\(skipped\)/ {print "  " name ": " $0}' "$log" | sort -u
  done
fi
exit $status
