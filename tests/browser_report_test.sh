#!/usr/bin/env bash
# tests/browser_report_test.sh — the HTML report as a reader's browser shows it. Draws the report
# of the committed results (results/baseline-cpu.json, as tests/baseline_report_test.sh does) and
# opens its index.html in headless Chromium (tests/browser_check.py, over the DevTools pipe: no
# port is opened): every image loads, nothing overflows at 1280 and 800 px, no console error,
# exception or error log entry. A screenshot is written beside that report (KEEP=1 keeps the
# folder and says where). Then the check must fail on a copy broken on purpose (a chart PNG
# removed, an element too wide for the page, a console error, a thrown exception), naming each
# break, and must not flag a wide table inside a scroll box: the test can fail.
# Usage: browser_report_test.sh TPBENCH. CTest runs it (Scripts.ReportOpensInBrowser).
# Exit 0 when the report passes and the broken copy fails as expected, 1 otherwise, 2 when it
# cannot run, 77 (skipped) where Chromium is not installed.
set -uo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$(realpath -e "${1:-}" 2>/dev/null)"
PY="${TPB_TEST_PYTHON:-/usr/bin/python3}"
CHECK="$SRC/tests/browser_check.py"
[ -x "$BIN" ] || { echo "browser_report_test: no tpbench binary given (got '${1:-}')" >&2; exit 2; }
if ! command -v "${TPB_CHROMIUM:-chromium}" >/dev/null; then
  echo "SKIPPED: chromium not installed (scripts/install-deps.sh installs it)"
  exit 77
fi
command -v "$PY" >/dev/null || { echo "browser_report_test: $PY not found" >&2; exit 2; }
# Without gnuplot the page has no image to load: that would pass for nothing.
command -v gnuplot >/dev/null || { echo "browser_report_test: gnuplot not found" >&2; exit 2; }
OUT="$(mktemp -d)"
trap '[ -n "${KEEP:-}" ] || rm -rf "$OUT"' EXIT

(cd "$SRC" && "$BIN" report results/baseline-cpu.json -o "$OUT/report") > "$OUT/log" 2>&1 ||
  { echo "browser_report_test: tpbench report failed:"; cat "$OUT/log"; exit 1; }
FAILED=0

# ---- the report of the committed results -------------------------------------------------------
"$PY" "$CHECK" "$OUT/report/index.html" --screenshot "$OUT/report/screenshot.png"
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "browser_report_test: FAIL: the report of results/baseline-cpu.json (browser_check exit $rc)"
  FAILED=1
fi
[ -n "${KEEP:-}" ] && echo "browser_report_test: kept $OUT/report (screenshot.png beside index.html)"

# ---- a copy broken on purpose: each break must be named ----------------------------------------
cp -r "$OUT/report" "$OUT/broken"
rm -f "$OUT/broken/screenshot.png"
gone="$(find "$OUT/broken" -maxdepth 1 -name '*.png' -printf '%f\n' | sort | head -n 1)"
if [ -z "$gone" ]; then
  echo "browser_report_test: FAIL: the report has no PNG chart to remove"
  exit 1
fi
rm "$OUT/broken/$gone"
"$PY" - "$OUT/broken/index.html" <<'EOF' || { echo "browser_report_test: cannot break the copy"; exit 2; }
import sys
path = sys.argv[1]
page = open(path, encoding="utf-8").read()
extra = (
    '<div id="tpb-too-wide" style="width:3000px">too wide</div>\n'
    '<div style="overflow-x:auto"><table id="tpb-scrolled"><tr><td style="white-space:nowrap">'
    + "wide cell " * 300 + '</td></tr></table></div>\n'
    '<script>console.error("tpb-console-error");</script>\n'
    '<script>throw new Error("tpb-thrown");</script>\n')
assert "</body>" in page
open(path, "w", encoding="utf-8").write(page.replace("</body>", extra + "</body>"))
EOF
"$PY" "$CHECK" "$OUT/broken/index.html" > "$OUT/broken.out" 2>&1
rc=$?
BROKEN_OK=1
if [ "$rc" -ne 1 ]; then
  echo "browser_report_test: FAIL: the broken copy gave exit $rc, not 1 (findings):"
  cat "$OUT/broken.out"
  BROKEN_OK=0
else
  for want in "image did not load: $gone" "tpb-too-wide" "console error: tpb-console-error" \
              "uncaught exception: Error: tpb-thrown"; do
    if ! grep -qF -- "$want" "$OUT/broken.out"; then
      echo "browser_report_test: FAIL: the broken copy's findings do not name '$want':"
      cat "$OUT/broken.out"
      BROKEN_OK=0
    fi
  done
  if grep -qF "tpb-scrolled" "$OUT/broken.out"; then
    echo "browser_report_test: FAIL: a wide table inside a scroll box was flagged:"
    cat "$OUT/broken.out"
    BROKEN_OK=0
  fi
fi
if [ "$BROKEN_OK" -eq 1 ]; then
  echo "browser_report_test: a copy broken on purpose fails, each break named ($(tail -n 1 "$OUT/broken.out"))"
else
  FAILED=1
fi

if [ "$FAILED" -ne 0 ]; then
  echo "browser_report_test: FAILED"
  exit 1
fi
echo "browser_report_test: the report opens in $("${TPB_CHROMIUM:-chromium}" --version 2>/dev/null | head -n 1)"
exit 0
