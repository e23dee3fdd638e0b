#!/usr/bin/env bash
# Applies one planted bug (a unified diff against the repository root) to a copy of the tree, builds
# the host suite, runs it, and says KILLED (some test failed, naming them), SURVIVED (every test
# passed), STILLBORN (the mutant does not build or the patch does not apply exactly: no fuzz, so a
# patch whose context has moved is never planted somewhere else), TIMED OUT (the suite
# ran past its time) or NO TESTS (GRAPHPOOL_MUTATION_TESTS names none). The checkout itself is never
# changed. The copy and its build folder are kept between runs, so only what a mutant touches is rebuilt.
#   usage: tests/mutation/run_mutant.sh PATCH...        e.g. tests/mutation/run_mutant.sh tests/mutation/mem-*.patch
#   GRAPHPOOL_MUTATION_DIR    the copy and its build (default: /tmp/graphpool-mutation)
#   GRAPHPOOL_MUTATION_FLAGS  extra compiler flags, e.g. "-fsanitize=address" (use a separate DIR per set of flags)
# A patch whose first line is "Mutation-Flags: FLAGS" (text before the diff, which patch skips) is
# always built with FLAGS, in DIR-FLAGS: a mutant only a sanitizer sees (a race, an alignment mismatch).
#   GRAPHPOOL_MUTATION_FIRST  1: stop the suite at the first failing test (faster; names one killer)
#   GRAPHPOOL_MUTATION_TIMEOUT  seconds the suite may run (default 600); past it the mutant is TIMED OUT
#   GRAPHPOOL_MUTATION_TESTS  a Catch2 test spec (e.g. "[arena]", a test's whole name, or its start and *):
#                             run only those tests, e.g. the ones MUTATIONS.md says kill the mutant (a
#                             SURVIVED then means only that those tests pass; a spec naming no test gives
#                             NO TESTS)
# Exit status: 0 when every mutant was killed, 1 otherwise (one survived, did not build, timed out or ran no test).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
base_work=${GRAPHPOOL_MUTATION_DIR:-/tmp/graphpool-mutation}
base_flags=${GRAPHPOOL_MUTATION_FLAGS:-}
[ $# -ge 1 ] || { echo "usage: $0 PATCH..." >&2; exit 2; }
source "$root/scripts/prerequisites.sh" >/dev/null

# Copies the files git tracks (and untracked ones it does not ignore) whose content differs: a file
# restored after a mutant gets a new mtime, so the build redoes what the mutant touched.
sync_tree() {
  (cd "$root" && git ls-files -z --cached --others --exclude-standard) | while IFS= read -r -d '' file; do
    [ -f "$root/$file" ] || continue
    if ! cmp -s "$root/$file" "$work/src/$file"; then
      mkdir -p "$work/src/$(dirname "$file")"
      cp "$root/$file" "$work/src/$file"
    fi
  done
}

status=0
for patch_file in "$@"; do
  patch_path=$(cd "$(dirname "$patch_file")" && pwd)/$(basename "$patch_file")
  id=$(basename "$patch_file" .patch)
  work=$base_work
  flags=$base_flags
  patch_flags=$(sed -n '1s/^Mutation-Flags: //p' "$patch_path")
  if [ -n "$patch_flags" ]; then
    flags=$patch_flags
    work=$base_work-$(printf '%s' "$patch_flags" | tr -c 'a-zA-Z0-9' '-')
  fi
  mkdir -p "$work"
  sync_tree
  if ! patch -d "$work/src" -p1 --fuzz=0 --forward --batch --quiet <"$patch_path" >"$work/patch.log" 2>&1; then
    echo "$id STILLBORN: the patch does not apply"; cat "$work/patch.log"; status=1; continue
  fi
  if [ ! -f "$work/build/build.ninja" ]; then
    cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGRAPHPOOL_WERROR=ON \
      -DGRAPHPOOL_BUILD_EXAMPLES=OFF -DGRAPHPOOL_BUILD_BENCHMARKS=OFF -DGRAPHPOOL_BUILD_BINDINGS=OFF \
      -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$work/configure.log" 2>&1
  fi
  if ! cmake --build "$work/build" --target graphpool_host_tests >"$work/build.log" 2>&1; then
    echo "$id STILLBORN: the mutant does not build"; grep -m 3 'error' "$work/build.log" || true; status=1; continue
  fi
  suite_args=()
  [ "${GRAPHPOOL_MUTATION_FIRST:-0}" = 1 ] && suite_args+=(--abort)
  [ -n "${GRAPHPOOL_MUTATION_TESTS:-}" ] && suite_args+=("$GRAPHPOOL_MUTATION_TESTS")
  suite_status=0
  timeout "${GRAPHPOOL_MUTATION_TIMEOUT:-600}" "$work/build/tests/graphpool_host_tests" "${suite_args[@]}" \
    >"$work/$id.log" 2>&1 || suite_status=$?
  if grep -q -e '^No test cases matched' -e '^No tests ran' "$work/$id.log"; then
    # A spec that names no test runs nothing (Catch2 2 then passes, 3 fails): neither SURVIVED nor KILLED.
    echo "$id NO TESTS: GRAPHPOOL_MUTATION_TESTS='${GRAPHPOOL_MUTATION_TESTS:-}' names no test (a test's whole name, or its start and *)"
    status=1
  elif [ $suite_status = 0 ]; then
    echo "$id SURVIVED"; status=1
  elif [ $suite_status = 124 ]; then
    # timeout's own status: the suite was stopped, not failed (the test it was in reads as failed)
    echo "$id TIMED OUT: the suite ran past ${GRAPHPOOL_MUTATION_TIMEOUT:-600} s (raise GRAPHPOOL_MUTATION_TIMEOUT)"; status=1
  else
    # The console reporter frames each failing test case (and section) between two rules of dashes;
    # the first line inside is the start of the test case's name (longer names wrap onto more lines).
    killers=$(awk '/^-+$/ { inside = !inside; first = inside; next } first { print; first = 0 }' "$work/$id.log" |
      sort -u | paste -sd ';' -)
    echo "$id KILLED by: ${killers:-the suite ending abnormally (see $work/$id.log)}"
  fi
done
exit $status
