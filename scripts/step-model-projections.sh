#!/usr/bin/env bash
# The step model projected to GPU clusters this machine cannot run on, and checked against the
# published figures that exist (docs/strategies.md, "Step model"). Nothing here is measured: every
# step comes from a workload's FLOPs on a GPU preset at an assumed fraction of its peak (MFU), every
# allreduce from link presets.
#
#  1. Projections: ResNet-50 (batch 32), BERT-large (batch 8, seq 512) and GPT-2 medium (batch 8,
#     seq 1024) under ddp (25 MiB buckets) on H100 nodes of 8 GPUs over NVLink 4, 8 InfiniBand NDR
#     ports per node, from 1 node to 64 (N = 8..512); efficiency = one GPU's step over the step at N.
#  2. Anchor: PyTorch's DDP benchmark (benchmarks/distributed/ddp in PyTorch's repository), ResNet-50
#     at batch 32 on DGX-1 V100 machines (NVLink 2, 4x 100 Gb/s InfiniBand per machine): 0.097 s a
#     step on 1 GPU without DDP, 0.104 s with DDP on 8 and on 16 GPUs (93.3 %). The MFU is set so the
#     model's one-GPU step is the published 0.097 s; the error is of the efficiency at 8 and 16.
#  3. Anchor: nccl-tests' ring allreduce on 8 H100 over NVLink 4, about 365-370 GB/s busbw at 2-4 GiB,
#     against the nvlink4 preset's ring (alpha-beta: 2(N-1)/N of the bytes at 450 GB/s).
#
#   scripts/step-model-projections.sh [TPBENCH]      default build/tpbench
#     MFU_TRANSFORMER=0.4  MFU_RESNET=0.1 (assumptions, not measurements)  WORK=build/step-model-projections
set -euo pipefail
cd "$(dirname "$0")/.."
TPBENCH=${1:-build/tpbench}
MFU_TRANSFORMER=${MFU_TRANSFORMER:-0.4}
MFU_RESNET=${MFU_RESNET:-0.1}
WORK=${WORK:-build/step-model-projections}
[ -x "$TPBENCH" ] || { echo "step-model-projections: no $TPBENCH (build it first)" >&2; exit 2; }
for v in "$MFU_TRANSFORMER" "$MFU_RESNET"; do
  [[ $v =~ ^0?\.[0-9]+$|^1$ ]] || { echo "step-model-projections: MFU_* must be a fraction like 0.4" >&2; exit 2; }
done
case $WORK in /* | *..* | '') echo "step-model-projections: WORK must be a relative path without '..'" >&2; exit 2 ;; esac
rm -rf "$WORK"
mkdir -p "$WORK"
PY=/usr/bin/python3
NS=8,16,32,64,128,256,512
CLUSTER=(--gpu h100 --link nvlink4 --inter_link ib_ndr --gpus_per_node 8 --nics_per_node 8 --bucket_mb 25)

echo "== projections: ddp on H100 nodes of 8 (NVLink 4), 8x InfiniBand NDR per node, 1 to 64 nodes"
"$TPBENCH" predict --workload resnet50 --batch_size 32 --mfu "$MFU_RESNET" "${CLUSTER[@]}" --n_gpus 1,$NS \
  --out "$WORK/resnet50.json" | tee "$WORK/resnet50.txt"
"$TPBENCH" predict --workload bert-large --batch_size 8 --mfu "$MFU_TRANSFORMER" "${CLUSTER[@]}" --n_gpus 1,$NS \
  --out "$WORK/bert-large.json" | tee "$WORK/bert-large.txt"
"$TPBENCH" predict --workload gpt2-medium --batch_size 8 --mfu "$MFU_TRANSFORMER" "${CLUSTER[@]}" --n_gpus 1,$NS \
  --out "$WORK/gpt2-medium.json" | tee "$WORK/gpt2-medium.txt"

echo "== anchor: PyTorch's DDP benchmark, ResNet-50 at batch 32 on DGX-1 V100"
V100=(--workload resnet50 --batch_size 32 --gpu v100 --link nvlink2 --inter_link ib_edr --gpus_per_node 8
  --nics_per_node 4 --bucket_mb 25)
# The step is C / mfu + optimizer: one run at 0.1 gives C, then the MFU whose step is 0.097 s.
"$TPBENCH" predict "${V100[@]}" --mfu 0.1 --n_gpus 1 >"$WORK/v100-calibrate.txt"
MFU_V100=$("$PY" - "$WORK/v100-calibrate.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"forward ([\d.]+) ms, backward ([\d.]+) ms .*optimizer ([\d.]+) ms", text)
f, b, o = (float(x) for x in m.groups())
print(f"{0.1 * (f + b) / (97.0 - o):.5f}")
PY
)
echo "MFU for a 0.097 s step on one V100: $MFU_V100 (of 125 TFLOPS; fp32 training as the benchmark ran, so low)"
"$TPBENCH" predict "${V100[@]}" --mfu "$MFU_V100" --n_gpus 1,2,4,8,16 --out "$WORK/v100-anchor.json" |
  tee "$WORK/v100-anchor.txt"

"$PY" - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
preds = {p["n_gpus"]: p for p in json.load(open(f"{work}/v100-anchor.json"))["predictions"]}
published = {1: 0.097, 2: 0.103, 4: 0.103, 8: 0.104, 16: 0.104}  # p50 sec/iter, DDP at 1M/1G..2M/8G
print(f"{'N':>3} {'published s':>11} {'efficiency':>10} {'predicted s':>11} {'efficiency':>10} {'error':>7}")
for n in (2, 4, 8, 16):
    pub_eff = published[1] / published[n]
    p = preds[n]
    err = (p["efficiency"] - pub_eff) / pub_eff
    print(f"{n:>3} {published[n]:>11.3f} {100 * pub_eff:>9.1f}% {p['step_s']:>11.4f} {100 * p['efficiency']:>9.1f}% {100 * err:>+6.1f}%")
# nccl-tests, 8x H100 SXM over NVLink 4, NCCL_ALGO=RING: 365-370 GB/s busbw at 2-4 GiB.
bus = 450.0 / (1 + 14 * 3.4e-6 * 450e9 / 4 / 2**30 / (2 * 7 / 8))  # the preset's alpha dilutes 450 GB/s at 4 GiB
print(f"nccl-tests 8x H100 ring allreduce at 4 GiB: published 365-370 GB/s busbw, the nvlink4 preset gives "
      f"{bus:.0f} GB/s ({100 * (bus / 367.5 - 1):+.0f} %)")
PY

"$TPBENCH" report "$WORK"/resnet50.json "$WORK"/bert-large.json "$WORK"/gpt2-medium.json "$WORK"/v100-anchor.json \
  -o "$WORK/report" | tail -2
