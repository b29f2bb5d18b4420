#!/usr/bin/env bash
# The straggler experiment as a benchmark (docs/measurements.md, "Stragglers"): at N = 2, 3 and 4,
# RUNS runs of ring_all_reduce with rank 1 slowed by FACTOR and RUNS without, interleaved per N;
# prints how often the console named rank 1 (slowed) and how often it named anyone (not slowed),
# and how often it said instead that a rank waited for a core ("! core wait:", not slowed).
#
#   scripts/straggler-rates.sh [TPBENCH]     TPBENCH default build/tpbench; RUNS=20 FACTOR=1.5
set -euo pipefail
cd "$(dirname "$0")/.."
TPBENCH=${1:-build/tpbench}
RUNS=${RUNS:-20}
FACTOR=${FACTOR:-1.5}
[ -x "$TPBENCH" ] || { echo "straggler-rates: no $TPBENCH (build it first)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf '%-3s %-22s %-24s %s\n' N "slowed: rank 1 named" "not slowed: none named" "not slowed: core wait said"
for n in 2 3 4; do
  named=0 quiet=0 waited=0
  for ((i = 0; i < RUNS; i++)); do
    for slowed in 1 0; do
      args=(run --strategy ring_all_reduce --n_gpus "$n" --epochs 3 --train_size 2048 --test_size 100
            --seed $((i + 1)) --out "$work/r.json" --overwrite)
      [ "$slowed" = 1 ] && args+=(--slow_ranks "1:$FACTOR")
      out=$("$TPBENCH" "${args[@]}" 2>/dev/null) || { echo "straggler-rates: a run failed (N=$n)" >&2; exit 1; }
      if [ "$slowed" = 1 ]; then
        grep -q 'straggler: rank 1 ' <<<"$out" && named=$((named + 1))
      else
        grep -q 'straggler:' <<<"$out" || quiet=$((quiet + 1))
        grep -q 'core wait:' <<<"$out" && waited=$((waited + 1))
      fi
    done
  done
  printf '%-3s %-22s %-24s %s\n' "$n" "$named of $RUNS" "$quiet of $RUNS" "$waited of $RUNS"
done
