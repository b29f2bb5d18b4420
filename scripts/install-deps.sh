#!/usr/bin/env bash
# Installs everything tpbench needs to build, test and draw charts, from Debian's packages.
# Idempotent: packages already present are left alone and apt is not touched at all when
# nothing is missing. CUDA and NCCL are not Debian packages here: they are used from
# /usr/local/cuda when present (see cmake/cuda.cmake) and skipped otherwise.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  ccache                            # the A/B gate rebuilds the base revision from cached objects
  libtorch-dev libgloo-dev          # LibTorch 1.13 (CPU) with c10d; Gloo
  nlohmann-json3-dev libcli11-dev   # results JSON; command line
  libgtest-dev libgmock-dev         # tests
  libbenchmark-dev                  # tpbench_micro
  gnuplot-nox                       # charts
  libopenblas0-pthread              # optimised, thread-safe BLAS behind libblas.so.3 (workers pin it to 1 thread)
  zlib1g-dev                        # gzipped MNIST files
  python3-torch                     # PyTorch (/usr/bin/python3): torch_ddp/torch_dp references, torchrun tests
  libopenmpi-dev openmpi-bin        # the mpi transport and allreduce; mpirun (--launcher mpirun, external launch)
  clang libclang-rt-dev             # `make fuzz`: libFuzzer, AddressSanitizer and UBSan (tests/fuzz)
  chromium                          # the HTML report's browser test (tests/browser_report_test.sh)
  slurmctld slurmd slurm-client munge  # a real one-node Slurm that tests/slurm_test.sh starts and stops itself
  nodejs                            # tests/k8s_schema_test.sh: the manifests against the Kubernetes API's schemas
)
# npm comes with some nodejs builds and is Debian's own package beside Debian's nodejs: asked for
# only where there is none, so that it never pulls another nodejs over the one installed.
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# Packages install only: their scripts start no daemon (munge, slurmctld, slurmd; the Slurm test
# starts its own). A policy-rc.d that says no, for the install's length, unless one is there already.
policy=/usr/sbin/policy-rc.d
made_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# scripts/install-deps.sh: no service starts while it installs\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod 755 "$policy"
  made_policy=1
fi
trap '[ -z "$made_policy" ] || $sudo rm -f "$policy"' EXIT
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
