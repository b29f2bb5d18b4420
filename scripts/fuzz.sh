#!/usr/bin/env bash
# Builds the fuzz targets (tests/fuzz: clang, libFuzzer, ASan + UBSan) into $FUZZ_BUILD and runs
# each for $FUZZ_SECONDS, $FUZZ_JOBS at a time; prints per target the inputs run and whether it
# found anything. `make fuzz` (20 s each, CI) and `make fuzz-long` (10 min each) call it.
#
#   scripts/fuzz.sh [TARGET...]        default: every target tests/fuzz/CMakeLists.txt lists
#
# Each target reads its seeds from tests/fuzz/corpus/<name>/ (never written) and keeps what it
# learns in $FUZZ_BUILD/corpus/<name>/, so later runs start from there. A finding (crash,
# sanitizer report, uncaught exception, refusal that names no input, timeout, out of memory) is
# saved as $FUZZ_BUILD/findings/<target>/<kind>-<sha1>; rerun one with `$FUZZ_BUILD/<target> FILE`.
# Exit 0: no finding; 1: a finding; 2: the build failed.
set -uo pipefail
cd "$(dirname "$0")/.."

FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
FUZZ_JOBS=${FUZZ_JOBS:-2}

configure=(cmake -S tests/fuzz -B "$FUZZ_BUILD" -G Ninja)
command -v ccache >/dev/null && configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if ! { CC=clang CXX=clang++ "${configure[@]}" >/dev/null && cmake --build "$FUZZ_BUILD" -j "$(nproc)"; }; then
  echo "fuzz: the fuzz build failed (needs clang and libclang-rt-14-dev: scripts/install-deps.sh)" >&2
  exit 2
fi

targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < "$FUZZ_BUILD/targets.txt"

# The inputs' files go to tmpfs where there is one: the readers fsync what they write.
scratch=/dev/shm
[ -d "$scratch" ] && [ -w "$scratch" ] || scratch=${TMPDIR:-/tmp}

# The dictionary of a target: tests/fuzz/dict/<name>.dict, or for the targets that read several
# formats, those formats' dictionaries together.
dictionary() {
  local name=${1#fuzz_} parts=()
  case $name in
    compare|model|history) parts=(results) ;;
    report) parts=(results trace) ;;
    *) parts=("$name") ;;
  esac
  local out="$FUZZ_BUILD/dict/$1.dict" p
  mkdir -p "$FUZZ_BUILD/dict"
  : > "$out"
  for p in "${parts[@]}"; do
    [ -f "tests/fuzz/dict/$p.dict" ] && cat "tests/fuzz/dict/$p.dict" >> "$out"
  done
  [ -s "$out" ] && echo "-dict=$out"
}

run_one() {
  local t=$1 name=${1#fuzz_}
  local work="$FUZZ_BUILD/corpus/$name" found="$FUZZ_BUILD/findings/$t" seeds="tests/fuzz/corpus/$name"
  mkdir -p "$work" "$found"
  [ -d "$seeds" ] || seeds=""
  # -timeout: an input that takes 10 s is a hang; -rss_limit_mb: 2 GiB is a reader without bounds.
  TMPDIR=$scratch "$FUZZ_BUILD/$t" "$work" $seeds $(dictionary "$t") -max_total_time="$FUZZ_SECONDS" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$found/" \
    > "$FUZZ_BUILD/$t.log" 2>&1
}

# Two (FUZZ_JOBS) at a time: each target is one process on one core.
running=0
for t in "${targets[@]}"; do
  [ -x "$FUZZ_BUILD/$t" ] || { echo "fuzz: no target $t in $FUZZ_BUILD" >&2; exit 2; }
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$FUZZ_JOBS" ]; then wait -n; running=$((running - 1)); fi
done
wait

status=0
printf '%-18s %12s %8s %8s  %s\n' target inputs seconds corpus findings
for t in "${targets[@]}"; do
  log="$FUZZ_BUILD/$t.log"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  corpus=$(find "$FUZZ_BUILD/corpus/${t#fuzz_}" -type f | wc -l)
  mapfile -t findings < <(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log")
  if grep -q '^Done [0-9]* runs' "$log" && [ ${#findings[@]} -eq 0 ]; then
    printf '%-18s %12s %8s %8s  %s\n' "$t" "$runs" "$secs" "$corpus" 0
  else
    printf '%-18s %12s %8s %8s  %s\n' "$t" "${runs:-?}" "${secs:-?}" "$corpus" "FOUND: ${findings[*]:-see $log}"
    status=1
  fi
done
for t in "${targets[@]}"; do
  grep -q '^Done [0-9]* runs' "$FUZZ_BUILD/$t.log" && continue
  echo "---- $t ($FUZZ_BUILD/$t.log) ----"
  grep -a -A1 -E 'ERROR|runtime error|tpb fuzz|terminate|what\(\)' "$FUZZ_BUILD/$t.log" | grep -av '^--$' | head -12
  grep -a -E '^    #[0-9]+ .* in tpb::' "$FUZZ_BUILD/$t.log" | head -6
done
exit $status
