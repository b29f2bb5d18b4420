#!/usr/bin/env bash
# tests/readme_commands_test.sh BUILD_DIR — runs every command of README.md's shell code blocks
# as written, so that an example that crashes or is refused fails CI.
#
# The commands run in a fresh folder where `build` is BUILD_DIR, so their relative outputs
# (results/..., reports/...) stay there. A command is a line of a ```sh block (a line ending in
# a backslash continues on the next; a trailing "# ..." is a comment); each must exit 0 within
# its time limit. The `make` targets are not run here: `make test` is what runs this, CI runs
# `make gate` and `make ab-gate` itself, and `make run` (install, build, the default sweep and allreduce: minutes)
# is left to the reader; any other command this script does not know how to run fails it, so a
# new kind of example cannot go untested. The environment is the caller's, as a reader's would be:
# PATH as it is (here python3 first on it may be an interpreter without torch), root where the
# tests run as root, nothing added for either; a command must work as written.
# CTest runs this (Scripts.ReadmeCommandsRun). Exit 0 when every command passed, 1 otherwise,
# 2 when it cannot run.
set -uo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-}"
[ -n "$BUILD" ] && [ -x "$BUILD/tpbench" ] || { echo "readme_commands_test: usage: $0 BUILD_DIR (with tpbench built)" >&2; exit 2; }
BUILD="$(cd "$BUILD" && pwd)"
LIMIT="${TPB_README_COMMAND_LIMIT:-300}"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
ln -s "$BUILD" "$WORK/build"
mkdir "$WORK/results" "$WORK/reports"

unset OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM

# One command per line, continuations joined, comments and blank lines dropped.
mapfile -t COMMANDS < <(python3 - "$SRC/README.md" <<'EOF'
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
inside, pending = False, ""
for line in lines:
    if re.match(r"^ {0,3}```", line):
        inside = (not inside) and line.strip() in ("```sh", "```bash", "```shell")
        continue
    if not inside:
        continue
    line = re.sub(r"\s+#.*$", "", line) if not line.lstrip().startswith("#") else ""
    if line.endswith("\\"):
        pending += line[:-1].rstrip() + " "
        continue
    command = (pending + line).strip()
    pending = ""
    if command:
        print(re.sub(r"\s+", " ", command))
EOF
)
[ "${#COMMANDS[@]}" -gt 0 ] || { echo "readme_commands_test: no commands found in README.md" >&2; exit 2; }

failed=0 ran=0
for command in "${COMMANDS[@]}"; do
  case "$command" in
    "make test" | "make gate" | "make ab-gate" | "make run")
      echo "not run here: $command"
      continue ;;
    build/tpbench\ * | "torchrun "* | "mpirun "*) ;;
    *)
      echo "FAIL: README.md has a command this test does not know how to run: $command"
      failed=1
      continue ;;
  esac
  echo "== $command"
  start=$(date +%s)
  (cd "$WORK" && timeout "$LIMIT" bash -c "$command" </dev/null >"$WORK/last.log" 2>&1)
  rc=$?
  ran=$((ran + 1))
  echo "   exit $rc after $(( $(date +%s) - start )) s"
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: exit $rc: $command"
    tail -n 20 "$WORK/last.log" | sed 's/^/   | /'
    failed=1
  fi
done
echo "$ran README commands run"
exit "$failed"
