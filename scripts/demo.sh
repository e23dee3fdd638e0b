#!/usr/bin/env bash
# Builds and runs the demo: four CP branches of one slot share one arena (on the GPU when one is
# present, on host memory otherwise).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/prerequisites.sh"
build=${GRAPHPOOL_BUILD_DIR:-$root/build}
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" --target graphpool_demo >/dev/null
"$build/examples/graphpool_demo"
