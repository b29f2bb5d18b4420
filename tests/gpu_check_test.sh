#!/usr/bin/env bash
# tests/gpu_check_test.sh — scripts/gpu-check.sh's checks before the build, on a machine without a
# GPU: fake nvidia-smi, nvcc and python3 (answering from FAKE_* variables) stand first on PATH,
# and `gpu-check.sh --preflight` stops before it configures tpbench. The dependency probe is the
# real cmake (about a second a run). Then the summary's Python (taken from the script) is run
# over made-up result files, to check the table it prints for docs/gpu.md. CTest runs this
# (Scripts.GpuCheckPreflight).
# Exit 0 when every case passes, 1 otherwise.
set -uo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TMP="$(mktemp -d)"
trap '[ -n "${KEEP:-}" ] || rm -rf "$TMP"' EXIT
FAILED=0

# ---- the fakes ---------------------------------------------------------------------------------
mkdir -p "$TMP/bin" "$TMP/torch" "$TMP/nccl/include" "$TMP/nccl/lib"
touch "$TMP/nccl/include/nccl.h"
cat > "$TMP/bin/nvidia-smi" <<'EOF'
#!/usr/bin/env bash
case "$*" in
  -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-fake)" ;;
  *compute_cap*) echo "9.0" ;;
  *name,driver_version*) echo "NVIDIA H100 80GB HBM3, 580.65.06" ;;
  "") echo "| NVIDIA-SMI 580.65.06   Driver Version: 580.65.06   CUDA Version: $FAKE_DRIVER_CUDA |" ;;
  *) exit 9 ;;
esac
EOF
cat > "$TMP/bin/nvcc" <<'EOF'
#!/usr/bin/env bash
echo "nvcc: NVIDIA (R) Cuda compiler driver"
echo "Cuda compilation tools, release $FAKE_NVCC_CUDA, V$FAKE_NVCC_CUDA.88"
echo "Build cuda_fake"
EOF
# python3 -c CODE: answers the queries gpu-check makes, by what CODE asks.
cat > "$TMP/bin/python3" <<'EOF'
#!/usr/bin/env bash
[ "${1:-}" = -c ] || exit 9
case "$2" in
  *sys.executable*) echo "$0" ;;
  *cmake_prefix_path*) echo "$FAKE_ROOT/torch" ;;
  *__version__*) echo "2.8.0" ;;
  *version.cuda*) echo "$FAKE_TORCH_CUDA" ;;
  *compiled_with_cxx11_abi*) echo 1 ;;
  *device_count*) echo "$FAKE_GPUS" ;;
  *cuda.init*) echo "RuntimeError: fake: no CUDA GPUs are available" >&2; exit 1 ;;
  *nvidia.nccl*) echo "$FAKE_ROOT/nccl" ;;
  *get_device_capability*) echo 90 ;;
  "import torch") exit 0 ;;
  *) exit 9 ;;
esac
EOF
cp "$TMP/bin/python3" "$TMP/bin/venv-python"
chmod +x "$TMP/bin/"*

# expect NAME RC [VAR=VALUE...] -- NEEDLE...: runs `gpu-check.sh --preflight` with the fakes (and
# the variables), expects exit status RC and every NEEDLE in its output or its environment.txt.
expect() {
  local name="$1" want="$2" vars=() out="$TMP/out-$1" rc=0
  shift 2
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  env -u TPB_PYTHON -u CUDACXX -u NCCL_HOME -u TPB_GPU_CMAKE_ARGS -u CMAKE_CUDA_ARCHITECTURES \
    PATH="$TMP/bin:$PATH" FAKE_ROOT="$TMP" FAKE_DRIVER_CUDA=13.0 FAKE_NVCC_CUDA=13.0 FAKE_TORCH_CUDA=12.8 \
    FAKE_GPUS=1 CUDACXX="$TMP/bin/nvcc" TPB_GPU_BUILD_DIR="$TMP/build" "${vars[@]}" \
    bash "$SRC/scripts/gpu-check.sh" --preflight "$out" > "$TMP/$name.log" 2>&1 || rc=$?
  cat "$out/environment.txt" >> "$TMP/$name.log" 2>/dev/null
  local ok=1
  [ "$rc" = "$want" ] || { echo "FAIL $name: exit $rc, expected $want"; ok=0; }
  for needle in "$@"; do
    grep -qF -- "$needle" "$TMP/$name.log" || { echo "FAIL $name: '$needle' not in the output"; ok=0; }
  done
  if [ "$ok" = 1 ]; then echo "ok   $name"; else FAILED=1; sed 's/^/     | /' "$TMP/$name.log" | tail -15; fi
}

# ---- gpu-check's checks ------------------------------------------------------------------------
expect all-present 0 -- "preflight: ok" "tests:      ON" "zlib:       found" \
  "python:     $TMP/bin/python3 (TPB_PYTHON)" "card:       NVIDIA H100 80GB HBM3, driver 580.65.06 (CUDA 13.0)"
# M1: the interpreter named by TPB_PYTHON is the one whose torch is used, and is exported as such.
expect tpb-python 0 TPB_PYTHON="$TMP/bin/venv-python" -- "python:     $TMP/bin/venv-python (TPB_PYTHON)"
# M2: a newer minor than the driver's runs (minor-version compatibility); a newer major does not.
expect nvcc-minor 0 FAKE_NVCC_CUDA=13.1 -- "warning: nvcc $TMP/bin/nvcc is CUDA 13.1, the driver's is 13.0" "preflight: ok"
expect nvcc-major 2 FAKE_NVCC_CUDA=14.0 -- "nvcc $TMP/bin/nvcc is CUDA 14.0, but the driver supports CUDA 13.0 at most"
# L8: a driver too old for PyTorch's CUDA is named as such, not as "no GPU".
expect torch-major 2 FAKE_DRIVER_CUDA=12.4 FAKE_TORCH_CUDA=13.0 FAKE_GPUS=0 FAKE_NVCC_CUDA=12.4 -- \
  "PyTorch 2.8.0 is CUDA 13.0, but the driver supports CUDA 12.4 at most"
expect no-gpu 2 FAKE_GPUS=0 -- "CUDA sees no GPU" "torch.cuda.init(): RuntimeError: fake: no CUDA GPUs are available"
# M5: the libraries, named with their Debian packages before anything is configured.
expect no-json-cli11 2 TPB_GPU_CMAKE_ARGS="-DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON" -- \
  "the build needs nlohmann-json3-dev libcli11-dev: sudo apt-get install nlohmann-json3-dev libcli11-dev"
expect no-gtest 2 TPB_GPU_CMAKE_ARGS=-DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -- \
  "building without the tests" "GoogleTest not found (Debian: libgtest-dev)" "tests:      OFF"
expect no-zlib 0 TPB_GPU_CMAKE_ARGS=-DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=ON -- \
  "zlib:       not found (Debian: zlib1g-dev)" "preflight: ok"

# ---- bad arguments: exit 2 and one line, before anything is checked or created -------------------
ok=1
while IFS='|' read -r name args needle; do
  read -r -a argv <<< "$args"
  [ "$name" = empty ] && argv=("")
  rc=0
  (cd "$TMP" && bash "$SRC/scripts/gpu-check.sh" "${argv[@]}") > "$TMP/arg.out" 2> "$TMP/arg.err" || rc=$?
  if [ "$rc" != 2 ] || [ "$(wc -l < "$TMP/arg.err")" != 1 ] || [ -s "$TMP/arg.out" ] || ! grep -qF -- "$needle" "$TMP/arg.err"; then
    echo "FAIL args-$name: exit $rc, stderr: $(cat "$TMP/arg.err")"; ok=0
  fi
done <<'CASES'
unknown|--bogus|unknown option '--bogus'
two-dirs|one two|one RESULTS_DIR only, got 'one' and 'two'
empty||RESULTS_DIR is empty
CASES
[ ! -e "$TMP/one" ] || { echo "FAIL args: a results directory was created before the arguments were checked"; ok=0; }
if [ "$ok" = 1 ]; then echo "ok   arguments"; else FAILED=1; fi

# ---- the summary's figures for docs/gpu.md, over made-up result files ---------------------------
R="$TMP/results"
mkdir -p "$R"
printf 'date:       2026-01-02T03:04:05Z\ncard:       NVIDIA H100 80GB HBM3, driver 580.65.06 (CUDA 13.0)\n' > "$R/environment.txt"
printf 'tpbench:    abc1234\npytorch:    2.8.0 (CUDA 12.8, cxx11 ABI 1) at /x\n' >> "$R/environment.txt"
printf 'build\tok\n' > "$R/steps.tsv"
cat > "$R/allreduce-cuda-n1.json" <<'EOF'
{"meta": {}, "allreduce": [
 {"algo": "ring", "n_gpus": 1, "bytes": 4096, "time_us": {"median": 2.0}, "algbw_gbps": 2.0, "busbw_gbps": 0, "status": "ok"},
 {"algo": "ring", "n_gpus": 1, "bytes": 268435456, "time_us": {"median": 100.0}, "algbw_gbps": 2684.4, "busbw_gbps": 0, "status": "ok"},
 {"algo": "nccl", "n_gpus": 1, "bytes": 268435456, "time_us": {"median": 90.0}, "algbw_gbps": 2982.6, "busbw_gbps": 0, "status": "ok"}]}
EOF
cat > "$R/cuda-sum.json" <<'EOF'
{"meta": {}, "rows": [{"kind": "aligned", "bytes": 1073741824, "copy_gbps": {"median": 3000.0}, "sum_gbps": {"median": 2700.0}, "ratio": 0.9}],
 "goal": {"ratio_min": 0.85, "bytes": 1073741824, "met": true, "ratio": 0.9}}
EOF
cat > "$R/sweep-cuda.json" <<'EOF'
{"runs": [{"config": {"strategy": "single", "n_gpus": 1, "batch_size": 64}, "summary": {"samples_per_s": 50000}, "status": "ok"},
          {"config": {"strategy": "ddp", "n_gpus": 1, "batch_size": 64}, "summary": {"samples_per_s": 45000}, "status": "ok"}]}
EOF
echo '{"runs": [{"status": "ok", "epochs": [{"samples_per_s": 1}, {"samples_per_s": 48000}, {"samples_per_s": 52000}]}]}' > "$R/single-cuda-b64.json"
echo '{"median_samples_per_s": 40000}' > "$R/torch-single-b64.json"
sed -n "/<<'PY'\$/,/^PY\$/p" "$SRC/scripts/gpu-check.sh" | sed '1d;$d' > "$TMP/summary.py"
python3 "$TMP/summary.py" "$R" > "$TMP/summary.txt" 2>&1
ok=1
for needle in \
  "On NVIDIA H100 80GB HBM3, driver 580.65.06 (CUDA 13.0), 2026-01-02, PyTorch 2.8.0 (CUDA 12.8, cxx11 ABI 1), tpbench abc1234" \
  "| sum kernel vs device-to-device copy, 1G (GB/s read + written) | 2700.0 | 3000.0 | 0.900 | >= 0.85: met |" \
  "| single on cuda vs PyTorch's own loop, batch 64 (samples/s) | 50000 | 40000 | 1.250 | >= 0.97: not slower |" \
  "| single on cuda vs PyTorch's own loop, batch 512 (samples/s) | - | - | - | >= 0.97: - |" \
  "| ddp vs single at N=1, batch 64 (samples/s) | 45000 | 50000 | 0.900 | >= 0.95: NOT met |" \
  "| allreduce ring at N=1, 256M: µs per call (nothing moves at N=1) | 100.0 | - | - | - |" \
  "| allreduce nccl at N=1, 256M: µs per call (nothing moves at N=1) | 90.0 | - | - | - |"; do
  grep -qF -- "$needle" "$TMP/summary.txt" || { echo "FAIL summary: '$needle' not in it"; ok=0; }
done
if [ "$ok" = 1 ]; then echo "ok   summary"; else FAILED=1; sed 's/^/     | /' "$TMP/summary.txt" | tail -20; fi
exit "$FAILED"
