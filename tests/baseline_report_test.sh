#!/usr/bin/env bash
# tests/baseline_report_test.sh — the committed report (reports/baseline-cpu) is what this build
# draws from the committed results (results/baseline-cpu.json): every text file alike (index.md,
# index.html, each chart's data, gnuplot script and SVG). PNGs are left out: their bytes depend on
# the fonts gnuplot's cairo finds. A refactor that changes what a report says fails here; a
# change meant to do so regenerates the report (`tpbench report results/baseline-cpu.json -o
# reports/baseline-cpu`) in the same commit.
# Usage: baseline_report_test.sh TPBENCH. CTest runs it (Scripts.BaselineReportRegenerates).
# Exit 0 when alike, 1 when not (the diff on stdout), 2 when it cannot run.
set -uo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$(realpath -e "${1:-}" 2>/dev/null)"
[ -x "$BIN" ] || { echo "baseline_report_test: no tpbench binary given (got '$BIN')" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "baseline_report_test: gnuplot not found" >&2; exit 2; }
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# From the repository's root, as `make baseline` draws it: the page names the file as given.
(cd "$SRC" && "$BIN" report results/baseline-cpu.json -o "$OUT/report") > "$OUT/log" 2>&1 ||
  { echo "baseline_report_test: tpbench report failed:"; cat "$OUT/log"; exit 1; }
if ! diff -r -x '*.png' "$SRC/reports/baseline-cpu" "$OUT/report"; then
  echo "baseline_report_test: reports/baseline-cpu is not what this build draws from results/baseline-cpu.json"
  exit 1
fi
echo "baseline_report_test: reports/baseline-cpu regenerates alike ($(ls "$OUT/report" | wc -l) files)"
