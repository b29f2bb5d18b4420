#!/usr/bin/env bash
# tests/slurm_test.sh — tpbench and deploy/cluster/tpbench-sweep.sbatch under a real Slurm:
# Debian's slurm-wlm (slurmctld, slurmd) and munge, started by this test on this machine as one
# node with as many CPUs as it has, on ports of their own, every file in a temporary folder, and
# stopped by their PIDs at the end.
#   - the batch script, unmodified: plain `sbatch` (one task), and `sbatch --ntasks-per-node=2`;
#     each writes its results file where docs/launchers.md says, read by `tpbench compare`, naming
#     the launcher (slurm) and the world size;
#   - `srun -n 2 tpbench allreduce` plain, with `--mpi=pmi2` and with `--mpi=pmix`, and inside
#     `salloc -n 2`;
#   - `scancel` of a running sweep: its ranks end, and the file keeps the points that finished;
#   - bad settings: the batch script's and tpbench's own refusal, exit 2 and one line.
# Two nodes would need a second slurmd in a network namespace of its own; not done here (the
# several-host paths run with tpbench's own launcher in two network namespaces, tests/netns_test.cc).
#
#   tests/slurm_test.sh TPBENCH      (TPB_SBATCH_SCRIPT: another copy of the batch script)
#
# CTest runs this (Scripts.Slurm). Exit 0 when every case passes, 1 otherwise, 77 (skipped, and
# said on stderr) where Slurm's or munge's programs are missing or the test is not root.
set -uo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TPBENCH="$(realpath "${1:?usage: slurm_test.sh TPBENCH}")"
SBATCH_SCRIPT=$(realpath "${TPB_SBATCH_SCRIPT:-$SRC/deploy/cluster/tpbench-sweep.sbatch}")
PY=/usr/bin/python3
export PATH="$PATH:/usr/sbin:/sbin"
skip() {
  echo "SKIPPED: slurm_test: $*" >&2
  exit 77
}
[ -x "$TPBENCH" ] || { echo "slurm_test: no tpbench at $TPBENCH" >&2; exit 2; }
[ "$(id -u)" = 0 ] || skip "needs root: slurmd runs the jobs' tasks as their user"
for p in munged slurmctld slurmd sbatch srun salloc scancel sinfo squeue scontrol; do
  command -v "$p" >/dev/null || skip "$p is not installed (scripts/install-deps.sh installs Debian's slurmctld, slurmd, slurm-client and munge)"
done
[ -x "$PY" ] || skip "$PY not found"

TMP="$(mktemp -d)"
DAEMONS=()
stop_daemons() {
  local pid
  for pid in "${DAEMONS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${DAEMONS[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  DAEMONS=()
}
trap 'stop_daemons; [ -n "${KEEP:-}" ] || rm -rf "$TMP"' EXIT
FAILED=0
fail() {
  echo "FAIL: $*"
  FAILED=1
}

# ---- the cluster: munge, slurmctld and slurmd on free ports -------------------------------------
free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
CTLD_PORT=$(free_port)
D_PORT=$(free_port)
[ "$CTLD_PORT" != "$D_PORT" ] || D_PORT=$(free_port)
NODE=$(hostname -s)
mkdir -p "$TMP/ctld" "$TMP/spool" "$TMP/munge"
chmod 700 "$TMP/munge"
head -c 1024 /dev/urandom > "$TMP/munge/munge.key"
chmod 400 "$TMP/munge/munge.key"
cat > "$TMP/slurm.conf" <<EOF
ClusterName=tpbtest
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$D_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$TMP/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$TMP/ctld
SlurmdSpoolDir=$TMP/spool
SlurmctldPidFile=$TMP/slurmctld.pid
SlurmdPidFile=$TMP/slurmd.pid
SlurmctldLogFile=$TMP/slurmctld.log
SlurmdLogFile=$TMP/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
KillWait=5
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$(nproc)
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$TMP/slurm.conf
# Nothing of the caller's Slurm, torchrun or MPI environment reaches the jobs.
unset SLURM_JOB_ID SLURM_JOBID SLURM_PROCID SLURM_NTASKS SLURM_NODELIST SLURM_JOB_NODELIST SLURM_STEP_ID \
  RANK WORLD_SIZE LOCAL_RANK MASTER_ADDR MASTER_PORT TPB_JOB_SECRET OMPI_COMM_WORLD_RANK PMI_RANK PMI_SIZE

munged --foreground --force --socket="$TMP/munge/munge.sock" --key-file="$TMP/munge/munge.key" \
  --pid-file="$TMP/munge/munged.pid" --log-file="$TMP/munge/munged.log" --seed-file="$TMP/munge/seed" \
  > "$TMP/munge/munged.out" 2>&1 &
DAEMONS+=($!)
for _ in $(seq 50); do [ -S "$TMP/munge/munge.sock" ] && break; sleep 0.1; done
slurmctld -D -f "$TMP/slurm.conf" > "$TMP/slurmctld.out" 2>&1 &
DAEMONS+=($!)
slurmd -D -f "$TMP/slurm.conf" -N "$NODE" > "$TMP/slurmd.out" 2>&1 &
DAEMONS+=($!)
state=
for _ in $(seq 150); do
  state=$(sinfo -h -N -o %t 2>/dev/null | head -n 1)
  [ "$state" = idle ] && break
  sleep 0.2
done
if [ "$state" != idle ]; then
  echo "slurm_test: the node did not come up (state '$state'):" >&2
  tail -n 5 "$TMP/slurmctld.out" "$TMP/slurmd.out" "$TMP/munge/munged.log" >&2
  exit 1
fi
echo "slurm $(sinfo -V | awk '{print $2}'): node $NODE idle, $(nproc) CPUs, slurmctld :$CTLD_PORT, slurmd :$D_PORT"

# ---- checks ----------------------------------------------------------------------------------------
# check_results FILE KIND LAUNCHER WORLD N...: FILE is a tpbench results file that tpbench reads,
# from a job of WORLD ranks that LAUNCHER started (WORLD "-" where the file names none: tpbench's
# own launch), holding one ok record per N (KIND: runs or allreduce).
check_results() {
  local file=$1 kind=$2 launcher=$3 world=$4
  shift 4
  [ -f "$file" ] || { fail "no results file $file"; return; }
  "$TPBENCH" compare "$file" "$file" > "$TMP/compare.log" 2>&1 ||
    fail "tpbench compare does not read $file: $(tail -n 1 "$TMP/compare.log")"
  local why
  why=$("$PY" - "$file" "$kind" "$launcher" "$world" "$@" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
kind, launcher, ns = sys.argv[2], sys.argv[3], [int(n) for n in sys.argv[5:]]
world = None if sys.argv[4] == "-" else int(sys.argv[4])
meta = doc["meta"]
if meta.get("launcher") != launcher: print(f"meta.launcher is {meta.get('launcher')!r}, not {launcher!r}")
if meta.get("world_size") != world: print(f"meta.world_size is {meta.get('world_size')}, not {world}")
got = [(r["config"]["n_gpus"] if kind == "runs" else r["n_gpus"], r["status"]) for r in doc[kind]]
if got != [(n, "ok") for n in ns]: print(f"{kind} are {got}, not N = {ns} all ok")
EOF
)
  [ -z "$why" ] || fail "$file: $why"
}
# The tiny sweep the batch cases run: one epoch of 512 samples, 200 test samples.
TINY=(TPBENCH="$TPBENCH" TPB_STRATEGIES=ring_all_reduce TPB_BATCH_SIZE=32 TPB_EPOCHS=1 TPB_TRAIN_SIZE=512
      TPB_TEST_SIZE=200 TPB_DEVICE=cpu)
# batch NAME SBATCH_ARGS -- VAR=VALUE...: submits the batch script, unmodified, from a submit dir
# of its own and waits for it; sets JOB and SUBMIT; returns sbatch --wait's status (the job's).
batch() {
  local name=$1 sb=()
  shift
  while [ "$1" != -- ]; do sb+=("$1"); shift; done
  shift
  SUBMIT=$TMP/job-$name
  mkdir -p "$SUBMIT"
  local rc=0
  (cd "$SUBMIT" && env "$@" timeout 300 sbatch --wait "${sb[@]}" "$SBATCH_SCRIPT") > "$SUBMIT/sbatch.log" 2>&1 || rc=$?
  JOB=$(sed -n 's/^Submitted batch job //p' "$SUBMIT/sbatch.log")
  return "$rc"
}
job_log() { cat "$SUBMIT"/tpbench-sweep-*.out "$SUBMIT/sbatch.log" 2>/dev/null | tail -n 15; }

# ---- the batch script, as shipped ------------------------------------------------------------------
start=$SECONDS
# One task (sbatch's default): tpbench starts each point's ranks itself, as `srun -n 1 tpbench` does.
if batch plain -- "${TINY[@]}" TPB_N_GPUS=1..2; then
  check_results "$SUBMIT/results/tpbench-sweep-$JOB.json" runs tpbench - 1 2
  grep -q "one task in this allocation" "$SUBMIT/tpbench-sweep-$JOB.out" ||
    fail "sbatch (no flags): the job's output does not say it has one task"
else
  fail "sbatch (no flags) of the unmodified script failed:"
  job_log
fi
echo "sbatch, no flags (1 task): $((SECONDS - start)) s"

# Two tasks, rank 0 writing to a scratch folder: the script copies the file into the submit dir.
start=$SECONDS
if batch two --ntasks-per-node=2 -- "${TINY[@]}" TPB_N_GPUS=1..2 TPB_OUT_DIR="$TMP/scratch" TPB_OUT_NAME=two.json; then
  check_results "$SUBMIT/results/two.json" runs slurm 2 1 2
  cmp -s "$SUBMIT/results/two.json" "$TMP/scratch/two.json" || fail "sbatch --ntasks-per-node=2: the scratch file was not copied"
  grep -q "results in $SUBMIT/results/two.json" "$SUBMIT/tpbench-sweep-$JOB.out" ||
    fail "sbatch --ntasks-per-node=2: the job's output does not say where the results are"
else
  fail "sbatch --ntasks-per-node=2 failed:"
  job_log
fi
echo "sbatch --ntasks-per-node=2: $((SECONDS - start)) s"

# ---- srun and salloc, tpbench started by hand ---------------------------------------------------------
ALLREDUCE=(allreduce --algos ring,direct --bytes 4K,64K --iters 3 --warmup 1)
for mpi in "" --mpi=pmi2 --mpi=pmix; do
  start=$SECONDS
  out=$TMP/srun${mpi#--mpi=}.json
  if (cd "$TMP" && timeout 120 srun -n 2 $mpi "$TPBENCH" "${ALLREDUCE[@]}" --out "$out") > "$TMP/srun.log" 2>&1; then
    check_results "$out" allreduce slurm 2 2 2 2 2
  else
    fail "srun -n 2 $mpi tpbench allreduce failed: $(tail -n 3 "$TMP/srun.log")"
  fi
  echo "srun -n 2 ${mpi:-(mpi none)} tpbench allreduce: $((SECONDS - start)) s"
done

start=$SECONDS
out=$TMP/salloc.json
if (cd "$TMP" && timeout 120 salloc -n 2 srun "$TPBENCH" "${ALLREDUCE[@]}" --out "$out") > "$TMP/salloc.log" 2>&1; then
  check_results "$out" allreduce slurm 2 2 2 2 2
else
  fail "salloc -n 2 srun tpbench allreduce failed: $(tail -n 3 "$TMP/salloc.log")"
fi
echo "salloc -n 2 srun tpbench allreduce: $((SECONDS - start)) s"

# ---- scancel mid-sweep -------------------------------------------------------------------------------
# Two ranks, 20 epochs of 512 samples (seconds) and then of 60 000 (minutes): cancelled once the
# first point is in the file, ok. The job ends, no rank outlives it, and the file still holds the finished point.
start=$SECONDS
SUBMIT=$TMP/job-cancel
mkdir -p "$SUBMIT"
(cd "$SUBMIT" && env "${TINY[@]}" TPB_N_GPUS=2 TPB_TRAIN_SIZE=512,60000 TPB_EPOCHS=20 sbatch --ntasks-per-node=2 "$SBATCH_SCRIPT") \
  > "$SUBMIT/sbatch.log" 2>&1
JOB=$(sed -n 's/^Submitted batch job //p' "$SUBMIT/sbatch.log")
file=$SUBMIT/results/tpbench-sweep-$JOB.json
if [ -z "$JOB" ]; then
  fail "scancel case: sbatch did not submit: $(cat "$SUBMIT/sbatch.log")"
else
  for _ in $(seq 600); do
    [ -f "$file" ] && "$PY" -c '
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
sys.exit(0 if any(r["status"] == "ok" for r in runs) else 1)' "$file" 2>/dev/null && break
    [ -n "$(squeue -h -j "$JOB" 2>/dev/null)" ] || break  # it ended by itself: the checks below say how
    sleep 0.2
  done
  scancel "$JOB"
  gone=
  for _ in $(seq 300); do
    [ -z "$(squeue -h -j "$JOB" 2>/dev/null)" ] && { gone=1; break; }
    sleep 0.2
  done
  [ -n "$gone" ] || fail "scancel: job $JOB still in squeue after 60 s"
  # Every process of the job's step is gone: none left running this tpbench with the job's file.
  sleep 1
  left=$(ps -eo pid=,args= | grep -F -- "$file" | grep -v grep)
  [ -z "$left" ] || fail "scancel: processes of job $JOB outlived it: $left"
  # The finished point, ok; the cancelled one, where the file keeps it, failed with its reason.
  why=$("$PY" - "$file" <<'EOF'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
got = [(r["config"]["train_size"], r["status"]) for r in runs]
if not got or got[0] != (512, "ok") or any(s != "failed" for _, s in got[1:]) or len(got) > 2:
    print(f"runs are {got}")
EOF
)
  [ -z "$why" ] || fail "scancel: $file: $why"
  "$TPBENCH" compare "$file" "$file" > "$TMP/compare.log" 2>&1 || fail "scancel: tpbench compare does not read $file"
fi
echo "scancel of a running sweep: $((SECONDS - start)) s"

# ---- bad settings ------------------------------------------------------------------------------------
# refused NAME TEXT VAR=VALUE...: the job ends with exit 2 and one line, TEXT, before srun starts
# anything; no results file.
refused() {
  local name=$1 text=$2
  shift 2
  if batch "$name" --ntasks-per-node=2 -- "${TINY[@]}" "$@"; then
    fail "sbatch with $*: ran"
    return
  fi
  local out=$SUBMIT/tpbench-sweep-$JOB.out
  [ -f "$out" ] && [ "$(wc -l < "$out")" = 1 ] && grep -qxF -- "$text" "$out" ||
    { fail "sbatch with $*: not refused in one line, '$text':"; job_log; }
  [ -z "$(ls "$SUBMIT/results" 2>/dev/null)" ] || fail "sbatch with $*: a results file was written"
}
refused bad-epochs "tpbench-sweep.sbatch: TPB_EPOCHS='three' is not a positive whole number" TPB_EPOCHS=three
refused bad-device "tpbench-sweep.sbatch: TPB_DEVICE='gpu' is not cpu, cuda or auto" TPB_DEVICE=gpu
refused bad-binary "tpbench-sweep.sbatch: TPBENCH=$TMP/none is not an executable file" TPBENCH="$TMP/none"
refused bad-name "tpbench-sweep.sbatch: TPB_OUT_NAME='../x.json' is not a plain file name ending in .json" \
  TPB_OUT_NAME=../x.json
out=$(env -u SLURM_JOB_ID bash "$SBATCH_SCRIPT" 2>&1)
[ $? = 2 ] && [ "$out" = "tpbench-sweep.sbatch: not inside a Slurm allocation: submit this script with sbatch" ] ||
  fail "the batch script outside an allocation: $out"
rc=0
(cd "$TMP" && timeout 60 srun -n 2 "$TPBENCH" allreduce --bytes 4Q --out "$TMP/never.json") > "$TMP/bad.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "srun tpbench allreduce --bytes 4Q: exit $rc, not 2: $(tail -n 3 "$TMP/bad.log")"
grep -q -- "--bytes" "$TMP/bad.log" || fail "srun tpbench allreduce --bytes 4Q: the refusal does not name --bytes"
[ ! -e "$TMP/never.json" ] || fail "srun tpbench allreduce --bytes 4Q: a results file was written"

if [ "$FAILED" = 0 ]; then
  echo "slurm_test: every case passed"
else
  echo "slurm_test: the slurmctld and slurmd logs end:"
  tail -n 5 "$TMP/slurmctld.log" "$TMP/slurmd.log" 2>/dev/null
fi
exit "$FAILED"
