#!/usr/bin/env bash
# The step model against measured steps on this machine (docs/strategies.md, "Step model"): fits
# the allreduces ddp and ring_all_reduce reduce with (library, ring) on N = 2 and 3, measures each
# WORKLOAD's ddp (at each BUCKETS cap) and ring_all_reduce steps at N = 2, 3, 4, asks
# `tpbench predict` for the same points, and prints predicted against measured step time per
# point (wall time per step of every epoch after the first, median) with the median absolute
# error per workload and over all, and over the N = 4 points alone (predicted from fits on 2, 3).
# The predictions are records too (predicted-*.json); `tpbench report` draws them against the runs
# in WORK/report (chart step_model, and the Step model table).
#
#   scripts/step-model-check.sh [TPBENCH]     default build/tpbench
#     WORKLOADS="mlp resnet:depth=10:width=16:image=mnist:norm=group gpt:layers=2:hidden=128"
#     BUCKETS=0.5,2   EPOCHS=3   STEPS=40 (per rank and epoch at N = 2, batch 64)   WORK=build/step-model-check
set -euo pipefail
cd "$(dirname "$0")/.."
TPBENCH=${1:-build/tpbench}
WORKLOADS=${WORKLOADS:-"mlp resnet:depth=10:width=16:image=mnist:norm=group gpt:layers=2:hidden=128"}
BUCKETS=${BUCKETS:-0.5,2}
EPOCHS=${EPOCHS:-3}
STEPS=${STEPS:-40}
WORK=${WORK:-build/step-model-check}
[ -x "$TPBENCH" ] || { echo "step-model-check: no $TPBENCH (build it first)" >&2; exit 2; }
[[ $BUCKETS =~ ^[0-9.]+(,[0-9.]+)*$ ]] || { echo "step-model-check: BUCKETS must read like 0.5,2" >&2; exit 2; }
[[ $EPOCHS =~ ^[2-9]$ ]] || { echo "step-model-check: EPOCHS must be 2..9 (the first is not counted)" >&2; exit 2; }
[[ $STEPS =~ ^[1-9][0-9]{0,3}$ ]] || { echo "step-model-check: STEPS must be 1..9999" >&2; exit 2; }
case $WORK in /* | *..* | '') echo "step-model-check: WORK must be a relative path without '..'" >&2; exit 2 ;; esac
rm -rf "$WORK"
mkdir -p "$WORK"
PY=/usr/bin/python3

echo "step-model-check: fitting allreduce library and ring on N = 2, 3"
"$TPBENCH" allreduce --algos library,ring --n_gpus 2,3 --bytes 8,64K,256K,1M,4M,16M --iters 20 \
  --out "$WORK/fits.json" >"$WORK/fits.log" 2>&1
batch=64
size=$((STEPS * 2 * batch))
i=0
for w in $WORKLOADS; do
  i=$((i + 1))
  echo "step-model-check: $w: measuring ddp and ring_all_reduce at N = 2, 3, 4, and predicting them"
  "$TPBENCH" sweep --strategies ddp,ring_all_reduce --workload "$w" --n_gpus 2,3,4 --bucket_mb "$BUCKETS" \
    --batch_size $batch --epochs "$EPOCHS" --train_size $size --test_size 64 \
    --out "$WORK/measured-$i.json" >"$WORK/measured-$i.log" 2>&1
  "$TPBENCH" predict --workload "$w" --batch_size $batch --strategy ddp --collectives "$WORK/fits.json" \
    --n_gpus 2,3,4 --bucket_mb "$BUCKETS" --out "$WORK/predicted-$i-ddp.json" >"$WORK/predicted-$i-ddp.txt" 2>&1
  "$TPBENCH" predict --workload "$w" --batch_size $batch --strategy ring_all_reduce \
    --collectives "$WORK/fits.json" --n_gpus 2,3,4 --out "$WORK/predicted-$i-ring_all_reduce.json" \
    >"$WORK/predicted-$i-ring_all_reduce.txt" 2>&1
done

"$PY" - "$WORK" $WORKLOADS <<'PY'
import json, re, statistics, sys
work, workloads = sys.argv[1], sys.argv[2:]
print(f"{'workload':<48} {'strategy':<16} {'N':>2} {'bucket':>6} {'predicted_ms':>12} {'measured_ms':>11} {'error':>7}")
errors, at4, per = [], [], {}
for i, w in enumerate(workloads, 1):
    measured = {}
    for r in json.load(open(f"{work}/measured-{i}.json"))["runs"]:
        c = r["config"]
        if r.get("status") != "ok":
            continue
        n = c["n_gpus"]
        # schema 2: an epoch's steps count each optimizer step of the model once (report's perStepS)
        steps = [e["wall_s"] / e["steps"] for e in r["epochs"][1:] if e.get("steps")]
        bucket = f"{c['bucket_mb']:g}" if c["strategy"] == "ddp" else "-"
        measured[(c["strategy"], n, bucket)] = statistics.median(steps) * 1e3
    for s in ("ddp", "ring_all_reduce"):
        for p in json.load(open(f"{work}/predicted-{i}-{s}.json"))["predictions"]:
            n, pred = p["n_gpus"], 1e3 * p["step_s"]
            bucket = f"{p['bucket_mb']:g}" if p["bucket_mb"] is not None else "-"
            meas = measured.get((s, n, bucket))
            if meas is None:
                continue
            err = (pred - meas) / meas
            errors.append(abs(err))
            per.setdefault(w, []).append(abs(err))
            if n == 4:
                at4.append(abs(err))
            print(f"{w:<48} {s:<16} {n:>2} {bucket:>6} {pred:>12.3f} {meas:>11.3f} {100 * err:>+6.1f}%")
for w, e in per.items():
    print(f"median |error| {w}: {100 * statistics.median(e):.1f} % over {len(e)} points")
if errors:
    print(f"median |error| over all: {100 * statistics.median(errors):.1f} % ({len(errors)} points); "
          f"at N = 4 (fitted on 2, 3): {100 * statistics.median(at4):.1f} % ({len(at4)} points)")
PY

"$TPBENCH" report "$WORK"/measured-*.json "$WORK"/predicted-*.json -o "$WORK/report" >"$WORK/report.log" 2>&1 &&
  echo "step-model-check: predicted against measured: $WORK/report/index.html (chart step_model)"
