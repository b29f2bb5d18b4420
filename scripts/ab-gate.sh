#!/usr/bin/env bash
# The same-machine A/B gate (docs/reports.md, "The A/B gate"): builds the baseline revision's
# tpbench beside this checkout's (ccache, where installed, reuses every unchanged object), runs
# both on the suite of scripts/ab-suite.sh interleaved round by round (A B, then B A, ...), so
# that the machine's mood hits both alike, and judges the timings with `tpbench compare --paired`.
# Exact traffic and accuracy stay with `make gate` (the committed baseline file).
#
#   scripts/ab-gate.sh [BASE_REV]
#     BASE_REV   default: the commit that last changed results/baseline-cpu.json
#     ROUNDS=12 THRESHOLD=0.05 ALPHA=0.01   (their error rates: docs/reports.md)
#     OUT=build/ab-gate   rounds in OUT/A (base) and OUT/B (this checkout), verdict in OUT/verdict.md
# Exit: 0 pass, 3 regressed (compare's), 2 bad input, 1 a build or a round failed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ab-suite.sh
ROUNDS=${ROUNDS:-12}
THRESHOLD=${THRESHOLD:-0.05}
ALPHA=${ALPHA:-0.01}
OUT=${OUT:-build/ab-gate}
NEW=build/tpbench
ab_positive_int ROUNDS "$ROUNDS" 200
rev=${1:-$(git log -1 --format=%H -- results/baseline-cpu.json)}
base=$(git rev-parse --verify --quiet "$rev^{commit}") || { printf 'ab-gate: BASE_REV %q is not a commit\n' "$rev" >&2; exit 2; }
[ -x "$NEW" ] || { echo "ab-gate: no $NEW (make build first)" >&2; exit 2; }
case $OUT in /* | *..* | '') echo "ab-gate: OUT must be a relative path without '..'" >&2; exit 2 ;; esac
[ -L "$OUT" ] && { echo "ab-gate: OUT $OUT is a link; refused" >&2; exit 2; }
[[ $THRESHOLD =~ ^[0-9]{0,3}\.?[0-9]{1,6}$ ]] || { printf 'ab-gate: THRESHOLD must be a plain number >= 0, got %q\n' "$THRESHOLD" >&2; exit 2; }
[[ $ALPHA =~ ^0?\.[0-9]{0,5}[1-9][0-9]{0,5}$ ]] || { printf 'ab-gate: ALPHA must be a number in (0, 1) like 0.01, got %q\n' "$ALPHA" >&2; exit 2; }

# The baseline's tpbench, in a worktree of its own (its recorded commit is the base's).
mkdir -p "$OUT"
src=$OUT/base-src
if [ "$(cat "$OUT/base-rev" 2>/dev/null)" != "$base" ] || [ ! -x "$src/build/tpbench" ]; then
  git worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
  git worktree prune
  git worktree add --detach --quiet "$src" "$base"
  echo "$base" >"$OUT/base-rev"
fi
export CCACHE_BASEDIR=$PWD
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
echo "ab-gate: building the base, $(git log -1 --format='%h %s' "$base" | cut -c1-100)"
start=$(date +%s)
{ cmake -S "$src" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null &&
    cmake --build "$src/build" -j "$(nproc)" --target tpbench >"$OUT/base-build.log" 2>&1; } ||
  { tail -20 "$OUT/base-build.log" >&2; echo "ab-gate: the base did not build" >&2; exit 1; }
echo "ab-gate: base built in $(($(date +%s) - start)) s"

rm -rf "$OUT/A" "$OUT/B"
mkdir -p "$OUT/A" "$OUT/B"
declare -A bin=([A]="$src/build/tpbench" [B]="$NEW")
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
echo "ab-gate: base $(git rev-parse --short=12 "$base") vs this checkout: $([ $rc = 0 ] && echo pass || echo "exit $rc"); $OUT/verdict.md"
exit $rc
