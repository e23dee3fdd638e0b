#!/usr/bin/env bash
# Fetches RAPIDS RMM for the allocation-cost benchmark: downloads the librmm-cu13 and rapids-logger
# wheels from PyPI (no install) and unpacks them into DIR (default: .deps/rmm, which CMake looks in).
# Then configure again; graphpool_bench_allocation_cost gains RMM's pool and arena rows.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.deps/rmm}
mkdir -p "$dir/wheels"
python3 -m pip download --quiet --no-deps --dest "$dir/wheels" "librmm-cu13==26.*" "rapids-logger==0.3.*"
for wheel in "$dir"/wheels/*.whl; do
  python3 -m zipfile -e "$wheel" "$dir"
done
rm -rf "$dir/wheels"
echo "RMM unpacked in $dir: $(cat "$dir/librmm/VERSION" 2>/dev/null || echo unknown version)"
