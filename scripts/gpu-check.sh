#!/usr/bin/env bash
# scripts/gpu-check.sh [RESULTS_DIR] — build and check tpbench's GPU path on a machine with an
# NVIDIA GPU, the CUDA toolkit and PyTorch installed, and no network.
#
#   1. configures a separate build (build-gpu/) against PyTorch's own LibTorch (2.x, CUDA), with
#      NCCL from /usr/local/cuda or, failing that, from PyTorch's nvidia-nccl wheel;
#   2. builds tpbench and the tests;
#   3. runs the tests labelled gpu (ctest -L gpu);
#   4. runs `tpbench allreduce --device cuda` at 1 GPU (and 2..N when there are more), 4K..256M;
#   5. runs tpbench_cuda_sum: the CUDA sum kernel's bandwidth against a device-to-device copy in
#      the same run, 1M..1G, and whether it reaches the goal of 85 % of the copy at 1 GiB;
#   6. trains every strategy on one GPU (`tpbench sweep --device cuda --n_gpus 1`, batch 64 and
#      512, 3 epochs), then draws a report of that sweep and the 1-GPU allreduce results;
#   7. compares `tpbench run --strategy single --device cuda` with PyTorch's own training loop
#      (scripts/torch_single.py) at batch 64 and 512, 5 epochs each;
#   8. writes and prints a summary: allreduce table, sum-kernel table and verdict, training table,
#      and tpbench single vs PyTorch (samples/s, median over epochs 2..5).
# Everything it produces goes to RESULTS_DIR (default results/gpu): build.log, environment.txt,
# gpu-tests.log, allreduce-cuda-*.json, allreduce-cuda-*.txt(.stderr), cuda-sum.json,
# cuda-sum.txt, sweep-cuda.json, sweep-cuda.txt, report/ (charts, index.md, index.html),
# report.txt, single-cuda-b64.json, single-cuda-b512.json, single-cuda-b*.txt,
# torch-single-b64.json, torch-single-b512.json, torch-single-b*.txt and summary.txt.
# Exit status: 0 when every step passed, 1 when a test, benchmark point or training run failed
# (a missed performance goal is reported in the summary, not an exit status), 2 when the machine
# lacks something the check needs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/results/gpu}"
BUILD="${TPB_GPU_BUILD_DIR:-$ROOT/build-gpu}"
JOBS="$(nproc 2>/dev/null || echo 4)"

say() { printf '\n== %s\n' "$*"; }
die() { printf 'gpu-check: %s\n' "$*" >&2; exit 2; }

mkdir -p "$OUT" || die "cannot create results directory '$OUT'"
OUT="$(cd "$OUT" && pwd)"

# ---- what the machine has --------------------------------------------------------------------
say "checking the machine"
command -v nvidia-smi >/dev/null || die "nvidia-smi not found: this script needs an NVIDIA GPU and driver"
nvidia-smi -L >/dev/null 2>&1 || die "nvidia-smi cannot talk to the driver (is a GPU visible? CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset})"
GPUS="$(nvidia-smi -L | grep -c '^GPU ' || true)"
[ "$GPUS" -ge 1 ] || die "nvidia-smi lists no GPU"
command -v cmake >/dev/null || die "cmake not found (scripts/install-deps.sh installs it)"
command -v python3 >/dev/null || die "python3 not found: LibTorch is taken from PyTorch's installation"
python3 -c 'import torch' 2>/dev/null || die "python3 cannot import torch: install PyTorch (with CUDA) first"

NVCC="${CUDACXX:-}"
[ -n "$NVCC" ] || NVCC="$(command -v nvcc || true)"
[ -n "$NVCC" ] || { [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc; } || true
[ -n "$NVCC" ] && [ -x "$NVCC" ] || die "nvcc not found (looked at \$CUDACXX, PATH and /usr/local/cuda/bin)"

# The CUDA runtime tpbench links comes with that nvcc; the driver must support its version, or
# every CUDA call fails at run time (cudaErrorInsufficientDriver) although the build succeeds.
NVCC_CUDA="$("$NVCC" --version | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -1)"
DRIVER_CUDA="$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -1)"
if [ -n "$NVCC_CUDA" ] && [ -n "$DRIVER_CUDA" ] &&
   [ "$(printf '%s\n%s\n' "$NVCC_CUDA" "$DRIVER_CUDA" | sort -V | tail -1)" != "$DRIVER_CUDA" ]; then
  die "nvcc $NVCC is CUDA $NVCC_CUDA, but the driver supports CUDA $DRIVER_CUDA at most: point CUDACXX at a toolkit no newer than the driver"
fi

TORCH_PREFIX="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
TORCH_VERSION="$(python3 -c 'import torch; print(torch.__version__)')"
TORCH_CUDA="$(python3 -c 'import torch; print(torch.version.cuda or "")')"
TORCH_ABI="$(python3 -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))')"
[ -n "$TORCH_CUDA" ] || die "PyTorch $TORCH_VERSION is a CPU-only build; the GPU check needs a CUDA one"

# The GPU's own architecture, so the kernels are compiled for it (CMake's default here is 90).
ARCH="${CMAKE_CUDA_ARCHITECTURES:-}"
if [ -z "$ARCH" ]; then
  ARCH="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .' || true)"
  [[ "$ARCH" =~ ^[0-9]+$ ]] || ARCH="$(python3 -c 'import torch; m, n = torch.cuda.get_device_capability(0); print(f"{m}{n}")' 2>/dev/null || true)"
  [[ "$ARCH" =~ ^[0-9]+$ ]] || ARCH=90
fi

# NCCL: the toolkit's when it has one, else PyTorch's nvidia-nccl wheel (include/ + lib/).
NCCL_ARGS=()
CUDA_HOME_GUESS="$(cd "$(dirname "$NVCC")/.." && pwd)"
if [ -z "${NCCL_HOME:-}" ] && [ ! -f "$CUDA_HOME_GUESS/include/nccl.h" ]; then
  NCCL_HOME="$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) if getattr(nvidia.nccl, "__file__", None) else list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)"
  [ -n "$NCCL_HOME" ] && [ -f "$NCCL_HOME/include/nccl.h" ] \
    || die "no NCCL: $CUDA_HOME_GUESS/include/nccl.h is missing and PyTorch's nvidia-nccl package was not found (set NCCL_HOME)"
fi
if [ -n "${NCCL_HOME:-}" ]; then
  export NCCL_HOME
  NCCL_ARGS=(-DNCCL_HOME="$NCCL_HOME")
fi

{
  echo "date:       $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host:       $(hostname)"
  echo "nvcc:       $NVCC ($("$NVCC" --version | tail -1))"
  echo "pytorch:    $TORCH_VERSION (CUDA $TORCH_CUDA, cxx11 ABI $TORCH_ABI) at $TORCH_PREFIX"
  echo "nccl home:  ${NCCL_HOME:-$CUDA_HOME_GUESS}"
  echo "cuda arch:  $ARCH"
  echo
  nvidia-smi
} > "$OUT/environment.txt" 2>&1
sed -n '1,6p' "$OUT/environment.txt"
echo "GPUs:       $GPUS"

# ---- configure and build ---------------------------------------------------------------------
PREFIX_PATH="$TORCH_PREFIX"
if [ "$TORCH_ABI" = 0 ]; then
  # PyTorch built with the pre-C++11 string ABI: everything linked with it must be too, and
  # Debian's libgtest is not. Build GoogleTest from Debian's sources with the old ABI.
  say "PyTorch uses the pre-C++11 ABI: building GoogleTest to match"
  [ -d /usr/src/googletest ] || die "PyTorch uses _GLIBCXX_USE_CXX11_ABI=0 and /usr/src/googletest (Debian package googletest) is missing, so the tests cannot be linked"
  cmake -S /usr/src/googletest -B "$BUILD/gtest-abi0" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS=-D_GLIBCXX_USE_CXX11_ABI=0 -DCMAKE_INSTALL_PREFIX="$BUILD/gtest-abi0/install" \
    -DBUILD_GMOCK=OFF >> "$OUT/build.log" 2>&1 || die "GoogleTest configure failed (see $OUT/build.log)"
  cmake --build "$BUILD/gtest-abi0" -j "$JOBS" >> "$OUT/build.log" 2>&1 || die "GoogleTest build failed (see $OUT/build.log)"
  cmake --install "$BUILD/gtest-abi0" >> "$OUT/build.log" 2>&1 || die "GoogleTest install failed (see $OUT/build.log)"
  PREFIX_PATH="$BUILD/gtest-abi0/install;$TORCH_PREFIX"
fi

say "configuring $BUILD (log: $OUT/build.log)"
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
mkdir -p "$BUILD"
if [ -f "$BUILD/CMakeCache.txt" ] && [ "$(cat "$BUILD/.tpb-prefix" 2>/dev/null || true)" != "$PREFIX_PATH $NVCC ${NCCL_HOME:-}" ]; then
  # A cache made for another LibTorch, nvcc or NCCL would keep their paths: start clean.
  rm -rf "$BUILD/CMakeCache.txt" "$BUILD/CMakeFiles"
fi
echo "$PREFIX_PATH $NVCC ${NCCL_HOME:-}" > "$BUILD/.tpb-prefix"
cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$PREFIX_PATH" -DCMAKE_CUDA_COMPILER="$NVCC" \
  -DCMAKE_CUDA_ARCHITECTURES="$ARCH" "${NCCL_ARGS[@]}" -DTPB_BUILD_BENCH=OFF \
  >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log" >&2; die "configure failed (see $OUT/build.log)"; }
sed -n '/tpbench .* configuration/,/micro-benchmarks/p' "$OUT/build.log" | tail -12
grep -q "GPU path        : compiled" "$OUT/build.log" \
  || die "the configure step did not enable the GPU path (see the summary above and $OUT/build.log)"

say "building with $JOBS jobs"
cmake --build "$BUILD" -j "$JOBS" >> "$OUT/build.log" 2>&1 \
  || { grep -m 20 -E "error|Error" "$OUT/build.log" >&2 || true; die "build failed (see $OUT/build.log)"; }
TPBENCH="$BUILD/tpbench"
[ -x "$TPBENCH" ] || die "build finished but $TPBENCH is missing"
"$TPBENCH" list | sed -n '/devices/,$p'

# ---- tests -----------------------------------------------------------------------------------
STATUS=0
say "GPU tests (ctest -L gpu; log: $OUT/gpu-tests.log)"
if (cd "$BUILD" && ctest -L gpu --output-on-failure) > "$OUT/gpu-tests.log" 2>&1; then
  grep -E "tests passed|Total Test time" "$OUT/gpu-tests.log" || true
else
  STATUS=1
  grep -E "tests passed|\*\*\*|Failed|Not Run" "$OUT/gpu-tests.log" || true
  echo "some GPU tests FAILED (see $OUT/gpu-tests.log)"
fi
if grep -q "Skipped" "$OUT/gpu-tests.log"; then
  echo "note: some GPU tests were skipped:"
  grep -E "Skipped|SKIPPED" "$OUT/gpu-tests.log" | sort -u | head -10
fi

# ---- allreduce benchmark ---------------------------------------------------------------------
run_bench() {  # run_bench N_GPUS NAME
  local json="$OUT/allreduce-cuda-$2.json" txt="$OUT/allreduce-cuda-$2.txt"
  say "tpbench allreduce --device cuda --n_gpus $1 --bytes 4K..256M"
  if "$TPBENCH" allreduce --device cuda --n_gpus "$1" --bytes 4K..256M --out "$json" > "$txt" 2> "$txt.stderr"; then
    echo "ok: $json"
  else
    STATUS=1
    echo "FAILED (exit $?): see $txt and $txt.stderr"
    tail -5 "$txt.stderr" || true
  fi
}
run_bench 1 n1
if [ "$GPUS" -ge 2 ]; then
  MAXN=$(( GPUS < 8 ? GPUS : 8 ))
  run_bench "2..$MAXN" "n2-$MAXN"
fi

# step LOG COMMAND...: runs COMMAND with its output in LOG. On failure it marks the check failed,
# shows the end of LOG and returns 1, so callers write `if step ...; then` (set -e stays quiet).
step() {
  local log="$1"
  shift
  "$@" > "$log" 2>&1 && return 0
  local rc=$?
  STATUS=1
  echo "FAILED (exit $rc): see $log"
  tail -5 "$log" || true
  return 1
}

# ---- sum kernel against a device-to-device copy -----------------------------------------------
say "tpbench_cuda_sum: sum kernel vs D2D copy bandwidth, 1M..1G (goal: >= 85% of the copy at 1G)"
rm -f "$OUT/cuda-sum.json"  # a failed run must not leave an earlier run's figures behind
if [ ! -x "$BUILD/tpbench_cuda_sum" ]; then
  STATUS=1
  echo "FAILED: $BUILD/tpbench_cuda_sum was not built (see $OUT/build.log)"
elif step "$OUT/cuda-sum.txt" "$BUILD/tpbench_cuda_sum" --json "$OUT/cuda-sum.json"; then
  tail -1 "$OUT/cuda-sum.txt"
fi

# ---- one-GPU training sweep and its report -----------------------------------------------------
say "tpbench sweep --device cuda --strategies all --n_gpus 1 --batch_size 64,512 --epochs 3"
rm -f "$OUT/sweep-cuda.json"
if step "$OUT/sweep-cuda.txt" "$TPBENCH" sweep --device cuda --strategies all --n_gpus 1 \
     --batch_size 64,512 --epochs 3 --out "$OUT/sweep-cuda.json"; then
  echo "ok: $OUT/sweep-cuda.json"
fi
say "tpbench report (log: $OUT/report.txt)"
REPORT_INPUTS=()
for f in "$OUT/sweep-cuda.json" "$OUT/allreduce-cuda-n1.json"; do
  if [ -f "$f" ]; then REPORT_INPUTS+=("$f"); fi
done
if [ "${#REPORT_INPUTS[@]}" -eq 0 ]; then
  STATUS=1
  echo "FAILED: neither sweep-cuda.json nor allreduce-cuda-n1.json exists: nothing to report"
elif step "$OUT/report.txt" "$TPBENCH" report "${REPORT_INPUTS[@]}" --out "$OUT/report"; then
  grep -E "^index:" "$OUT/report.txt" || true
fi

# ---- tpbench single against PyTorch's own loop -------------------------------------------------
for B in 64 512; do
  say "batch $B: tpbench run --strategy single --device cuda --epochs 5, then scripts/torch_single.py"
  rm -f "$OUT/single-cuda-b$B.json" "$OUT/torch-single-b$B.json"
  if step "$OUT/single-cuda-b$B.txt" "$TPBENCH" run --device cuda --strategy single --n_gpus 1 \
       --batch_size "$B" --epochs 5 --out "$OUT/single-cuda-b$B.json"; then
    echo "ok: $OUT/single-cuda-b$B.json"
  fi
  if step "$OUT/torch-single-b$B.txt" python3 "$ROOT/scripts/torch_single.py" --batch_size "$B" \
       --epochs 5 --json "$OUT/torch-single-b$B.json"; then
    echo "ok: $OUT/torch-single-b$B.json"
  fi
done

# ---- summary ---------------------------------------------------------------------------------
say "summary"
python3 - "$OUT" > "$OUT/summary.txt" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]

def load(name):
    """The JSON document OUT/name, or None after printing why it is missing or unreadable."""
    path = os.path.join(out, name)
    if not os.path.exists(path):
        print(f"{name}: missing (the step failed before writing it; see its .txt)")
        return None
    try:
        return json.load(open(path))
    except Exception as e:  # a run that died while writing, or wrote something else
        print(f"{name}: unreadable ({e})")
        return None

def num(v, fmt):
    return format(v, fmt) if isinstance(v, (int, float)) and not isinstance(v, bool) else "-"

print("== allreduce (busbw GB/s, median of timed iterations; wrong = elements failing the exact check)")
rows = []
for path in sorted(glob.glob(os.path.join(out, "allreduce-cuda-*.json"))):
    try:
        doc = json.load(open(path))
    except Exception as e:  # a run that died before writing anything
        print(f"{os.path.basename(path)}: unreadable ({e})")
        continue
    meta = doc.get("meta", {})
    print(f"{os.path.basename(path)}: gpus={meta.get('gpus')} driver={meta.get('driver')} "
          f"cuda={meta.get('cuda')} nccl={meta.get('nccl')} libtorch={meta.get('libtorch')}")
    rows += doc.get("allreduce", [])
def size(b):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{unit}"
    return str(b)
print(f"\n{'algo':<13} {'N':>2} {'bytes':>6} {'median_us':>11} {'algbw':>9} {'busbw':>9} {'wrong':>6}  status")
for r in rows:
    t = r.get("time_us") or {}
    med = t.get("median")
    print(f"{r.get('algo',''):<13} {r.get('n_gpus',''):>2} {size(r.get('bytes', 0)):>6} "
          f"{(f'{med:.1f}' if med is not None else '-'):>11} "
          f"{r.get('algbw_gbps', 0) or 0:>9.2f} {r.get('busbw_gbps', 0) or 0:>9.2f} "
          f"{str(r.get('wrong', '-')):>6}  {r.get('status', '')}{(': ' + r['error']) if r.get('error') else ''}")
bad = [r for r in rows if r.get("status") != "ok"]
print(f"\n{len(rows)} points, {len(bad)} not ok")

# Sum kernel against the D2D copy: the four largest sizes and the misaligned (scalar) row.
print("\n== sum kernel vs D2D copy (GB/s read + written, medians; cuda-sum.json)")
doc = load("cuda-sum.json")
if doc is not None:
    m = doc.get("meta", {})
    print(f"device: {m.get('device')} (sm {m.get('compute_capability')}), {m.get('repeats')} repeats")
    srows = doc.get("rows", [])
    aligned = sorted((r for r in srows if r.get("kind") == "aligned"), key=lambda r: r.get("bytes", 0))
    shown = aligned[-4:] + [r for r in srows if r.get("kind") != "aligned"]
    def ssize(b):  # the misaligned row is one float short of a round size: "1G-4"
        return size(b) if size(b)[-1:].isalpha() or size(b + 4)[-1:].isdigit() else size(b + 4) + "-4"
    print(f"{'case':<11} {'size':>6} {'copy':>9} {'sum':>9} {'sum/copy':>9}  check")
    for r in shown:
        print(f"{r.get('kind', ''):<11} {ssize(r.get('bytes', 0)):>6} "
              f"{num((r.get('copy_gbps') or {}).get('median'), '.1f'):>9} "
              f"{num((r.get('sum_gbps') or {}).get('median'), '.1f'):>9} {num(r.get('ratio'), '.3f'):>9}  "
              f"{'ok' if not r.get('wrong') else str(r.get('wrong')) + ' wrong: ' + str(r.get('error', ''))}")
    g = doc.get("goal", {})
    print(f"goal: sum >= {num(g.get('ratio_min'), '.0%')} of the copy at {size(g.get('bytes', 0))}: "
          f"{'MET' if g.get('met') else 'NOT MET'} (ratio {num(g.get('ratio'), '.3f')})")

# One-GPU training sweep.
print("\n== training on one GPU (sweep-cuda.json; samples/s and accuracy from each run's summary)")
doc = load("sweep-cuda.json")
if doc is not None:
    runs = doc.get("runs", [])
    print(f"{'strategy':<16} {'N':>2} {'batch':>5} {'status':<8} {'samples/s':>10} {'test_acc':>8}  error")
    for r in runs:
        c, sm = r.get("config", {}), r.get("summary") or {}
        print(f"{c.get('strategy', ''):<16} {c.get('n_gpus', ''):>2} {c.get('batch_size', ''):>5} "
              f"{r.get('status', ''):<8} {num(sm.get('samples_per_s'), '.0f'):>10} "
              f"{num(sm.get('final_test_accuracy'), '.4f'):>8}  {r.get('error') or ''}".rstrip())
    bad = [r for r in runs if r.get("status") == "failed"]
    print(f"{len(runs)} runs, {len(bad)} failed, "
          f"{sum(1 for r in runs if r.get('status') == 'skipped')} skipped")

# tpbench single against PyTorch's own loop: median samples/s over epochs 2..E (1 if E == 1).
print("\n== tpbench single vs PyTorch's own loop (samples/s, median over epochs 2..E; not slower: ratio >= 0.97)")
print(f"{'batch':>5} {'tpbench':>10} {'pytorch':>10} {'ratio':>7}  verdict")
for b in (64, 512):
    ours = theirs = None
    doc = load(f"single-cuda-b{b}.json")
    if doc is not None:
        runs = doc.get("runs", [])
        eps = [e.get("samples_per_s") for e in (runs[0].get("epochs", []) if runs else [])]
        eps = [v for v in eps if isinstance(v, (int, float))]
        if runs and runs[0].get("status") != "ok":
            print(f"single-cuda-b{b}.json: run {runs[0].get('status')}: {runs[0].get('error')}")
        if eps:
            ours = statistics.median(eps[1:] if len(eps) > 1 else eps)
    doc = load(f"torch-single-b{b}.json")
    if doc is not None:
        theirs = doc.get("median_samples_per_s")
        theirs = theirs if isinstance(theirs, (int, float)) else None
    ratio = ours / theirs if ours is not None and theirs else None
    verdict = "-" if ratio is None else ("not slower" if ratio >= 0.97 else "slower")
    print(f"{b:>5} {num(ours, '.0f'):>10} {num(theirs, '.0f'):>10} {num(ratio, '.3f'):>7}  {verdict}")
PY
cat "$OUT/summary.txt"
echo
echo "results in $OUT"
exit "$STATUS"
