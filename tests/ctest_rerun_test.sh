#!/usr/bin/env bash
# scripts/ctest-rerun-failed.sh on a tiny ctest project of three tests: one that passes, one that
# fails only the first time it runs (flaky), one that always fails. Flaky alone: exit 0 and a
# FLAKY line naming it; with the broken one: non-zero, its output shown, no FLAKY line for it.
# CTest runs this (Scripts.CtestRerunFailed, a few seconds).
set -uo pipefail
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/src"
cat > "$TMP/src/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(rerun NONE)
enable_testing()
add_test(NAME Ok COMMAND true)
add_test(NAME Flaky COMMAND sh -c "if [ -f '$TMP/mark' ]; then exit 0; fi; touch '$TMP/mark'; exit 1")
add_test(NAME Broken COMMAND sh -c "echo broken-output; exit 1")
CMAKE
cmake -S "$TMP/src" -B "$TMP/b" >/dev/null || { echo "FAIL: cmake"; exit 1; }
FAILED=0
cd "$TMP/b" || exit 1
ctest -E Broken >/dev/null 2>&1 && { echo "FAIL: the flaky test passed its first run"; FAILED=1; }
out=$(bash "$SRC/scripts/ctest-rerun-failed.sh" . 2>&1); rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: a test that passes alone failed the rerun (rc $rc): $out"; FAILED=1; }
grep -q '^make test: FLAKY: Flaky failed beside other tests and passed alone$' <<<"$out" ||
  { echo "FAIL: no FLAKY line: $out"; FAILED=1; }
rm -f "$TMP/mark"
ctest >/dev/null 2>&1 && { echo "FAIL: the broken test passed"; FAILED=1; }
out=$(bash "$SRC/scripts/ctest-rerun-failed.sh" . 2>&1); rc=$?
[ "$rc" -ne 0 ] || { echo "FAIL: a test that fails alone too passed the rerun: $out"; FAILED=1; }
grep -q 'broken-output' <<<"$out" || { echo "FAIL: the rerun did not show the failing test's output: $out"; FAILED=1; }
grep -q 'FLAKY: Broken' <<<"$out" && { echo "FAIL: the broken test was called flaky: $out"; FAILED=1; }
# No list of failures (ctest failed before running anything): a failure, said so.
rm -f Testing/Temporary/LastTestsFailed.log
out=$(bash "$SRC/scripts/ctest-rerun-failed.sh" . 2>&1); rc=$?
[ "$rc" -ne 0 ] && grep -q 'no list of failed tests' <<<"$out" || { echo "FAIL: a missing list passed: $out"; FAILED=1; }
# Numbers that move between runs (a list discovered at test time): the first run numbers Broken 2;
# the rerun's list puts a passing test first, so Broken is 3 and number 2 is a test that passes.
# The rerun must go by name and fail.
mkdir -p "$TMP/moving"
cat > "$TMP/moving/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(moving NONE)
enable_testing()
set_directory_properties(PROPERTIES TEST_INCLUDE_FILES "$TMP/moving/tests.cmake")
CMAKE
cat > "$TMP/moving/tests.cmake" <<CMAKE
if(EXISTS "$TMP/moved")
  add_test(Early true)
endif()
add_test(Ok true)
add_test(Broken.Case/1 sh -c "echo moving-broken; exit 1")
file(WRITE "$TMP/moved" "")
CMAKE
cmake -S "$TMP/moving" -B "$TMP/mb" >/dev/null || { echo "FAIL: cmake (moving)"; exit 1; }
(cd "$TMP/mb" && ctest >/dev/null 2>&1) && { echo "FAIL: the moving project passed"; FAILED=1; }
out=$(bash "$SRC/scripts/ctest-rerun-failed.sh" "$TMP/mb" 2>&1); rc=$?
[ "$rc" -ne 0 ] || { echo "FAIL: a broken test whose number moved passed the rerun: $out"; FAILED=1; }
grep -q 'moving-broken' <<<"$out" || { echo "FAIL: the rerun did not run the broken test by name: $out"; FAILED=1; }
grep -q 'FLAKY' <<<"$out" && { echo "FAIL: a broken test was called flaky: $out"; FAILED=1; }
[ "$FAILED" -eq 0 ] && echo "ctest_rerun_test: ok"
exit "$FAILED"
