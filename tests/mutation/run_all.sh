#!/usr/bin/env bash
# Runs every planted bug under tests/mutation (or the patches given) through run_mutant.sh and prints
# one line per mutant, then the KILLED / SURVIVED / STILLBORN / TIMED OUT / NO TESTS counts per layer and
# in total.
#   usage: tests/mutation/run_all.sh [PATCH...]
#   GRAPHPOOL_MUTATION_JOBS  mutants run at once, each in its own copy (default 1; a copy is ~150 MB)
#   GRAPHPOOL_MUTATION_DIR   prefix of the copies (default /tmp/graphpool-mutation; job k uses PREFIX-jobk)
# Exit status: 0 when every mutant was killed, 1 otherwise.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
jobs=${GRAPHPOOL_MUTATION_JOBS:-1}
prefix=${GRAPHPOOL_MUTATION_DIR:-/tmp/graphpool-mutation}
if [ $# -gt 0 ]; then patches=("$@"); else patches=("$here"/*.patch); fi
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# Job k takes patches k, k + jobs, k + 2 jobs, ...: each job keeps its own copy and build folder.
for ((k = 0; k < jobs; ++k)); do
  mine=()
  for ((i = k; i < ${#patches[@]}; i += jobs)); do mine+=("${patches[i]}"); done
  [ ${#mine[@]} -gt 0 ] || continue
  GRAPHPOOL_MUTATION_DIR=$prefix-job$k "$here/run_mutant.sh" "${mine[@]}" >"$results/job$k.log" 2>&1 &
done
wait

# run_mutant.sh prints "ID KILLED by: ...", "ID SURVIVED", "ID STILLBORN: ..." (then details), "ID TIMED OUT: ..."
# or "ID NO TESTS: ..." (GRAPHPOOL_MUTATION_TESTS named no test).
grep -h -E '^[a-z]+-[0-9]+ (KILLED|SURVIVED|STILLBORN|TIMED OUT|NO TESTS)' "$results"/job*.log | sort >"$results/all"
cat "$results/all"
echo
echo "summary:"
status=0
for layer in $(cut -d- -f1 "$results/all" | sort -u) total; do
  pattern='.'
  [ "$layer" = total ] || pattern="^$layer-"
  killed=$(grep -E "$pattern" "$results/all" | grep -c ' KILLED')
  survived=$(grep -E "$pattern" "$results/all" | grep -c ' SURVIVED')
  stillborn=$(grep -E "$pattern" "$results/all" | grep -c ' STILLBORN')
  timed_out=$(grep -E "$pattern" "$results/all" | grep -c ' TIMED OUT')
  no_tests=$(grep -E "$pattern" "$results/all" | grep -c ' NO TESTS')
  printf '  %-6s %3d mutants: %3d KILLED, %3d SURVIVED, %3d STILLBORN, %3d TIMED OUT, %3d NO TESTS\n' "$layer" \
    $((killed + survived + stillborn + timed_out + no_tests)) "$killed" "$survived" "$stillborn" "$timed_out" "$no_tests"
  [ "$layer" = total ] && [ $((survived + stillborn + timed_out + no_tests)) -gt 0 ] && status=1
done
missing=$((${#patches[@]} - $(wc -l <"$results/all")))
[ "$missing" -eq 0 ] || { echo "  $missing mutant(s) gave no result; see the job logs"; status=1; }
exit $status
