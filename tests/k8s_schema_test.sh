#!/usr/bin/env bash
# tests/k8s_schema_test.sh CACHE_DIR — the Kubernetes manifests of deploy/cluster/ checked against
# the Kubernetes API's own schemas (tests/k8s/validate.mjs, with the kubernetes-models package:
# the API's OpenAPI specification as JSON schemas). No cluster can run here (no image can be
# fetched), so this and the stand-in of tests/cluster_templates_test.sh are what is checked; the
# manifests have not run on a cluster.
# The npm packages, pinned, are installed into CACHE_DIR on first use. Two copies broken on
# purpose (a count that is not a number, a restart policy outside its enum) must fail, so a
# validator that checks nothing cannot pass.
# CTest runs this (Scripts.KubernetesSchemas). Exit 0 when every manifest passes, 1 otherwise,
# 77 (skipped, said on stderr) without node and npm or where npm cannot fetch the packages.
set -uo pipefail
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE=${1:?usage: k8s_schema_test.sh CACHE_DIR}
skip() {
  echo "SKIPPED: k8s_schema_test: $*" >&2
  exit 77
}
command -v node >/dev/null && command -v npm >/dev/null || skip "node or npm is not installed (scripts/install-deps.sh)"
PACKAGES=(kubernetes-models@5.1.0 yaml@2.9.1)
mkdir -p "$CACHE"
if [ "$(cat "$CACHE/installed" 2>/dev/null)" != "${PACKAGES[*]}" ]; then
  rm -rf "$CACHE/node_modules" "$CACHE/installed"
  (cd "$CACHE" && echo '{"private": true}' > package.json &&
    timeout 300 npm install --no-audit --no-fund --silent "${PACKAGES[@]}") > "$CACHE/npm.log" 2>&1 ||
    skip "npm could not install ${PACKAGES[*]}: $(tail -n 1 "$CACHE/npm.log")"
  echo "${PACKAGES[*]}" > "$CACHE/installed"
fi
cp "$SRC/tests/k8s/validate.mjs" "$CACHE/validate.mjs"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
FAILED=0

node "$CACHE/validate.mjs" "$SRC"/deploy/cluster/*.yaml > "$TMP/out" 2>&1 || FAILED=1
cat "$TMP/out"
[ "$(grep -c '^ok ' "$TMP/out")" -ge 5 ] || { echo "FAIL: fewer than 5 documents checked"; FAILED=1; }

# broken NAME SED: a copy of the Indexed Job changed by SED must fail, naming the field.
broken() {
  local name=$1 expr=$2 field=$3
  sed "$expr" "$SRC/deploy/cluster/tpbench-sweep-job.yaml" > "$TMP/$name.yaml"
  cmp -s "$TMP/$name.yaml" "$SRC/deploy/cluster/tpbench-sweep-job.yaml" && { echo "FAIL: $name: the edit changed nothing"; FAILED=1; return; }
  if node "$CACHE/validate.mjs" "$TMP/$name.yaml" > "$TMP/$name.out" 2>&1; then
    echo "FAIL: $name: a broken manifest passed"; FAILED=1
  elif ! grep -q "$field" "$TMP/$name.out"; then
    echo "FAIL: $name: the failure does not name $field: $(cat "$TMP/$name.out")"; FAILED=1
  fi
}
broken count-not-a-number 's/completions: 2$/completions: two/' 'spec/completions must be integer'
broken restart-policy 's/restartPolicy: Never/restartPolicy: Sometimes/' 'restartPolicy must be equal to one of the allowed values'
[ "$FAILED" = 0 ] && echo "k8s_schema_test: every manifest matches the Kubernetes API's schemas; the broken copies fail"
exit "$FAILED"
