#!/usr/bin/env bash
# The same-machine A/B gate (docs/reports.md, "The A/B gate"): builds the baseline revision's
# tpbench beside this checkout's (ccache, where installed, reuses every unchanged object), runs
# both on the suite of scripts/ab-suite.sh interleaved round by round (A B, then B A, ...), so
# that the machine's mood hits both alike, and judges the timings with `tpbench compare --paired`.
# Exact traffic and accuracy stay with `make gate` (the committed baseline file).
#
#   scripts/ab-gate.sh [BASE_REV]
#     BASE_REV   default: the newest commit that changed results/baseline-cpu.json or
#                results/ab-base.txt (accepting a new level of speed is a line there, saying why)
#     ROUNDS=96 THRESHOLD=0.03 ALPHA=0.01   (their error rates: docs/reports.md, "The A/B gate")
#     OUT=build/ab-gate   rounds in OUT/A (base) and OUT/B (this checkout), verdict in OUT/verdict.md
#     TPB_AB_ALLOW_SKIP=1   a clone without the base revision (shallow) prints SKIPPED and exits 0
#     BASE_BIN=PATH   run this tpbench as the base instead of building BASE_REV
#     NEW_BIN=PATH    run this tpbench as the new side (default build/tpbench)
# Exit: 0 pass, 3 regressed (compare's), 2 bad input, 1 a build or a round failed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ab-suite.sh
ROUNDS=${ROUNDS:-96}
THRESHOLD=${THRESHOLD:-0.03}
ALPHA=${ALPHA:-0.01}
OUT=${OUT:-build/ab-gate}
NEW=${NEW_BIN:-build/tpbench}
BASE_BIN=${BASE_BIN:-}
ab_positive_int ROUNDS "$ROUNDS" 200
for b in "$NEW" ${BASE_BIN:+"$BASE_BIN"}; do
  [ -f "$b" ] && [ -x "$b" ] && [ ! -L "$b" ] || { printf 'ab-gate: %q is not an executable file (make build first)\n' "$b" >&2; exit 2; }
done
if [ -z "$BASE_BIN" ]; then
  rev=${1:-$(git log -1 --format=%H -- results/baseline-cpu.json results/ab-base.txt)}
  base=$(git rev-parse --verify --quiet "$rev^{commit}") || { printf 'ab-gate: BASE_REV %q is not a commit\n' "$rev" >&2; exit 2; }
  if [ -z "${1:-}" ] && [ "$(git rev-parse --is-shallow-repository)" = true ] &&
    [ "$base" = "$(git rev-list --max-parents=0 HEAD | head -1)" ]; then
    # In a shallow clone the oldest commit present stands in for every older one: it may not be the
    # commit that changed the baseline.
    msg="ab-gate: SKIPPED: a shallow clone cannot say which commit last changed the baseline"
    [ "${TPB_AB_ALLOW_SKIP:-0}" = 1 ] && { echo "$msg" >&2; exit 0; }
    echo "$msg (fetch the history, or give BASE_REV)" >&2
    exit 2
  fi
fi
[ -n "$OUT" ] || { echo "ab-gate: OUT is empty" >&2; exit 2; }
[ -L "$OUT" ] && { printf 'ab-gate: OUT %q is a link; refused\n' "$OUT" >&2; exit 2; }
[[ $THRESHOLD =~ ^[0-9]{0,3}\.?[0-9]{1,6}$ ]] || { printf 'ab-gate: THRESHOLD must be a plain number >= 0, got %q\n' "$THRESHOLD" >&2; exit 2; }
[[ $ALPHA =~ ^0?\.[0-9]{0,5}[1-9][0-9]{0,5}$ ]] || { printf 'ab-gate: ALPHA must be a number in (0, 1) like 0.01, got %q\n' "$ALPHA" >&2; exit 2; }

mkdir -p "$OUT"
if [ -n "$BASE_BIN" ]; then
  base_bin=$BASE_BIN
else
  # The baseline's tpbench, in a worktree of its own (its recorded commit is the base's).
  src=$OUT/base-src
  if [ "$(cat "$OUT/base-rev" 2>/dev/null)" != "$base" ] || [ ! -x "$src/build/tpbench" ]; then
    git worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
    git worktree prune
    git worktree add --detach --quiet "$src" "$base"
    echo "$base" >"$OUT/base-rev"
  fi
  export CCACHE_BASEDIR=$PWD
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  echo "ab-gate: building the base, $(git log -1 --format='%h %s' "$base" | cut -c1-100)"
  start=$(date +%s)
  { cmake -S "$src" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null &&
      cmake --build "$src/build" -j "$(nproc)" --target tpbench >"$OUT/base-build.log" 2>&1; } ||
    { tail -20 "$OUT/base-build.log" >&2; echo "ab-gate: the base did not build" >&2; exit 1; }
  echo "ab-gate: base built in $(($(date +%s) - start)) s"
  base_bin=$src/build/tpbench
fi

rm -rf "$OUT/A" "$OUT/B" "$OUT/bin"
mkdir -p "$OUT/A" "$OUT/B" "$OUT/bin/A" "$OUT/bin/B"
# Both sides run from copies at paths of one length: a binary's path is in its argv and, through
# /proc/self/exe, in every rank's, so it sits at the top of each process's stack, and paths of
# different lengths would place every stack buffer differently on the two sides. (Its code is the
# same at the same addresses for the same source wherever it was built: common/build_info.h.) The
# copies also let build/tpbench be relinked while the rounds run.
cp "$base_bin" "$OUT/bin/A/tpbench"
cp "$NEW" "$OUT/bin/B/tpbench"
declare -A bin=([A]="$OUT/bin/A/tpbench" [B]="$OUT/bin/B/tpbench")
start=$(date +%s)
for ((i = 1; i <= ROUNDS; i++)); do
  name=$(printf 'r%03d' "$i")
  order=(A B)
  ((i % 2 == 0)) && order=(B A)
  for side in "${order[@]}"; do
    ab_round "${bin[$side]}" "$OUT/$side" "$name" ||
      { tail -20 "$OUT/$side/log" >&2; echo "ab-gate: round $i of side $side failed" >&2; exit 1; }
  done
  echo "ab-gate: round $i of $ROUNDS ($(($(date +%s) - start)) s)"
done
rc=0
"$NEW" compare --paired "$OUT/A" "$OUT/B" --threshold "$THRESHOLD" --alpha "$ALPHA" || rc=$?
"$NEW" compare --paired "$OUT/A" "$OUT/B" --threshold "$THRESHOLD" --alpha "$ALPHA" --format markdown \
  >"$OUT/verdict.md" || true
echo "ab-gate: base ${BASE_BIN:-$(git rev-parse --short=12 "$base")} vs ${NEW_BIN:-this checkout}: $([ $rc = 0 ] && echo pass || echo "exit $rc"); $OUT/verdict.md"
exit $rc
