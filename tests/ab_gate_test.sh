#!/usr/bin/env bash
# scripts/ab-gate.sh without building a base (BASE_BIN): bad settings are refused before anything
# runs (exit 2, one line naming the setting); two rounds with one tpbench on both sides pass at a
# generous threshold, leaving every round's files, verdict.md and the two sides' copies of
# tpbench; a new side whose points differ (a wrapper that trains on 4000 samples, not 4096) fails
# with compare's exit 3. CTest runs this (Scripts.AbGate, about 40 s alone, 100 s beside others).
set -uo pipefail
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TPBENCH=$1
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
FAILED=0
gate() { env "$@" bash "$SRC/scripts/ab-gate.sh" 2>"$TMP/err" >"$TMP/out"; }

refused() {  # refused WHAT VAR=VALUE...: exit 2 and one line on stderr naming WHAT
  local what=$1
  shift
  gate BASE_BIN="$TPBENCH" NEW_BIN="$TPBENCH" OUT="$TMP/never" "$@"
  local rc=$?
  [ "$rc" -eq 2 ] || { echo "FAIL: $* gave exit $rc, not 2: $(cat "$TMP/err")"; FAILED=1; }
  [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "$what" "$TMP/err" ||
    { echo "FAIL: $* did not name $what on one line: $(cat "$TMP/err")"; FAILED=1; }
  [ ! -e "$TMP/never/A" ] || { echo "FAIL: $* ran rounds before refusing"; FAILED=1; }
}
refused ROUNDS ROUNDS=abc
refused ROUNDS ROUNDS=0
refused THRESHOLD THRESHOLD=-1
refused ALPHA ALPHA=1.5
refused ALPHA 'ALPHA=0.01;rm'
refused "is not an executable" BASE_BIN=/nonexistent
ln -s "$TPBENCH" "$TMP/link"
refused "is not an executable" NEW_BIN="$TMP/link"
mkdir -p "$TMP/real"
ln -s "$TMP/real" "$TMP/outlink"
refused "is a link" OUT="$TMP/outlink"
# Without BASE_BIN: a revision that does not exist.
(cd "$SRC" && env NEW_BIN="$TPBENCH" OUT="$TMP/never" bash scripts/ab-gate.sh no-such-revision) 2>"$TMP/err" >/dev/null
[ $? -eq 2 ] && grep -q 'BASE_REV' "$TMP/err" || { echo "FAIL: an unknown BASE_REV: $(cat "$TMP/err")"; FAILED=1; }

# A/A over two rounds: under 5 rounds no test, and beside a full ctest -j2 one 64K round once ran
# 500x slower, so the threshold is out of reach: this checks the plumbing, not the timing.
gate BASE_BIN="$TPBENCH" NEW_BIN="$TPBENCH" OUT="$TMP/aa" ROUNDS=2 THRESHOLD=999999
rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: A/A gave exit $rc: $(tail -5 "$TMP/err")"; FAILED=1; }
for f in A/r001-train.json A/r002-coll.json B/r001-coll.json B/r002-train.json verdict.md bin/A/tpbench bin/B/tpbench; do
  [ -f "$TMP/aa/$f" ] || { echo "FAIL: no $f after the A/A gate"; FAILED=1; }
done
# Both sides ran from copies at paths of one length (the path is on every rank's stack).
grep -q "^ab-gate: round 1 of 2" "$TMP/out" && cmp -s "$TPBENCH" "$TMP/aa/bin/A/tpbench" &&
  cmp -s "$TPBENCH" "$TMP/aa/bin/B/tpbench" || { echo "FAIL: the sides' copies are not the binaries given"; FAILED=1; }
grep -q 'no regression' "$TMP/aa/verdict.md" || { echo "FAIL: verdict.md: $(cat "$TMP/aa/verdict.md")"; FAILED=1; }
grep -q 'paired over 4 round files' "$TMP/out" || { echo "FAIL: the verdict is not paired: $(cat "$TMP/out")"; FAILED=1; }

# A new side whose training points are not the base's: missing in NEW, a regression.
cat >"$TMP/other" <<WRAP
#!/usr/bin/env bash
exec "$TPBENCH" "\${@/#4096/4000}"
WRAP
chmod +x "$TMP/other"
gate BASE_BIN="$TPBENCH" NEW_BIN="$TMP/other" OUT="$TMP/ab" ROUNDS=2 THRESHOLD=999999
rc=$?
[ "$rc" -eq 3 ] || { echo "FAIL: a new side with other points gave exit $rc, not 3: $(tail -5 "$TMP/err")"; FAILED=1; }
grep -q 'missing in NEW' "$TMP/ab/verdict.md" || { echo "FAIL: verdict.md: $(cat "$TMP/ab/verdict.md")"; FAILED=1; }

[ "$FAILED" -eq 0 ] && echo "ab-gate: all checks passed"
exit "$FAILED"
