#!/usr/bin/env bash
# scripts/gpu-check.sh [--preflight] [RESULTS_DIR] — build and check tpbench's GPU path on a
# machine with an NVIDIA GPU, the CUDA toolkit and PyTorch installed, and no network.
#
#   0. checks the machine first: PyTorch's CUDA and nvcc's against the driver's (a newer major
#      version is refused, a newer minor only warned about: CUDA's minor-version compatibility),
#      then the GPUs CUDA sees, then the libraries the build needs (cmake/dep_probe), named with
#      their Debian packages: nlohmann-json3-dev and libcli11-dev are required; without
#      libgtest-dev tpbench is built without its tests and everything else still runs; without
#      zlib1g-dev it is built without gzip support (not needed here). --preflight stops here.
#      One Python throughout: $TPB_PYTHON, else python3 on PATH; it is exported as TPB_PYTHON, so
#      torch_ddp, torch_dp and torch_single run the torch whose LibTorch tpbench links;
#   1. configures a separate build (build-gpu/) against PyTorch's own LibTorch (2.x, CUDA, found
#      by asking that Python: torch.utils.cmake_prefix_path), with PyTorch's own NCCL (the nvidia
#      nccl package's include/ and lib/, the libnccl.so.2 libtorch_cuda is linked against), or
#      the toolkit's where PyTorch has none; NCCL_HOME overrides. Kernels are compiled for the
#      GPU's own architecture, and TORCH_CUDA_ARCH_LIST is set to match;
#   2. builds tpbench and the tests;
#   3. runs the tests labelled gpu (ctest -L gpu; finding none fails);
#   4. runs `tpbench allreduce --device cuda` at 1 GPU (every algorithm must run and verify;
#      nothing moves, so the summary gives one call's fixed cost, not a bandwidth) and at 2..N
#      when CUDA sees more, 4K..256M;
#   5. runs tpbench_cuda_sum: the CUDA sum kernel's bandwidth against a device-to-device copy in
#      the same run, 1M..1G, and whether it reaches the goal of 85 % of the copy at 1 GiB;
#   6. trains every strategy on one GPU (`tpbench sweep --device cuda --n_gpus 1`, batch 64 and
#      512, 3 epochs), traces single and ddp in a separate 1-epoch sweep (--trace: the GPU
#      streams' timeline), then draws a report of the sweep, the 1-GPU allreduce results and the
#      trace (its timeline chart and overlap table);
#   7. compares `tpbench run --strategy single --device cuda` with PyTorch's own training loop
#      (scripts/torch_single.py) at batch 64 and 512, 5 epochs each;
#   8. writes and prints a summary: a table of every step and its status, the allreduce table,
#      sum-kernel table and verdict, training table, tpbench single vs PyTorch (samples/s, median
#      over epochs 2..5), which libnccl.so.2 tpbench loaded when the machine has several, and
#      last, a Markdown table for docs/gpu.md: the card, the sum kernel against the copy at 1G,
#      single against PyTorch, ddp against single at N=1 and each algorithm's µs per call at N=1.
# Everything it produces goes to RESULTS_DIR (default results/gpu): deps.log, build.log, environment.txt,
# gpu-tests.log, allreduce-cuda-*.json, allreduce-cuda-*.txt(.stderr), cuda-sum.json,
# cuda-sum.txt, sweep-cuda.json, sweep-cuda.txt, trace-cuda.json, trace-cuda-results.json,
# trace-cuda.txt, report/ (charts, index.md, index.html),
# report.txt, single-cuda-b64.json, single-cuda-b512.json, single-cuda-b*.txt,
# torch-single-b64.json, torch-single-b512.json, torch-single-b*.txt and summary.txt.
# Exit status: 0 when every step passed, 1 when a test, benchmark point or training run failed
# (a missed performance goal is reported in the summary, not an exit status), 2 when the machine
# lacks something the check needs (without GoogleTest: after everything else ran and passed).
# TPB_GPU_BUILD_DIR: the build folder (build-gpu/); TPB_GPU_CMAKE_ARGS: more -D arguments for
# both configures (e.g. -DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=ON).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFLIGHT=0
OUT=""
say() { printf '\n== %s\n' "$*"; }
die() { printf 'gpu-check: %s\n' "$*" >&2; exit 2; }
for arg in "$@"; do
  case "$arg" in
    -h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    --preflight) PREFLIGHT=1 ;;
    -*) die "unknown option '$arg' (usage: scripts/gpu-check.sh [--preflight] [RESULTS_DIR])" ;;
    "") die "RESULTS_DIR is empty" ;;
    *) [ -z "$OUT" ] || die "one RESULTS_DIR only, got '$OUT' and '$arg'"; OUT="$arg" ;;
  esac
done
OUT="${OUT:-$ROOT/results/gpu}"
BUILD="${TPB_GPU_BUILD_DIR:-$ROOT/build-gpu}"
JOBS="$(nproc 2>/dev/null || echo 4)"
EXTRA_CMAKE_ARGS=()
read -r -a EXTRA_CMAKE_ARGS <<< "${TPB_GPU_CMAKE_ARGS:-}"

mkdir -p -- "$OUT" 2>/dev/null || die "cannot create results directory '$OUT'"
OUT="$(cd "$OUT" && pwd)"

# ---- what the machine has --------------------------------------------------------------------
say "checking the machine"
command -v nvidia-smi >/dev/null || die "nvidia-smi not found: this script needs an NVIDIA GPU and driver"
nvidia-smi -L >/dev/null 2>&1 || die "nvidia-smi cannot talk to the driver (is a GPU visible? CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset})"
command -v cmake >/dev/null || die "cmake not found (scripts/install-deps.sh installs it)"
# One Python for everything: LibTorch is the one of its torch, and torch_ddp, torch_dp and
# torch_single run it too (tpbench reads TPB_PYTHON), so no reference runs another torch.
PY_CMD="${TPB_PYTHON:-python3}"
command -v "$PY_CMD" >/dev/null || die "$PY_CMD not found: LibTorch is taken from PyTorch's installation (TPB_PYTHON, else python3)"
"$PY_CMD" -c 'import torch' 2>/dev/null || die "$PY_CMD cannot import torch: install PyTorch (with CUDA) first"
PYTHON="$("$PY_CMD" -c 'import sys; print(sys.executable)')"
export TPB_PYTHON="$PYTHON"
TORCH_PREFIX="$("$PYTHON" -c 'import torch; print(torch.utils.cmake_prefix_path)')"
TORCH_VERSION="$("$PYTHON" -c 'import torch; print(torch.__version__)')"
TORCH_CUDA="$("$PYTHON" -c 'import torch; print(torch.version.cuda or "")')"
TORCH_ABI="$("$PYTHON" -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))')"
[ -n "$TORCH_CUDA" ] || die "PyTorch $TORCH_VERSION ($PYTHON) is a CPU-only build; the GPU check needs a CUDA one"

# The newest CUDA the driver supports. Checked before CUDA is asked for its GPUs: a driver too old
# for PyTorch's CUDA shows as no GPU at all.
DRIVER_CUDA="$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -1)"
# driver_supports WHAT VERSION FIX: a CUDA of a newer major version than the driver's fails every
# call at run time (cudaErrorInsufficientDriver), though it builds: refused, saying FIX. A newer
# minor of the same major runs under CUDA's minor-version compatibility, which lacks only PTX JIT
# (tpbench's kernels carry SASS for this GPU's architecture): a warning.
driver_supports() {
  local what="$1" need="$2" fix="$3"
  [ -n "$need" ] && [ -n "$DRIVER_CUDA" ] || return 0
  [ "${need%%.*}" -le "${DRIVER_CUDA%%.*}" ] \
    || die "$what is CUDA $need, but the driver supports CUDA $DRIVER_CUDA at most: $fix"
  if [ "$(printf '%s\n%s\n' "$need" "$DRIVER_CUDA" | sort -V | tail -1)" != "$DRIVER_CUDA" ]; then
    echo "warning: $what is CUDA $need, the driver's is $DRIVER_CUDA: it runs under CUDA minor-version compatibility (no PTX JIT)" >&2
  fi
}
driver_supports "PyTorch $TORCH_VERSION" "$TORCH_CUDA" \
  "install a driver for CUDA ${TORCH_CUDA%%.*}, or a PyTorch built for CUDA ${DRIVER_CUDA%%.*}"

# The GPUs CUDA sees (CUDA_VISIBLE_DEVICES applies; nvidia-smi -L lists them all regardless).
GPUS="$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)"
[[ "$GPUS" =~ ^[0-9]+$ ]] || GPUS=0
[ "$GPUS" -ge 1 ] || die "CUDA sees no GPU (torch.cuda.device_count() is 0; nvidia-smi lists $(nvidia-smi -L | grep -c '^GPU ' || true); CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}; torch.cuda.init(): $("$PYTHON" -c 'import torch; torch.cuda.init()' 2>&1 | tail -1))"

# The toolkit in the order the project's configure takes it (cmake/cuda_arch.cmake): CUDACXX,
# else /usr/local/cuda, else nvcc on PATH (a wrapper script there has no headers beside it).
NVCC="${CUDACXX:-}"
[ -n "$NVCC" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || NVCC=/usr/local/cuda/bin/nvcc
[ -n "$NVCC" ] || NVCC="$(command -v nvcc || true)"
[ -n "$NVCC" ] && [ -x "$NVCC" ] || die "nvcc not found (looked at \$CUDACXX, /usr/local/cuda/bin and PATH)"
# The CUDA runtime tpbench links comes with that nvcc.
NVCC_CUDA="$("$NVCC" --version | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -1)"
driver_supports "nvcc $NVCC" "$NVCC_CUDA" "point CUDACXX at a CUDA ${DRIVER_CUDA%%.*} toolkit"

# The GPU's own architecture, so the kernels are compiled for it (CMake's default here is 90).
ARCH="${CMAKE_CUDA_ARCHITECTURES:-}"
if [ -z "$ARCH" ]; then
  ARCH="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .' || true)"
  [[ "$ARCH" =~ ^[0-9]+$ ]] || ARCH="$("$PYTHON" -c 'import torch; m, n = torch.cuda.get_device_capability(0); print(f"{m}{n}")' 2>/dev/null || true)"
  [[ "$ARCH" =~ ^[0-9]+$ ]] || ARCH=90
fi
# A CUDA LibTorch's CMake config adds its own -gencode list (from TORCH_CUDA_ARCH_LIST, else from
# detection); cmake/cuda.cmake drops it for tpbench's kernels, and this keeps Torch's choice the
# same: "90" -> "9.0".
if [ -z "${TORCH_CUDA_ARCH_LIST:-}" ] && [[ "$ARCH" =~ ^([0-9]+)([0-9])$ ]]; then
  export TORCH_CUDA_ARCH_LIST="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
fi

# NCCL: PyTorch's own (the nvidia nccl package: include/nccl.h, lib/libnccl.so.2), since
# libtorch_cuda is linked against it and a process loads one libnccl.so.2; else the toolkit's.
# NCCL_HOME, when set, wins; cmake/cuda.cmake then takes header and library from there only.
NCCL_ARGS=()
CUDA_HOME_GUESS="$(cd "$(dirname "$NVCC")/.." && pwd)"
TORCH_NCCL_HOME="$("$PYTHON" -c '
import os
try:
    import nvidia.nccl as m
except Exception:
    raise SystemExit(0)
for d in ([os.path.dirname(m.__file__)] if getattr(m, "__file__", None) else []) + list(getattr(m, "__path__", [])):
    if os.path.isfile(os.path.join(d, "include", "nccl.h")) and os.path.isdir(os.path.join(d, "lib")):
        print(d)
        break
' 2>/dev/null || true)"
NCCL_FROM="NCCL_HOME (set by the caller)"
if [ -z "${NCCL_HOME:-}" ]; then
  if [ -n "$TORCH_NCCL_HOME" ]; then
    NCCL_HOME="$TORCH_NCCL_HOME"
    NCCL_FROM="PyTorch's nvidia nccl package"
  elif [ -f "$CUDA_HOME_GUESS/include/nccl.h" ]; then
    NCCL_HOME="$CUDA_HOME_GUESS"
    NCCL_FROM="the CUDA toolkit (PyTorch has no nvidia nccl package)"
  else
    die "no NCCL: PyTorch's nvidia nccl package was not found and $CUDA_HOME_GUESS/include/nccl.h is missing (set NCCL_HOME)"
  fi
fi
[ -f "$NCCL_HOME/include/nccl.h" ] || die "NCCL_HOME=$NCCL_HOME has no include/nccl.h"
export NCCL_HOME
NCCL_ARGS=(-DNCCL_HOME="$NCCL_HOME")

# ---- the libraries the configure needs -----------------------------------------------------------
# Looked for up front, as the configure looks for them (cmake/dep_probe), so that a missing one
# is named with its Debian package now rather than at the end of a configure log. JSON and CLI11
# are needed; without GoogleTest tpbench is built without its tests and the benchmarks still
# run; without zlib it refuses gzipped MNIST files.
say "checking the build's dependencies (log: $OUT/deps.log)"
rm -rf "$BUILD/dep-probe"  # a cached NOTFOUND would outlive an apt-get install
cmake -S "$ROOT/cmake/dep_probe" -B "$BUILD/dep-probe" -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" \
  "${EXTRA_CMAKE_ARGS[@]}" > "$OUT/deps.log" 2>&1 \
  || { tail -5 "$OUT/deps.log" >&2; die "the dependency probe did not configure (no C++ compiler?): see $OUT/deps.log"; }
has_dep() { grep -q "^-- tpb-dep $1 found$" "$OUT/deps.log"; }
TESTS_WHY=""  # why the tests cannot be built, where they cannot
if [ "$TORCH_ABI" = 0 ]; then
  # Debian's libgtest has the C++11 ABI; PyTorch's old one needs GoogleTest built from its source.
  [ -d /usr/src/googletest ] || TESTS_WHY="PyTorch uses the pre-C++11 ABI and /usr/src/googletest is missing (Debian: googletest)"
elif ! has_dep GTest; then
  TESTS_WHY="GoogleTest not found (Debian: libgtest-dev)"
fi
NEEDED=()
has_dep nlohmann_json || NEEDED+=(nlohmann-json3-dev)
has_dep CLI11 || NEEDED+=(libcli11-dev)
[ "${#NEEDED[@]}" -eq 0 ] || die "the build needs ${NEEDED[*]}: sudo apt-get install ${NEEDED[*]}${TESTS_WHY:+ (and for the tests: $TESTS_WHY)}"
TESTS=ON
[ -z "$TESTS_WHY" ] || TESTS=OFF
[ "$TESTS" = ON ] || echo "warning: $TESTS_WHY: building without the tests; the gpu tests will not run" >&2
ZLIB_NOTE="found"
has_dep ZLIB || ZLIB_NOTE="not found (Debian: zlib1g-dev): .gz MNIST files are refused; not needed here"

{
  echo "date:       $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host:       $(hostname)"
  echo "card:       $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 | sed 's/, */, driver /') (CUDA ${DRIVER_CUDA:-?})"
  echo "tpbench:    $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "nvcc:       $NVCC ($("$NVCC" --version | tail -1))"
  echo "python:     $PYTHON (TPB_PYTHON)"
  echo "pytorch:    $TORCH_VERSION (CUDA $TORCH_CUDA, cxx11 ABI $TORCH_ABI) at $TORCH_PREFIX"
  echo "nccl home:  $NCCL_HOME (from $NCCL_FROM)"
  echo "cuda arch:  $ARCH (TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-unset})"
  echo "gpus:       $GPUS seen by CUDA (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset})"
  echo "tests:      ${TESTS}${TESTS_WHY:+ ($TESTS_WHY)}"
  echo "zlib:       $ZLIB_NOTE"
  echo
  nvidia-smi
} > "$OUT/environment.txt" 2>&1
sed -n '1,12p' "$OUT/environment.txt"
if [ "$PREFLIGHT" = 1 ]; then
  [ "$TESTS" = ON ] || die "preflight: the gpu tests could not be built: $TESTS_WHY"
  echo "preflight: ok (nothing built; results in $OUT)"
  exit 0
fi

# ---- configure and build ---------------------------------------------------------------------
: > "$OUT/build.log"  # this run's log only: the "compiled" check below must not match an earlier run
PREFIX_PATH="$TORCH_PREFIX"
if [ "$TORCH_ABI" = 0 ] && [ "$TESTS" = ON ]; then
  # PyTorch built with the pre-C++11 string ABI: everything linked with it must be too, and
  # Debian's libgtest is not. Build GoogleTest from Debian's sources with the old ABI.
  say "PyTorch uses the pre-C++11 ABI: building GoogleTest to match"
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
  -DCMAKE_CUDA_ARCHITECTURES="$ARCH" "${NCCL_ARGS[@]}" -DTPB_BUILD_BENCH=OFF -DTPB_BUILD_TESTS="$TESTS" \
  "${EXTRA_CMAKE_ARGS[@]}" >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log" >&2; die "configure failed (see $OUT/build.log)"; }
sed -n '/tpbench .* configuration/,/micro-benchmarks/p' "$OUT/build.log" | tail -15
grep -q "GPU path        : compiled" "$OUT/build.log" \
  || die "the configure step did not enable the GPU path (see the summary above and $OUT/build.log)"
if [ "$TESTS" = ON ] && ! grep -q '^TPB_BUILD_TESTS:BOOL=ON' "$BUILD/CMakeCache.txt"; then
  TESTS=OFF TESTS_WHY="TPB_BUILD_TESTS=OFF (TPB_GPU_CMAKE_ARGS)"
fi

say "building with $JOBS jobs"
cmake --build "$BUILD" -j "$JOBS" >> "$OUT/build.log" 2>&1 \
  || { grep -m 20 -E "error|Error" "$OUT/build.log" >&2 || true; die "build failed (see $OUT/build.log)"; }
TPBENCH="$BUILD/tpbench"
[ -x "$TPBENCH" ] || die "build finished but $TPBENCH is missing"
MISSING_LIBS="$(ldd "$TPBENCH" 2>/dev/null | grep 'not found' || true)"
[ -z "$MISSING_LIBS" ] || die "$TPBENCH cannot start: shared libraries not found (not on its RPATH or LD_LIBRARY_PATH):
$MISSING_LIBS"
if ! LIST_OUT="$("$TPBENCH" list 2>&1)"; then
  printf '%s\n' "$LIST_OUT" | tail -5 >&2
  die "$TPBENCH list failed: the binary does not start (output above)"
fi
printf '%s\n' "$LIST_OUT" | sed -n '/devices/,$p'

# Which libnccl.so.2 tpbench loads (the loader takes the first of that name; libtorch_cuda then
# uses it too), and every other one on this machine, which a different search order could pick.
NCCL_LOADED="$(LD_DEBUG=libs "$TPBENCH" list 2>&1 >/dev/null | sed -n 's/.*calling init: \(.*libnccl\.so[.0-9]*\)$/\1/p' | head -1 || true)"
[ -n "$NCCL_LOADED" ] || NCCL_LOADED="$(ldd "$TPBENCH" | sed -n 's/.*libnccl\.so[.0-9]* => \([^ ]*\).*/\1/p' | head -1 || true)"
NCCL_LOADED="$(readlink -f "$NCCL_LOADED" 2>/dev/null || echo "$NCCL_LOADED")"
NCCL_ALL="$( { ldconfig -p 2>/dev/null | sed -n 's/.*libnccl\.so\.2 .*=> //p'
               ls "$CUDA_HOME_GUESS"/lib*/libnccl.so.2 "$TORCH_NCCL_HOME"/lib/libnccl.so.2 2>/dev/null || true; } |
             while read -r f; do readlink -f "$f" || true; done | sort -u || true)"
{
  echo "libnccl loaded by tpbench: ${NCCL_LOADED:-unknown}"
  if [ "$(printf '%s\n' "$NCCL_ALL" | grep -c . || true)" -gt 1 ]; then
    echo "this machine has several libnccl.so.2 (tpbench and libtorch_cuda share the loaded one):"
    printf '%s\n' "$NCCL_ALL" | sed 's/^/  /'
  fi
} | tee -a "$OUT/environment.txt"

# ---- tests -----------------------------------------------------------------------------------
STATUS=0
STEPS="$OUT/steps.tsv"  # one line per step: name<TAB>status, printed as the summary's first table
printf 'build\tok (%s)\n' "$BUILD" > "$STEPS"
record() { printf '%s\t%s\n' "$1" "$2" >> "$STEPS"; }  # record NAME STATUS

say "GPU tests (ctest -L gpu; log: $OUT/gpu-tests.log)"
# --no-tests=error: a build whose gpu tests were not discovered must not pass as "ok ()".
if [ "$TESTS" = OFF ]; then
  record "gpu tests" "NOT RUN ($TESTS_WHY)"
  echo "NOT RUN: $TESTS_WHY" | tee "$OUT/gpu-tests.log"
elif (cd "$BUILD" && ctest -L gpu --no-tests=error --output-on-failure) > "$OUT/gpu-tests.log" 2>&1; then
  grep -E "tests passed|Total Test time" "$OUT/gpu-tests.log" || true
  record "gpu tests" "ok ($(grep -oE '[0-9]+% tests passed.*' "$OUT/gpu-tests.log" | head -1))"
else
  STATUS=1
  record "gpu tests" "FAILED (see gpu-tests.log)"
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
  local rc=0
  "$TPBENCH" allreduce --device cuda --n_gpus "$1" --bytes 4K..256M --out "$json" --overwrite > "$txt" 2> "$txt.stderr" || rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "ok: $json"
    record "allreduce n=$1" ok
  else
    STATUS=1
    record "allreduce n=$1" "FAILED (exit $rc)"
    echo "FAILED (exit $rc): see $txt and $txt.stderr"
    tail -5 "$txt.stderr" || true
  fi
}
# An earlier run's files (say, at more GPUs than this one sees) would join this summary.
rm -f "$OUT"/allreduce-cuda-*.json "$OUT"/allreduce-cuda-*.txt "$OUT"/allreduce-cuda-*.txt.stderr
run_bench 1 n1
if [ "$GPUS" -ge 2 ]; then
  MAXN=$(( GPUS < 8 ? GPUS : 8 ))
  run_bench "2..$MAXN" "n2-$MAXN"
fi

# step NAME LOG COMMAND...: runs COMMAND with its output in LOG and records NAME's status. On
# failure it marks the check failed, shows the end of LOG and returns 1, so callers write
# `if step ...; then` (set -e stays quiet).
step() {
  local name="$1" log="$2" rc=0
  shift 2
  "$@" > "$log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ]; then
    record "$name" ok
    return 0
  fi
  STATUS=1
  record "$name" "FAILED (exit $rc; $(basename "$log"))"
  echo "FAILED (exit $rc): see $log"
  tail -5 "$log" || true
  return 1
}

# ---- sum kernel against a device-to-device copy -----------------------------------------------
say "tpbench_cuda_sum: sum kernel vs D2D copy bandwidth, 1M..1G (goal: >= 85% of the copy at 1G)"
rm -f "$OUT/cuda-sum.json"  # a failed run must not leave an earlier run's figures behind
if [ ! -x "$BUILD/tpbench_cuda_sum" ]; then
  STATUS=1
  record "sum kernel vs copy" "FAILED (not built)"
  echo "FAILED: $BUILD/tpbench_cuda_sum was not built (see $OUT/build.log)"
elif step "sum kernel vs copy" "$OUT/cuda-sum.txt" "$BUILD/tpbench_cuda_sum" --json "$OUT/cuda-sum.json"; then
  tail -1 "$OUT/cuda-sum.txt"
fi

# ---- one-GPU training sweep and its report -----------------------------------------------------
say "tpbench sweep --device cuda --strategies all --n_gpus 1 --batch_size 64,512 --epochs 3 --train_size 0"
rm -f "$OUT/sweep-cuda.json"
if step "sweep n=1 (all strategies)" "$OUT/sweep-cuda.txt" "$TPBENCH" sweep --device cuda --strategies all --n_gpus 1 \
     --batch_size 64,512 --epochs 3 --train_size 0 --out "$OUT/sweep-cuda.json" --overwrite; then
  echo "ok: $OUT/sweep-cuda.json"
fi
# A traced run apart from the sweep above, whose timings stay untraced: the GPU streams' timeline.
say "tpbench sweep --device cuda --strategies single,ddp --n_gpus 1 --epochs 1 --bucket_mb 1 --trace"
rm -f "$OUT/trace-cuda.json" "$OUT/trace-cuda-results.json"
if step "traced sweep n=1 (single, ddp)" "$OUT/trace-cuda.txt" "$TPBENCH" sweep --device cuda --strategies single,ddp \
     --n_gpus 1 --batch_size 64 --epochs 1 --train_size 0 --bucket_mb 1 --out "$OUT/trace-cuda-results.json" --overwrite \
     --trace "$OUT/trace-cuda.json"; then
  echo "ok: $OUT/trace-cuda.json"
fi
say "tpbench report (log: $OUT/report.txt)"
REPORT_INPUTS=()
for f in "$OUT/sweep-cuda.json" "$OUT/allreduce-cuda-n1.json"; do
  if [ -f "$f" ]; then REPORT_INPUTS+=("$f"); fi
done
if [ -f "$OUT/trace-cuda.json" ]; then REPORT_INPUTS+=(--trace "$OUT/trace-cuda.json"); fi
if [ "${#REPORT_INPUTS[@]}" -eq 0 ]; then
  STATUS=1
  record "report" "FAILED (nothing to report)"
  echo "FAILED: neither sweep-cuda.json nor allreduce-cuda-n1.json exists: nothing to report"
elif step "report" "$OUT/report.txt" "$TPBENCH" report "${REPORT_INPUTS[@]}" --out "$OUT/report"; then
  grep -E "^index:" "$OUT/report.txt" || true
fi

# ---- tpbench single against PyTorch's own loop -------------------------------------------------
for B in 64 512; do
  say "batch $B: tpbench run --strategy single --device cuda --epochs 5, then scripts/torch_single.py"
  rm -f "$OUT/single-cuda-b$B.json" "$OUT/torch-single-b$B.json"
  if step "single b=$B (tpbench)" "$OUT/single-cuda-b$B.txt" "$TPBENCH" run --device cuda --strategy single --n_gpus 1 \
       --batch_size "$B" --epochs 5 --out "$OUT/single-cuda-b$B.json" --overwrite; then
    echo "ok: $OUT/single-cuda-b$B.json"
  fi
  if step "single b=$B (pytorch)" "$OUT/torch-single-b$B.txt" "$PYTHON" "$ROOT/scripts/torch_single.py" --batch_size "$B" \
       --epochs 5 --json "$OUT/torch-single-b$B.json"; then
    echo "ok: $OUT/torch-single-b$B.json"
  fi
done

# ---- summary ---------------------------------------------------------------------------------
say "summary"
"$PYTHON" - "$OUT" > "$OUT/summary.txt" <<'PY'
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

# The figures docs/gpu.md records, by section: rows of (figure, tpbench, reference,
# ratio, goal), filled in below from the same numbers as the tables, printed last.
readme = {}

print("== steps")
try:
    steps = [l.rstrip("\n").split("\t", 1) for l in open(os.path.join(out, "steps.tsv")) if l.strip()]
except OSError:
    steps = []
for name, status in steps:
    print(f"{name:<28} {status}")
for line in open(os.path.join(out, "environment.txt")):
    if line.startswith("libnccl loaded") or line.startswith("this machine has several") or line.startswith("  /"):
        print(line.rstrip())

print("\n== allreduce (GB/s, median of timed iterations; wrong = elements failing the exact check;"
      "\n   at N = 1 nothing moves: algbw and busbw n/a, the time is one call's fixed cost)")
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
    one = r.get("n_gpus") == 1
    algbw = "n/a" if one else f"{r.get('algbw_gbps', 0) or 0:.2f}"
    busbw = "n/a" if one else f"{r.get('busbw_gbps', 0) or 0:.2f}"
    print(f"{r.get('algo',''):<13} {r.get('n_gpus',''):>2} {size(r.get('bytes', 0)):>6} "
          f"{(f'{med:.1f}' if med is not None else '-'):>11} "
          f"{algbw:>9} {busbw:>9} "
          f"{str(r.get('wrong', '-')):>6}  {r.get('status', '')}{(': ' + r['error']) if r.get('error') else ''}")
bad = [r for r in rows if r.get("status") != "ok"]
print(f"\n{len(rows)} points, {len(bad)} not ok")
# At N = 1 an in-place allreduce moves nothing (the sum of one buffer is itself), so bytes over
# time would be no bandwidth: docs/gpu.md records what one call costs on one GPU, at the largest
# size, in µs.
ones = [r for r in rows if r.get("n_gpus") == 1 and r.get("status") == "ok"]
top = max((r.get("bytes", 0) for r in ones), default=0)
readme["allreduce"] = [(f"allreduce {r.get('algo')} at N=1, {size(top)}: µs per call (nothing moves at N=1)",
                        num((r.get("time_us") or {}).get("median"), ".1f"), "-", "-", "-")
                       for r in ones if r.get("bytes") == top]

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
    at = next((r for r in aligned if r.get("bytes") == g.get("bytes")), {})
    readme["sum"] = [(f"sum kernel vs device-to-device copy, {size(g.get('bytes', 0))} (GB/s read + written)",
                      num((at.get("sum_gbps") or {}).get("median"), ".1f"),
                      num((at.get("copy_gbps") or {}).get("median"), ".1f"), num(g.get("ratio"), ".3f"),
                      f">= {num(g.get('ratio_min'), '.2f')}: {'met' if g.get('met') else 'NOT met'}")]

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
    # Goal: ddp at N = 1 within 5 % of single (its only extra work is the bucket copies).
    rate = {(r.get("config", {}).get("strategy"), r.get("config", {}).get("batch_size")):
            (r.get("summary") or {}).get("samples_per_s") for r in runs if r.get("status") == "ok"}
    for b in sorted({k[1] for k in rate if k[1] is not None}):
        d, s1 = rate.get(("ddp", b)), rate.get(("single", b))
        if isinstance(d, (int, float)) and isinstance(s1, (int, float)) and s1 > 0:
            verdict = "met" if d / s1 >= 0.95 else "NOT met"
            print(f"ddp/single at batch {b}: {d / s1:.3f} (goal >= 0.95: {verdict})")
            readme.setdefault("ddp", []).append((f"ddp vs single at N=1, batch {b} (samples/s)", f"{d:.0f}",
                                                 f"{s1:.0f}", f"{d / s1:.3f}", f">= 0.95: {verdict}"))

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
    readme.setdefault("single", []).append((f"single on cuda vs PyTorch's own loop, batch {b} (samples/s)",
                                            num(ours, ".0f"), num(theirs, ".0f"), num(ratio, ".3f"),
                                            f">= 0.97: {verdict}"))

# For docs/gpu.md: the card, then the figures it records, as a Markdown table.
env = {}
for line in open(os.path.join(out, "environment.txt")):
    key, sep, value = line.partition(":")
    if sep and key in ("date", "card", "tpbench", "pytorch"):
        env.setdefault(key, value.strip())
print("\n== for docs/gpu.md (Markdown; paste as it is)")
print(f"On {env.get('card', 'an unnamed card')}, {env.get('date', '')[:10]}, PyTorch "
      f"{env.get('pytorch', '?').split(' at ')[0]}, tpbench {env.get('tpbench', '?')} (scripts/gpu-check.sh):\n")
print("| figure | tpbench | reference | ratio | goal |")
print("|---|---:|---:|---:|---|")
for key, what in (("sum", "sum kernel vs device-to-device copy"), ("single", "single on cuda vs PyTorch"),
                  ("ddp", "ddp at N=1 vs single"), ("allreduce", "allreduce at N=1, µs per call")):
    for row in readme.get(key) or [(what, "-", "-", "-", "missing: its step failed (see the steps above)")]:
        print("| " + " | ".join(row) + " |")
PY
cat "$OUT/summary.txt"
echo
echo "results in $OUT"
# Everything ran and passed, but the gpu tests could not be built: the machine lacks something.
if [ "$STATUS" = 0 ] && [ "$TESTS" = OFF ]; then
  echo "gpu-check: the gpu tests did not run: $TESTS_WHY" >&2
  exit 2
fi
exit "$STATUS"
