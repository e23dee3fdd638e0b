#!/usr/bin/env bash
# Checks that every planted bug under tests/mutation applies to the tree exactly (no fuzz, no offset
# beyond what context pins): a patch left behind by a change to the code it plants in must be re-made,
# or run_mutant.sh reports it STILLBORN. Changes nothing (patch --dry-run). Exit status: 0 when all apply.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v patch >/dev/null 2>&1 || { echo "patch not found; install it (Debian: apt-get install patch)" >&2; exit 2; }
failed=0
count=0
for p in "$root"/tests/mutation/*.patch; do
  count=$((count + 1))
  if ! out=$(patch -d "$root" -p1 --fuzz=0 --forward --batch --dry-run <"$p" 2>&1); then
    echo "$(basename "$p" .patch): does not apply exactly; re-make it against the current code"
    echo "$out" | sed 's/^/  /'
    failed=$((failed + 1))
  fi
done
echo "$count mutation patch(es), $failed not applying"
[ "$failed" -eq 0 ]
