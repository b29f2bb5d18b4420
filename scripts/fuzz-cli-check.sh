#!/usr/bin/env bash
# The fuzz targets call the readers in-process; this checks the same inputs through the real
# command line: every reader's seeds (tests/fuzz/corpus/<name>/) and a random sample of what the
# fuzzers kept ($FUZZ_BUILD/corpus/<name>/) are given to `compare`, `report`, `model`, `predict` and `import`, and each
# run must end with exit 0 (compare: 3, a regression, too) or refuse with exit 2 and exactly one
# line on stderr, without control characters, that names the file. Exit 1 (an error, not a
# refusal), a crash or a refusal naming no file is a failure of this check.
#
#   scripts/fuzz-cli-check.sh [TPBENCH]    default build/tpbench; FUZZ_CLI_SAMPLE=5 per reader
set -uo pipefail
cd "$(dirname "$0")/.."

TPBENCH=${1:-build/tpbench}
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
SAMPLE=${FUZZ_CLI_SAMPLE:-5}
[ -x "$TPBENCH" ] || { echo "fuzz-cli-check: no $TPBENCH (build tpbench first)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/tpb-fuzz-cli.XXXXXX")
trap 'rm -rf "$work"' EXIT

checked=0 failed=0

# Seeds and a sample of the kept corpus of reader $1, one path a line.
inputs() {
  find "tests/fuzz/corpus/$1" -type f 2>/dev/null
  [ -d "$FUZZ_BUILD/corpus/$1" ] && find "$FUZZ_BUILD/corpus/$1" -type f | shuf -n "$SAMPLE"
}

# Splits a two-file input at "\n----\n" (tests/fuzz/fuzz_util.h) into $work/a.json and $work/b.json;
# without a separator b.json is a copy of a.json.
split_input() {
  python3 - "$1" "$work/a.json" "$work/b.json" <<'EOF'
import sys
parts = open(sys.argv[1], "rb").read().split(b"\n----\n", 1)
for i, out in enumerate(sys.argv[2:]):
    open(out, "wb").write(parts[min(i, len(parts) - 1)])
EOF
}

# expect FILE... -- ARGS...: runs tpbench ARGS; exit 0/3 passes, exit 2 passes when stderr is one
# line naming one of FILE...
expect() {
  local names=() arg
  while [ "$1" != "--" ]; do names+=("$1"); shift; done
  shift
  rm -rf "$work/out"
  "$TPBENCH" "$@" > /dev/null 2> "$work/err"
  local rc=$? why=""
  checked=$((checked + 1))
  case $rc in
    0|3) return 0 ;;
    2)
      [ "$(wc -l < "$work/err")" -eq 1 ] || why="exit 2 with $(wc -l < "$work/err") lines on stderr, not one"
      tr -d '\n' < "$work/err" | LC_ALL=C grep -aq '[[:cntrl:]]' && why="exit 2 with a control character on stderr"
      if [ -z "$why" ]; then
        why="exit 2 naming none of ${names[*]}"
        for arg in "${names[@]}"; do grep -qF -- "$arg" "$work/err" && why=""; done
      fi ;;
    *) why="exit $rc" ;;
  esac
  [ -z "$why" ] && return 0
  failed=$((failed + 1))
  echo "FAIL: tpbench $* : $why"
  head -3 "$work/err" | sed 's/^/    /'
}

while read -r f; do
  cp "$f" "$work/in.json"
  expect "$work/in.json" -- compare "$work/in.json" "$work/in.json"
  expect "$work/in.json" -- report "$work/in.json" -o "$work/out" --gnuplot ""
  expect "$work/in.json" -- model "$work/in.json"
  expect "$work/in.json" -- predict --collectives "$work/in.json" --algo ring --n_gpus 2 --steps 1 --warmup 0
done < <(inputs results; inputs model)

while read -r f; do
  split_input "$f"
  expect "$work/a.json" "$work/b.json" -- compare "$work/a.json" "$work/b.json"
done < <(inputs compare)

while read -r f; do
  cp "$f" "$work/in.json"
  expect "$work/in.json" -- report --trace "$work/in.json" -o "$work/out" --gnuplot ""
done < <(inputs trace)

while read -r f; do
  split_input "$f"
  expect "$work/a.json" "$work/b.json" -- report "$work/a.json" --trace "$work/b.json" -o "$work/out" --gnuplot ""
done < <(inputs report)

while read -r f; do
  cp "$f" "$work/in.log"
  rm -f "$work/imported.json"
  expect "$work/in.log" -- import "$work/in.log" --out "$work/imported.json"
  # What import wrote, every other reader must take.
  if [ -f "$work/imported.json" ]; then
    expect "$work/imported.json" -- compare "$work/imported.json" "$work/imported.json"
    expect "$work/imported.json" -- report "$work/imported.json" -o "$work/out" --gnuplot ""
    expect "$work/imported.json" -- model "$work/imported.json"
  fi
done < <(inputs nccl_tests)

echo "fuzz-cli-check: $checked commands, $failed failed"
[ "$failed" -eq 0 ]
