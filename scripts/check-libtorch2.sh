#!/usr/bin/env bash
# scripts/check-libtorch2.sh — compile every translation unit of tpbench (C++ and CUDA) against
# LibTorch 2.x with CUDA and NCCL on, as a GPU machine's PyTorch would, on a machine that has
# only Debian's LibTorch 1.13. Compile only: nothing is linked or run.
#
#   1. fetch (once, cached): Debian's next suite (trixie) carries LibTorch 2.6 built for CUDA
#      (libtorch-cuda-dev: headers and the CMake config that loads Caffe2's cuda.cmake, as
#      PyTorch's own LibTorch does) and the matching Gloo headers (libgloo-dev). They are
#      downloaded with `apt-get download` under a private apt configuration (its own sources
#      list naming the mirror this machine already uses, its own lists and cache) and unpacked
#      with `dpkg -x` into the cache folder: never installed. Their shared libraries would need a
#      newer C library and are not downloaded at all: empty stand-ins with the names the CMake
#      config checks for let it configure; nothing links against them.
#   2. configure a separate build folder against those headers (build type None: no
#      optimisation, the compile is what is checked) and check the GPU path is on;
#   3. build every object file (ninja -k 0: every error, not only the first) and print a summary.
#
# Usage: scripts/check-libtorch2.sh [--refresh] [--api]
#   --refresh  fetch again even if cached
#   --api      only the translation units whose source uses LibTorch's distributed API, where
#              1.13 and 2.x differ (c10d, its Gloo process group, c10/ATen CUDA, the compat
#              shims): the part of the code that drifts with the LibTorch version, in a fraction
#              of the time (CI runs this; the full pass is for by hand). The CUDA and NCCL code
#              that does not touch LibTorch is compiled by every normal build already.
# Environment: TPB_LT2_CACHE (default ~/.cache/tpbench/libtorch2), TPB_LT2_BUILD (default
#   build-lt2), TPB_LT2_JOBS (default nproc), TPB_LT2_ALLOW_SKIP=1 (a failed download exits 0
#   with a loud SKIPPED line instead of failing).
# Exit status: 0 every translation unit compiled; 1 compile errors; 2 the check could not run
#   (no network or mirror failure with an empty cache, no nvcc/NCCL, configure failed).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${TPB_LT2_CACHE:-$HOME/.cache/tpbench/libtorch2}"
BUILD="${TPB_LT2_BUILD:-$ROOT/build-lt2}"
JOBS="${TPB_LT2_JOBS:-$(nproc 2>/dev/null || echo 2)}"
SUITE=trixie
# Package (component): the CUDA build of LibTorch lives in contrib (it depends on non-free CUDA).
PACKAGES=(libtorch-cuda-dev libgloo-dev)
STAGE="$CACHE/root"   # the unpacked packages: $STAGE/usr/include, $STAGE/usr/lib/<arch>/cmake
REFRESH=0
API=0
for arg in "$@"; do
  case "$arg" in
    --refresh) REFRESH=1 ;;
    --api) API=1 ;;
    *) echo "check-libtorch2: unknown argument '$arg' (--refresh, --api)" >&2; exit 2 ;;
  esac
done
# --api: a source belongs to the subset when it names one of these (directly; the shims and
# headers that wrap c10d or CUDA are in the list, so their users are too).
API_PATTERN='torch/csrc/distributed|c10d|c10/cuda|ATen/cuda|torch_compat\.h|store_c10d\.h|gloo_group\.h|gloo_process_group\.h|getFuture'


say() { printf '== %s\n' "$*"; }
die() { printf 'check-libtorch2: %s\n' "$*" >&2; exit 2; }
T0=$SECONDS

# ---- 1. fetch ------------------------------------------------------------------------------------
fetch_failed() {  # the mirror or the network failed: fail, or skip loudly when allowed
  local why="$1"
  if [ "${TPB_LT2_ALLOW_SKIP:-0}" = 1 ]; then
    printf '\n**********\ncheck-libtorch2: SKIPPED (TPB_LT2_ALLOW_SKIP=1): %s\nThe code was NOT compiled against LibTorch 2.x.\n**********\n' "$why" >&2
    exit 0
  fi
  die "cannot fetch LibTorch 2.x ($why). Needs the network once (then cached in $CACHE); TPB_LT2_ALLOW_SKIP=1 turns this into a loud skip"
}

fetch() {
  command -v apt-get >/dev/null && command -v dpkg >/dev/null || die "needs apt-get and dpkg (a Debian or Ubuntu machine)"
  # The Debian mirror this machine already uses, read from its own apt sources (deb822 or
  # one-line format); the first URI that serves Debian's main archive (not -security).
  local uri
  uri="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '
      /^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/ && $i ~ /\/debian\/?$/) { print $i; exit } }')"
  [ -n "$uri" ] || uri="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\// && $i !~ /security/ && $i ~ /\/debian\/?$/) { print $i; exit } }')"
  [ -n "$uri" ] || die "no Debian mirror found in /etc/apt/sources.list{,.d}: cannot fetch the $SUITE packages"
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -f "$keyring" ] || die "$keyring missing (package debian-archive-keyring)"

  local apt="$CACHE/apt"
  rm -rf "$apt" "$CACHE/debs" "$STAGE"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$CACHE/debs" "$STAGE"
  echo "deb [signed-by=$keyring] $uri $SUITE main contrib" > "$apt/sources.list"
  local opts=(-o "Dir::State::Lists=$apt/lists" -o "Dir::Etc::SourceList=$apt/sources.list"
              -o Dir::Etc::SourceParts=/dev/null -o "Dir::Cache=$apt/cache"
              -o Dir::State::status=/dev/null -o Dir::Etc::Preferences=/dev/null
              -o Dir::Etc::PreferencesParts=/dev/null -o Debug::NoLocking=1
              -o APT::Sandbox::User=root -o Acquire::Retries=2 -o Acquire::http::Timeout=30)
  say "fetching ${PACKAGES[*]} ($SUITE) from the mirror in this machine's apt sources"
  apt-get "${opts[@]}" -qq update > "$CACHE/fetch.log" 2>&1 \
    || { tail -3 "$CACHE/fetch.log" >&2; fetch_failed "apt-get update for $SUITE failed (log: $CACHE/fetch.log)"; }
  (cd "$CACHE/debs" && apt-get "${opts[@]}" -qq download "${PACKAGES[@]}") >> "$CACHE/fetch.log" 2>&1 \
    || { tail -3 "$CACHE/fetch.log" >&2; fetch_failed "apt-get download ${PACKAGES[*]} failed (log: $CACHE/fetch.log)"; }
  local deb
  for deb in "$CACHE"/debs/*.deb; do dpkg -x "$deb" "$STAGE"; done
  # Empty stand-ins for the shared libraries the CMake config names (the -dev packages carry
  # only the .so links; the libraries are in packages not downloaded).
  local f link target
  while read -r f; do
    f="${f//\$\{_IMPORT_PREFIX\}/$STAGE/usr/lib}"
    case "$f" in "$STAGE"/*) mkdir -p "$(dirname "$f")"; : > "$f" ;; esac
  done < <(sed -n 's/.*IMPORTED_LOCATION[A-Z_]* "\([^"]*\)".*/\1/p' "$STAGE"/usr/lib/*/cmake/Caffe2/Caffe2Targets-*.cmake)
  for _ in 1 2 3; do
    while read -r link; do
      target="$(dirname "$link")/$(readlink "$link")"
      if [ -e "$target.0" ]; then ln -sf "$(basename "$target.0")" "$target"; else : > "$target"; fi
    done < <(find "$STAGE/usr/lib" -xtype l)
  done
  (cd "$CACHE/debs" && ls *.deb) > "$STAGE/.tpb-fetched"
  rm -f "$CACHE"/debs/*.deb  # unpacked; the stamp names what they were
}

if [ "$REFRESH" = 1 ] || [ ! -f "$STAGE/.tpb-fetched" ]; then
  fetch
else
  say "using the cached packages in $STAGE (--refresh fetches again)"
fi
TORCH_DIR="$(ls -d "$STAGE"/usr/lib/*/cmake/Torch 2>/dev/null | head -1)"
[ -n "$TORCH_DIR" ] || die "no Torch CMake config under $STAGE/usr/lib/*/cmake (remove $CACHE and run again)"
sed 's/^/   /' "$STAGE/.tpb-fetched"
T_FETCH=$((SECONDS - T0))

# ---- 2. configure --------------------------------------------------------------------------------
T1=$SECONDS
LAUNCH=()
if command -v ccache >/dev/null; then
  LAUNCH=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
command -v ninja >/dev/null || die "needs ninja (package ninja-build)"
# The toolkit the project's own build would choose (cmake/cuda_arch.cmake, before Torch looks):
# CUDACXX, else /usr/local/cuda, else nvcc on PATH. Named here too, to say up front when it has
# no headers; the project derives CUDA_TOOLKIT_ROOT_DIR for Caffe2's FindCUDA from it (which would
# otherwise take the folder above the first nvcc on PATH: /usr/local for a wrapper script there).
NVCC="${CUDACXX:-}"
[ -n "$NVCC" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || NVCC=/usr/local/cuda/bin/nvcc
[ -n "$NVCC" ] || NVCC="$(command -v nvcc || true)"
[ -n "$NVCC" ] && [ -x "$NVCC" ] \
  || die "no nvcc (not CUDACXX, not /usr/local/cuda/bin, not on PATH): the GPU path cannot be compiled"
CUDA_ROOT="$(cd "$(dirname "$NVCC")/.." && pwd)"
[ -f "$CUDA_ROOT/include/cuda_runtime.h" ] \
  || die "nvcc at $NVCC, but no CUDA headers under $CUDA_ROOT/include (set CUDACXX to the toolkit's own bin/nvcc)"
mkdir -p "$BUILD"
say "configuring $BUILD against LibTorch from $TORCH_DIR (log: $BUILD/configure.log)"
# CMAKE_PREFIX_PATH puts the unpacked tree first for every find_library of Torch's config, so
# nothing resolves to Debian's 1.13 under /usr. Build type None: -O0, the compile is the check.
# Linking an executable only touches its file: some objects are ordered after an executable
# (tests after tpbench), and the stand-in libraries cannot be linked against.
NOLINK='<CMAKE_COMMAND> -E touch <TARGET>'
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=None -DTorch_DIR="$TORCH_DIR" \
  -DCMAKE_PREFIX_PATH="$STAGE/usr" -DTPB_WITH_CUDA=ON "${LAUNCH[@]}" \
  -DCMAKE_CUDA_COMPILER="$NVCC" \
  -DCMAKE_CXX_LINK_EXECUTABLE="$NOLINK" -DCMAKE_CUDA_LINK_EXECUTABLE="$NOLINK" \
  > "$BUILD/configure.log" 2>&1 \
  || { grep -A5 "CMake Error" "$BUILD/configure.log" | head -30 >&2; die "configure failed (see $BUILD/configure.log)"; }
sed -n '/tpbench .* configuration/,/micro-benchmarks/p' "$BUILD/configure.log" | sed 's/^-- //'
grep -q "LibTorch        : 2\." "$BUILD/configure.log" || die "configured against a LibTorch other than 2.x (see $BUILD/configure.log)"
grep -q "GPU path        : compiled" "$BUILD/configure.log" \
  || die "the GPU path is not compiled (CUDA toolkit and NCCL needed, e.g. under /usr/local/cuda): nothing GPU-side would be checked"
T_CONF=$((SECONDS - T1))

# ---- 3. compile every translation unit -------------------------------------------------------------
T2=$SECONDS
mapfile -t OBJECTS < <(ninja -C "$BUILD" -t targets all | sed -n 's/^\(.*\.o\): .*/\1/p' | sort -u)
[ "${#OBJECTS[@]}" -gt 0 ] || die "no object files in $BUILD/build.ninja"
SCOPE="every translation unit"
if [ "$API" = 1 ]; then
  # An object's source is its path under the target's .dir, less the ".o", in the folder whose
  # CMakeFiles holds it (tests/CMakeFiles/tpb_tests.dir/gpu_test.cc.o: tests/gpu_test.cc).
  ALL=${#OBJECTS[@]}
  KEEP=()
  for o in "${OBJECTS[@]}"; do
    src="${o%%CMakeFiles/*}${o#*.dir/}"; src="${src%.o}"
    [ -f "$ROOT/$src" ] && grep -qE "$API_PATTERN" "$ROOT/$src" && KEEP+=("$o")
  done
  OBJECTS=("${KEEP[@]}")
  [ "${#OBJECTS[@]}" -gt 0 ] || die "--api: no translation unit matches (the pattern or the object paths changed)"
  SCOPE="the ${#OBJECTS[@]} of $ALL translation units that use LibTorch's distributed API (--api)"
fi
N_CXX=0; N_CU=0
for o in "${OBJECTS[@]}"; do
  case "$o" in *.cu.o) N_CU=$((N_CU + 1)) ;; *) N_CXX=$((N_CXX + 1)) ;; esac
done
say "compiling ${#OBJECTS[@]} translation units ($N_CXX C++, $N_CU CUDA) with $JOBS jobs (log: $BUILD/compile.log)"
RC=0
if [ "$API" = 1 ]; then
  # Asked for a few objects, ninja would build their order-only prerequisites as well: the tests'
  # objects are ordered after tpbench, so every library's objects (162 of 179 steps, not 14).
  # The generated headers first, then each chosen object by its own command (ninja -t commands
  # -s), JOBS at a time; a failure is logged as ninja logs one, "FAILED: <object>".
  mapfile -t GENERATED < <(sed -n 's/^build \([^ :|]*\)[^:]*: CUSTOM_COMMAND.*/\1/p' "$BUILD/build.ninja" | grep -v '\.util$' || true)
  if [ "${#GENERATED[@]}" -gt 0 ]; then
    ninja -C "$BUILD" "${GENERATED[@]}" > "$BUILD/compile.log" 2>&1 || RC=$?
  else
    : > "$BUILD/compile.log"
  fi
  compile_object() {  # OBJECT: compiled in $BUILD by its own command, output in OBJECT.log
    local o=$1 cmd
    cmd="$(ninja -C "$BUILD" -t commands -s "$o")" && mkdir -p "$BUILD/$(dirname "$o")" || return 1
    (cd "$BUILD" && bash -c "$cmd") > "$BUILD/$o.log" 2>&1 || { echo "FAILED: $o" >> "$BUILD/$o.log"; return 1; }
  }
  export -f compile_object
  export BUILD
  [ "$RC" -ne 0 ] || printf '%s\0' "${OBJECTS[@]}" |
    xargs -0 -P "$JOBS" -n 1 bash -c 'compile_object "$1"' _ || RC=$?
  for o in "${OBJECTS[@]}"; do
    [ ! -f "$BUILD/$o.log" ] || { cat "$BUILD/$o.log"; rm -f "$BUILD/$o.log"; }
  done >> "$BUILD/compile.log"
else
  ninja -C "$BUILD" -k 0 -j "$JOBS" "${OBJECTS[@]}" > "$BUILD/compile.log" 2>&1 || RC=$?
fi
T_COMP=$((SECONDS - T2))

mapfile -t FAILED < <(sed -n 's/^FAILED: \([^ ]*\).*/\1/p' "$BUILD/compile.log")
SKIPPED=0  # objects that never ran because something they are ordered after failed
for o in "${OBJECTS[@]}"; do [ -f "$BUILD/$o" ] || SKIPPED=$((SKIPPED + 1)); done
WARNINGS="$(grep -c ': warning: ' "$BUILD/compile.log" || true)"
# The CUDA objects must be compiled for the requested architecture only, not for Caffe2's list.
CU_ARCHS="$(ninja -C "$BUILD" -t commands "${OBJECTS[@]}" 2>/dev/null | grep nvcc |
  grep -oE -- '(--generate-code=|-gencode[= ])[^ ]+' | sed 's/^--generate-code=//; s/^-gencode[= ]//' |
  sort -u | tr '\n' ' ' || true)"

echo
say "summary (LibTorch $(sed -n 's/.*LibTorch        : \([^ ]*\).*/\1/p' "$BUILD/configure.log"), CUDA and NCCL on)"
printf '  %-28s %s\n' "translation units" "${#OBJECTS[@]} ($N_CXX C++, $N_CU CUDA)"
[ "$API" = 1 ] && printf '  %-28s %s\n' "scope" "--api: $ALL in the build, the rest not compiled here"
printf '  %-28s %s\n' "failed" "${#FAILED[@]}"
printf '  %-28s %s\n' "not compiled (blocked)" "$SKIPPED"
printf '  %-28s %s\n' "compiler warnings" "$WARNINGS"
printf '  %-28s %s\n' "CUDA gencode in use" "${CU_ARCHS:-none}"
printf '  %-28s %ss fetch, %ss configure, %ss compile\n' "time" "$T_FETCH" "$T_CONF" "$T_COMP"
if [ "${#FAILED[@]}" -gt 0 ] || [ "$SKIPPED" -gt 0 ] || [ "$RC" -ne 0 ]; then
  echo
  if [ "${#FAILED[@]}" -gt 0 ]; then
    echo "failed:"
    printf '  %s\n' "${FAILED[@]}"
    echo "first errors:"
    grep -E ': (fatal )?error' "$BUILD/compile.log" | sort -u | head -20 | sed 's/^/  /' || true
  fi
  echo "check-libtorch2: FAILED: ${#FAILED[@]} step(s) failed and $SKIPPED of ${#OBJECTS[@]} translation units were not compiled against LibTorch 2.x (see $BUILD/compile.log)" >&2
  exit 1
fi
echo "check-libtorch2: ok: $SCOPE, compiled against LibTorch 2.x without errors"
