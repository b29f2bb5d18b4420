#!/usr/bin/env bash
# scripts/report-screenshot.sh REPORT_DIR — opens REPORT_DIR/index.html in headless Chromium
# (tests/browser_check.py) and keeps a screenshot of the whole page beside it, as
# REPORT_DIR/screenshot.png: a 1280 px wide viewport drawn at scale 0.6 (about 770 px wide, half
# a megabyte for the baseline report). The same checks as the test run too, and their findings
# are printed: the screenshot is written either way, the exit status says whether the page passed.
# Rerun it after regenerating a committed report (reports/baseline-cpu: `make baseline`).
# Exit 0 when the page passed, 1 with findings, 2 when it could not run (no Chromium: run
# scripts/install-deps.sh).
set -uo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${TPB_TEST_PYTHON:-/usr/bin/python3}"
[ "$#" -eq 1 ] || { echo "usage: report-screenshot.sh REPORT_DIR" >&2; exit 2; }
[ -f "$1/index.html" ] || { echo "report-screenshot: no such file: $1/index.html" >&2; exit 2; }
exec "$PY" "$SRC/tests/browser_check.py" "$1/index.html" --screenshot "$1/screenshot.png" \
  --widths 1280,800 --scale 0.6
