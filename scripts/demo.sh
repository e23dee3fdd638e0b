#!/usr/bin/env bash
# Builds and runs the demo: the runtime example (examples/runtime), a pipeline rank of four CP variants
# run five ways on the GPU, with its memory table and a bitwise check against eager; without a GPU it
# says so and prints the plan it would use. Then the planner's command line, graphpool-plan, prints a
# plan (host only).
#   GRAPHPOOL_BUILD_DIR  build folder (default: build)
#   CMAKE_ARGS           extra configure arguments
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
GRAPHPOOL_NEED_CATCH2=0 source "$root/scripts/prerequisites.sh"  # the demo needs no test framework
build=${GRAPHPOOL_BUILD_DIR:-$root/build}
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" --target graphpool_runtime graphpool_plan >/dev/null
"$build/examples/graphpool_runtime"
echo
echo "graphpool-plan: $build/examples/graphpool-plan (--help lists its options); a plan for PP 4 rank 0, VPP 2:"
"$build/examples/graphpool-plan" --schedule pp=4,rank=0,microbatches=8,vpp=2 --layers 2 \
  --branch cp1:64MiB:16MiB --branch cp2:32MiB:8MiB
