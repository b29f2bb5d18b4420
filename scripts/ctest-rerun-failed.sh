#!/usr/bin/env bash
# `make test`'s second look, after a ctest run in BUILD failed: reruns the failed tests once, one
# at a time, with their output, so that the end of a log (all a CI summary may keep) says why
# they failed, and whether they fail alone or only beside other tests.
#
#   scripts/ctest-rerun-failed.sh BUILD
#
# Exit 1 when a test fails again alone (a failure: fix it). Exit 0 when every one passes alone:
# each is named on a line "FLAKY: NAME failed beside other tests and passed alone", which stays
# in the log for the note to report and for someone to fix; their first failures' output is above
# it in the log (ctest --output-on-failure).
set -uo pipefail
BUILD=${1:?usage: ctest-rerun-failed.sh BUILD}
log="$BUILD/Testing/Temporary/LastTestsFailed.log"
if [ ! -s "$log" ] || [ -L "$log" ]; then
  echo "make test: ctest failed and left no list of failed tests ($log): nothing to rerun" >&2
  exit 1
fi
mapfile -t failed < <(cut -d: -f2- "$log")
echo "make test: ${#failed[@]} test(s) failed beside others: ${failed[*]}; rerunning each alone, once"
# By name, not by number: ctest numbers tests afresh on every run, and where the list changes
# between runs (tests discovered at test time) `--rerun-failed` reruns whichever test now holds
# the failed one's number, so a broken test once passed as FLAKY. Each name becomes an exact,
# escaped regular expression.
regex=""
for t in "${failed[@]}"; do
  regex+="${regex:+|}$(printf '%s' "$t" | sed 's/[][\\.^$*+?(){}|/]/\\&/g')"
done
(cd "$BUILD" && ctest -R "^($regex)\$" --output-on-failure --timeout 600 -j 1) >"$BUILD/rerun.log" 2>&1
rc=$?
cat "$BUILD/rerun.log"
# A name that matches no test now (renamed, gone) is not a pass.
ran=$(grep -c '^ *[0-9]*/[0-9]* Test *#' "$BUILD/rerun.log")
if [ "$ran" -ne "${#failed[@]}" ]; then
  echo "make test: the rerun ran $ran test(s), not the ${#failed[@]} that failed" >&2
  exit 1
fi
if [ "$rc" -eq 0 ]; then
  for t in "${failed[@]}"; do echo "make test: FLAKY: $t failed beside other tests and passed alone"; done
fi
exit "$rc"
