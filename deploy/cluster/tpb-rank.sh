#!/bin/bash
# deploy/cluster/tpb-rank.sh — a Kubernetes pod's entrypoint: starts this pod's ranks of a tpbench
# job with the variables tpbench takes from torchrun (RANK, WORLD_SIZE, LOCAL_RANK,
# LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), worked out from what
# an Indexed Job or a Kubeflow PyTorchJob gives the pod. Every rank runs the command given:
#
#   tpb-rank.sh tpbench sweep --strategies ddp --out /results/x.json
#
# The pod (node) index: TPB_NODE_RANK, else JOB_COMPLETION_INDEX (Indexed Job), else
# PET_NODE_RANK, else RANK (PyTorchJob, where RANK is the pod's index). Pods: TPB_NNODES, else
# PET_NNODES, else WORLD_SIZE / ranks per pod (PyTorchJob). Ranks per pod: TPB_NPROC_PER_NODE,
# else PET_NPROC_PER_NODE, else 1. Rank = index × ranks per pod + local rank.
#
# MASTER_ADDR names pod 0 (the headless Service's name for it); pod 0's own ranks use TPB_POD_IP
# (the downward API's status.podIP) where set, so that its store listens on the pod's address
# whatever its name resolves to there (an older PyTorchJob operator sets MASTER_ADDR=localhost on
# the master); without it, pod 0 of several refuses a loopback MASTER_ADDR. The other pods wait up to TPB_RESOLVE_TIMEOUT seconds (default 300) for the name
# to resolve: a Service's DNS record appears only once pod 0 exists.
#
# TPB_JOB_SECRET_FILE names the job's secret as a file (the Secret mounted as a volume): its
# content is handed to the ranks as TPB_JOB_SECRET, so the secret never sits in the pod's spec.
#
# With TPB_RESULTS_TO_LOG=1, pod 0 prints the --out file to its log after the run, between
# "==> tpbench results: FILE <==" and "==> end of tpbench results <==" (for clusters without a
# ReadWriteMany volume). SIGTERM (the pod's deletion) reaches every rank. Exit status: the first
# failing rank's, 2 on bad settings (one line saying which).
set -uo pipefail

refuse() {
  echo "tpb-rank.sh: $*" >&2
  exit 2
}
# A plain decimal number (no sign, no leading zero), as tpbench reads its variables.
whole() { [[ "$2" =~ ^(0|[1-9][0-9]{0,6})$ ]] || refuse "$1='$2' is not a whole number"; }

[ "$#" -gt 0 ] || refuse "no command given (tpb-rank.sh tpbench sweep ...)"

nproc=${TPB_NPROC_PER_NODE:-${PET_NPROC_PER_NODE:-1}}
whole "ranks per pod (TPB_NPROC_PER_NODE or PET_NPROC_PER_NODE)" "$nproc"
[ "$nproc" -ge 1 ] || refuse "ranks per pod (TPB_NPROC_PER_NODE) must be at least 1"
node=${TPB_NODE_RANK:-${JOB_COMPLETION_INDEX:-${PET_NODE_RANK:-${RANK:-}}}}
[ -n "$node" ] || refuse "no pod index: set TPB_NODE_RANK, or run as an Indexed Job (JOB_COMPLETION_INDEX) or a PyTorchJob"
whole "the pod index (TPB_NODE_RANK, JOB_COMPLETION_INDEX, PET_NODE_RANK or RANK)" "$node"
if [ -n "${TPB_NNODES:-${PET_NNODES:-}}" ]; then
  nnodes=${TPB_NNODES:-$PET_NNODES}
  whole "the pod count (TPB_NNODES or PET_NNODES)" "$nnodes"
elif [ -n "${WORLD_SIZE:-}" ]; then
  whole WORLD_SIZE "$WORLD_SIZE"
  [ $((WORLD_SIZE % nproc)) -eq 0 ] || refuse "WORLD_SIZE=$WORLD_SIZE is not a multiple of $nproc ranks per pod"
  nnodes=$((WORLD_SIZE / nproc))
else
  refuse "no pod count: set TPB_NNODES (the Job's completions)"
fi
[ "$nnodes" -ge 1 ] && [ "$node" -lt "$nnodes" ] || refuse "pod index $node is not below the pod count $nnodes"

master=${MASTER_ADDR:-}
[ -n "$master" ] || refuse "MASTER_ADDR is not set: the name of pod 0 (<job>-0.<service> for an Indexed Job)"
port=${MASTER_PORT:-29500}
[[ "$port" =~ ^[1-9][0-9]{0,4}$ ]] && [ "$port" -le 65535 ] || refuse "MASTER_PORT='$port' is not a port (1..65535)"
if [ "$node" -eq 0 ] && [ -n "${TPB_POD_IP:-}" ]; then
  master=$TPB_POD_IP
elif [ "$node" -eq 0 ] && [ "$nnodes" -gt 1 ]; then
  case "$master" in
    localhost | 127.* | ::1) refuse "pod 0's MASTER_ADDR=$master is a loopback address the other pods cannot reach: give the pod its address in TPB_POD_IP (fieldRef status.podIP)" ;;
  esac
elif [ "$node" -gt 0 ] && command -v getent >/dev/null; then
  wait_s=${TPB_RESOLVE_TIMEOUT:-300}
  whole TPB_RESOLVE_TIMEOUT "$wait_s"
  deadline=$((SECONDS + wait_s))
  until getent hosts "$master" >/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || refuse "MASTER_ADDR=$master did not resolve within $wait_s s (TPB_RESOLVE_TIMEOUT): is pod 0 running, and the Service named like the pods' subdomain?"
    sleep 1
  done
fi

if [ -n "${TPB_JOB_SECRET_FILE:-}" ]; then
  # A Secret's volume holds links to its current version (..data/): -f and -r follow them.
  [ -f "$TPB_JOB_SECRET_FILE" ] && [ -r "$TPB_JOB_SECRET_FILE" ] ||
    refuse "TPB_JOB_SECRET_FILE=$TPB_JOB_SECRET_FILE is not a file this user can read (the Secret's volume, defaultMode 0440 with the pod's fsGroup)"
  [ "$(stat -L -c %s "$TPB_JOB_SECRET_FILE")" -le 4096 ] || refuse "TPB_JOB_SECRET_FILE=$TPB_JOB_SECRET_FILE is over 4096 bytes"
  TPB_JOB_SECRET=$(<"$TPB_JOB_SECRET_FILE")
  [ -n "$TPB_JOB_SECRET" ] || refuse "TPB_JOB_SECRET_FILE=$TPB_JOB_SECRET_FILE is empty"
  export TPB_JOB_SECRET
  unset TPB_JOB_SECRET_FILE
fi

# The launcher's pieces tpbench must not see: PyTorchJob's RANK/WORLD_SIZE count pods, not ranks.
unset PET_NODE_RANK PET_NNODES PET_NPROC_PER_NODE
pids=()
forward() { [ "${#pids[@]}" -eq 0 ] || kill -TERM "${pids[@]}" 2>/dev/null; }
trap forward TERM INT
for ((local_rank = 0; local_rank < nproc; local_rank++)); do
  RANK=$((node * nproc + local_rank)) WORLD_SIZE=$((nnodes * nproc)) \
    LOCAL_RANK=$local_rank LOCAL_WORLD_SIZE=$nproc GROUP_RANK=$node GROUP_WORLD_SIZE=$nnodes \
    MASTER_ADDR=$master MASTER_PORT=$port "$@" &
  pids+=($!)
done
# The first rank to fail ends this pod's others at once (srun -K's part; the Job's backoffLimit
# 0 ends the other pods). Polled: `wait -n` cannot say which rank ended before bash 5.1.
status=0
running=("${pids[@]}")
while [ "${#running[@]}" -gt 0 ]; do
  still=()
  for pid in "${running[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      still+=("$pid")
      continue
    fi
    wait "$pid"
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then
      status=$rc
      forward
    fi
  done
  running=("${still[@]}")
  [ "${#running[@]}" -eq 0 ] || sleep 0.2
done

if [ "$node" -eq 0 ] && [ "${TPB_RESULTS_TO_LOG:-0}" = 1 ]; then
  out=
  prev=
  for a in "$@"; do
    [ "$prev" = --out ] && out=$a
    case "$a" in --out=*) out=${a#--out=} ;; esac
    prev=$a
  done
  if [ -n "$out" ] && [ -f "$out" ]; then
    echo "==> tpbench results: $out <=="
    cat "$out"
    echo "==> end of tpbench results <=="
  fi
fi
exit "$status"
