#!/usr/bin/env bash
# Does the suite catch a wrong line on the paths the exact half of the gate rests on? Applies the
# one-line mutations of a list (default tests/mutations/critical-paths.txt) one at a time to the
# checkout, rebuilds tpbench and tpb_tests in BUILD, runs the tests named as the catchers, and
# puts the line back. Before any mutation the same tests run on the unchanged tree: a catcher
# that fails there would "catch" everything, so the check stops.
#
#   scripts/mutation-check.sh [LIST]      BUILD=build (configured; `make build` makes it)
#
# Prints one row per mutation: caught (a catcher failed), MISSED (all passed), or not built (the
# mutated tree did not compile: fix the entry). Exit 0 when every mutation is caught, 1 when one is
# missed or did not build, 2 on bad input. The files it mutates must have no uncommitted change;
# they are restored on exit, interrupted or not, and the build is brought back to the tree's state.
set -euo pipefail
cd "$(dirname "$0")/.."
LIST=${1:-tests/mutations/critical-paths.txt}
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}
[ -f "$LIST" ] && [ ! -L "$LIST" ] || { echo "mutation-check: $LIST: not a regular file" >&2; exit 2; }
[ -f "$BUILD/build.ninja" ] || { echo "mutation-check: BUILD=$BUILD is not a configured build (run make build)" >&2; exit 2; }

# The list: blocks of five lines (name, file, text, replacement, test regex), '#' lines ignored.
names=() files=() froms=() tos=() regexes=()
mapfile -t lines < <(grep -v '^#' "$LIST")
block=()
flush() {
  [ ${#block[@]} -eq 0 ] && return 0
  [ ${#block[@]} -eq 5 ] || { echo "mutation-check: $LIST: an entry of ${#block[@]} lines (want 5): ${block[0]}" >&2; exit 2; }
  local f=${block[1]}
  case "$f" in /* | *..*) echo "mutation-check: $LIST: ${block[0]}: file $f is not inside the repository" >&2; exit 2 ;; esac
  [ -f "$f" ] && [ ! -L "$f" ] || { echo "mutation-check: $LIST: ${block[0]}: $f is not a regular file" >&2; exit 2; }
  git ls-files --error-unmatch "$f" >/dev/null 2>&1 || { echo "mutation-check: $LIST: ${block[0]}: $f is not tracked" >&2; exit 2; }
  git diff --quiet HEAD -- "$f" || { echo "mutation-check: $f has uncommitted changes: commit or stash them first" >&2; exit 2; }
  local count
  count=$(FROM=${block[2]} python3 -c 'import os,sys; print(open(sys.argv[1]).read().count(os.environ["FROM"]))' "$f")
  [ "$count" = 1 ] || { echo "mutation-check: $LIST: ${block[0]}: its text occurs $count times in $f (want once)" >&2; exit 2; }
  names+=("${block[0]}") files+=("$f") froms+=("${block[2]}") tos+=("${block[3]}") regexes+=("${block[4]}")
  block=()
}
for l in "${lines[@]}"; do
  if [ -z "$l" ]; then flush; else block+=("$l"); fi
done
flush
[ ${#names[@]} -gt 0 ] || { echo "mutation-check: $LIST holds no mutation" >&2; exit 2; }

work=$(mktemp -d)
current=""
restore() {
  if [ -n "$current" ]; then cp "$work/original" "$current"; current=""; fi
}
finish() {
  restore
  cmake --build "$BUILD" -j "$JOBS" --target tpbench tpb_tests >"$work/rebuild.log" 2>&1 ||
    echo "mutation-check: rebuilding $BUILD on the unchanged tree failed (see a build by hand)" >&2
  rm -rf "$work"
}
trap finish EXIT
trap 'exit 130' INT TERM

build() { cmake --build "$BUILD" -j "$JOBS" --target tpbench tpb_tests >"$work/build.log" 2>&1; }
catchers() { (cd "$BUILD" && ctest -j "$JOBS" --timeout 600 -R "$1" >"$work/ctest.log" 2>&1); }
ran() { grep -Eo 'out of [0-9]+' "$work/ctest.log" | tail -1 | awk '{print $3}'; }

echo "mutation-check: $(basename "$LIST"), ${#names[@]} mutations; the catchers first on the unchanged tree"
build || { echo "mutation-check: the unchanged tree does not build" >&2; exit 1; }
for i in "${!names[@]}"; do
  if ! catchers "${regexes[$i]}" || [ "$(ran)" = "" ] || [ "$(ran)" = 0 ]; then
    echo "mutation-check: ${names[$i]}: its catchers (${regexes[$i]}) do not pass on the unchanged tree, or match no test:" >&2
    tail -5 "$work/ctest.log" >&2
    exit 1
  fi
done

printf '%-50s %-8s %s\n' mutation result "catchers (tests run)"
missed=0
for i in "${!names[@]}"; do
  f=${files[$i]}
  cp "$f" "$work/original"
  current=$f
  FROM=${froms[$i]} TO=${tos[$i]} python3 -c '
import os, sys
p = sys.argv[1]
s = open(p).read()
open(p, "w").write(s.replace(os.environ["FROM"], os.environ["TO"].replace("\\n", "\n"), 1))' "$f"
  if ! build; then
    result="not built"
    missed=1
    tests="-"
  elif catchers "${regexes[$i]}"; then
    result=MISSED
    missed=1
    tests=$(ran)
  else
    result=caught
    tests=$(ran)
  fi
  restore
  printf '%-50s %-8s %s (%s)\n' "${names[$i]}" "$result" "${regexes[$i]}" "$tests"
done
exit "$missed"
