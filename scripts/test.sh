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
ctest --test-dir "$build" --output-on-failure || status=$?
# CTest prints only "Skipped" for a skipped test; say why (each skipping test prints one line saying so).
log="$build/Testing/Temporary/LastTest.log"
if [ -f "$log" ] && grep -q ': skipped\|(skipped)' "$log"; then
  echo "skipped, and why:"
  grep -h ': skipped\|(skipped)' "$log" | sort -u | sed 's/^/  /'
fi
exit $status
