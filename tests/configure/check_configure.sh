#!/usr/bin/env bash
# Configures graphpool as a new user would: without Catch2 (tests default to OFF, or a clear error when
# asked for), and as a subdirectory of a parent project (whose cache graphpool must leave alone).
#   check_configure.sh CMAKE SOURCE_DIR WORK_DIR [GENERATOR]
set -uo pipefail
cmake=$1 source=$2 work=$3 generator=${4:-}
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }
rm -rf "$work" && mkdir -p "$work"
gen=()
[ -n "$generator" ] && gen=(-G "$generator")

out=$("$cmake" -S "$source" -B "$work/no-catch2" "${gen[@]}" -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=TRUE 2>&1) \
  || fail "a plain configure without Catch2 failed: $out"
[[ "$out" == *"Catch2 not found, so GRAPHPOOL_BUILD_TESTS defaults to OFF"* ]] || fail "no STATUS line about Catch2: $out"
grep -q "^GRAPHPOOL_BUILD_TESTS:BOOL=OFF" "$work/no-catch2/CMakeCache.txt" || fail "tests are not OFF without Catch2"

out=$("$cmake" -S "$source" -B "$work/tests-on" "${gen[@]}" -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=TRUE \
  -DGRAPHPOOL_BUILD_TESTS=ON 2>&1) && fail "GRAPHPOOL_BUILD_TESTS=ON without Catch2 configured"
flat=$(tr -s ' \n' '  ' <<<"$out")  # CMake wraps a message's lines
[[ "$flat" == *"Catch2 (2.13 or 3.x) was not found"*"-DGRAPHPOOL_BUILD_TESTS=OFF"* ]] \
  || fail "GRAPHPOOL_BUILD_TESTS=ON without Catch2 did not name the option: $out"

out=$("$cmake" -S "$(dirname "$0")/parent" -B "$work/parent" "${gen[@]}" -DGRAPHPOOL_SOURCE_DIR="$source" 2>&1) \
  || fail "the parent project failed to configure: $out"
if grep -q "^CMAKE_CUDA_ARCHITECTURES" "$work/parent/CMakeCache.txt" 2>/dev/null; then
  fail "the parent's cache holds $(grep '^CMAKE_CUDA_ARCHITECTURES' "$work/parent/CMakeCache.txt")"
fi
[[ "$out" == *"graphpool_parent: the cache holds no CMAKE_CUDA_ARCHITECTURES"* ]] || fail "parent project: $out"

echo "configure checks: $failures failure(s)"
[ $failures -eq 0 ]
