#!/usr/bin/env bash
# Every suite that tests/CMakeLists.txt runs as grouped shards still exists: a renamed or removed
# suite would otherwise drop out of a shard's filter without a word, its cases run by no one.
#
#   tests/grouped_suites_test.sh TPB_TESTS SUITE...
set -uo pipefail
bin=${1:?usage: grouped_suites_test.sh TPB_TESTS SUITE...}
shift
listing=$("$bin" --gtest_list_tests) || { echo "grouped_suites_test: $bin --gtest_list_tests failed" >&2; exit 1; }
missing=0
for suite in "$@"; do
  if ! grep -qxF "$suite." <<<"$listing"; then
    echo "grouped_suites_test: suite $suite is grouped in tests/CMakeLists.txt but $bin has no such suite" >&2
    missing=1
  fi
done
[ "$missing" -eq 0 ] && echo "grouped_suites_test: all $# grouped suites exist"
exit "$missing"
