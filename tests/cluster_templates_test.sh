#!/usr/bin/env bash
# tests/cluster_templates_test.sh — the Kubernetes templates of deploy/cluster/ run, without
# Kubernetes, as tiny CPU sweeps of local processes, and each gives its ranks an environment
# tpbench accepts. A small Python stands in for the Job controller, the training operator and the
# kubelet: it checks what ties a manifest together (the Service, the pods' subdomain, MASTER_ADDR,
# completions, the operator's names), then starts each pod's command with its env ($(VAR)
# expanded, downward-API and Secret values filled in, mount paths mapped to local folders, the
# Service's name for pod 0 resolved to 127.0.0.1): the Indexed Job as 2 pods × 1 rank and 1 pod ×
# 2 ranks, the PyTorchJob as Master + Worker. What it cannot check: images, scheduling, the
# network between pods, security contexts enforced, the operator's own behaviour; nothing here
# was run on a cluster. The Slurm template runs under a real Slurm in tests/slurm_test.sh.
# Each run's results file must exist in the documented place, be read by `tpbench compare`, and
# say who launched it (torchrun for the pods) over how many ranks.
#
#   tests/cluster_templates_test.sh TPBENCH      (TPB_CLUSTER_DIR: another copy of deploy/cluster)
#
# CTest runs this (Scripts.ClusterTemplatesLaunch). Exit 0 when every case passes, 1 otherwise,
# 77 (skip) when python3 lacks the yaml module.
set -uo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TPBENCH="$(realpath "${1:?usage: cluster_templates_test.sh TPBENCH}")"
CLUSTER="$(realpath "${TPB_CLUSTER_DIR:-$SRC/deploy/cluster}")"
PY="${TPB_TEST_PYTHON:-/usr/bin/python3}"
[ -x "$TPBENCH" ] || { echo "cluster_templates_test: no tpbench at $TPBENCH" >&2; exit 2; }
command -v "$PY" >/dev/null || { echo "cluster_templates_test: $PY not found" >&2; exit 2; }
TMP="$(mktemp -d)"
trap '[ -n "${KEEP:-}" ] || rm -rf "$TMP"' EXIT
export TMPDIR="$TMP"
FAILED=0
fail() {
  echo "FAIL: $*"
  FAILED=1
}
# The tiny sweep every case runs: N = 1..2, one epoch of 512 samples, 200 test samples.
TINY=(TPB_STRATEGIES=ring_all_reduce TPB_N_GPUS=1..2 TPB_BATCH_SIZE=32 TPB_EPOCHS=1 TPB_TRAIN_SIZE=512
      TPB_TEST_SIZE=200 TPB_DEVICE=cpu)

mkdir -p "$TMP/bin"
ln -s "$TPBENCH" "$TMP/bin/tpbench"

# check_results FILE LAUNCHER WORLD N...: FILE is a tpbench results file that tpbench reads, from
# a job of WORLD ranks started by LAUNCHER, holding one ok run per N.
check_results() {
  local file=$1 launcher=$2 world=$3
  shift 3
  [ -f "$file" ] || { fail "no results file $file"; return; }
  "$TPBENCH" compare "$file" "$file" > "$TMP/compare.log" 2>&1 ||
    fail "tpbench compare does not read $file: $(tail -n 1 "$TMP/compare.log")"
  local why
  why=$("$PY" - "$file" "$launcher" "$world" "$@" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
launcher, world, ns = sys.argv[2], int(sys.argv[3]), [int(n) for n in sys.argv[4:]]
meta = doc["meta"]
if meta.get("launcher") != launcher: print(f"meta.launcher is {meta.get('launcher')!r}, not {launcher!r}")
if meta.get("world_size") != world: print(f"meta.world_size is {meta.get('world_size')}, not {world}")
got = [(r["config"]["n_gpus"], r["status"]) for r in doc["runs"]]
if got != [(n, "ok") for n in ns]: print(f"runs are {got}, not N = {ns} all ok")
EOF
)
  [ -z "$why" ] || fail "$file: $why"
}

# ---- Kubernetes --------------------------------------------------------------------------------
if ! "$PY" -c 'import yaml' 2>/dev/null; then
  echo "SKIP the Kubernetes cases: $PY has no yaml module (python3-yaml)"
  [ "$FAILED" = 0 ] && exit 77
  exit 1
fi
cat > "$TMP/pods.py" <<'EOF'
"""Runs the pods of a manifest locally: pods.py MANIFEST KIND WORKDIR CLUSTER_DIR [VAR=VALUE...]."""
import json, os, re, socket, subprocess, sys, time, yaml

manifest, kind, work, cluster = sys.argv[1:5]
overrides = dict(a.split("=", 1) for a in sys.argv[5:] if not a.startswith("@"))
shape = dict(a[1:].split("=", 1) for a in sys.argv[5:] if a.startswith("@"))   # @pods=, @replicas=
docs = [d for d in yaml.safe_load_all(open(manifest)) if d]
problems = []
def need(ok, what):
    if not ok: problems.append(what)
def one(k):
    found = [d for d in docs if d.get("kind") == k]
    need(len(found) == 1, f"{len(found)} objects of kind {k}, not 1")
    return found[0] if found else {}

def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}

# Each pod: (index, pod spec, container, env added by the controller or operator).
pods = []
port = None
with socket.socket() as s:                       # a free port for this run's store
    s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
if kind == "Job":
    svc, job = one("Service"), one("Job")
    js, tmpl = job["spec"], job["spec"]["template"]
    spec = tmpl["spec"]
    n = int(shape.get("pods", js.get("completions", 0)))
    need(js.get("completionMode") == "Indexed", "the Job is not completionMode: Indexed")
    need(js.get("completions") == js.get("parallelism"), "completions and parallelism differ: the ranks wait for each other")
    need(js.get("backoffLimit") == 0, "backoffLimit is not 0: a failed rank's pod would be retried alone")
    need(spec.get("restartPolicy") == "Never", "restartPolicy is not Never")
    need(svc["spec"].get("clusterIP") == "None", "the Service is not headless (clusterIP: None)")
    need(spec.get("subdomain") == svc["metadata"]["name"], "the pods' subdomain is not the Service's name")
    labels = tmpl.get("metadata", {}).get("labels", {})
    need(all(labels.get(k) == v for k, v in svc["spec"].get("selector", {}).items()),
         "the Service's selector does not select the Job's pods")
    c = spec["containers"][0]
    env = env_of(c)
    name = job["metadata"]["name"]
    need(env.get("MASTER_ADDR", {}).get("value") == f"{name}-0.{svc['metadata']['name']}",
         f"MASTER_ADDR is not pod 0's name, {name}-0.{svc['metadata']['name']}")
    need(env.get("TPB_NNODES", {}).get("value") == str(js.get("completions")), "TPB_NNODES is not the Job's completions")
    if "pods" in shape:                          # a reshaped Job: the manifest's values for it
        overrides["TPB_NNODES"] = shape["pods"]
    for i in range(n):
        pods.append((i, spec, c, [{"name": "JOB_COMPLETION_INDEX", "value": str(i)}]))
else:
    pj = one("PyTorchJob")
    reps = pj["spec"]["pytorchReplicaSpecs"]
    total = sum(r.get("replicas", 1) for r in reps.values())
    nproc = pj["spec"].get("nprocPerNode", "1")
    name = pj["metadata"]["name"]
    index = 0
    for rtype in ("Master", "Worker"):
        r = reps[rtype]
        need(r.get("restartPolicy") == "Never", f"{rtype}'s restartPolicy is not Never")
        spec = r["template"]["spec"]
        c = [c for c in spec["containers"] if c.get("name") == "pytorch"]
        need(len(c) == 1, f"{rtype} has no container named pytorch (the operator's name)")
        c = c[0]
        ports = [p for p in c.get("ports", []) if p.get("name") == "pytorchjob-port"]
        need(len(ports) == 1, f"{rtype}'s container has no port named pytorchjob-port")
        env = env_of(c)
        need(env.get("TPB_NNODES", {}).get("value") == str(total), f"{rtype}'s TPB_NNODES is not the {total} pods")
        need(env.get("TPB_NPROC_PER_NODE", {}).get("value") == nproc, f"{rtype}'s TPB_NPROC_PER_NODE is not nprocPerNode")
        for k in range(r.get("replicas", 1)):
            # What the training operator (v1.7+) appends: RANK is the pod's index.
            added = [{"name": "PYTHONUNBUFFERED", "value": "0"},
                     {"name": "MASTER_PORT", "value": str(ports[0]["containerPort"]) if ports else "23456"},
                     {"name": "MASTER_ADDR", "value": f"{name}-master-0"},
                     {"name": "WORLD_SIZE", "value": str(total * int(nproc))},
                     {"name": "RANK", "value": str(index)},
                     {"name": "PET_NPROC_PER_NODE", "value": nproc},
                     {"name": "PET_NODE_RANK", "value": str(index)},
                     {"name": "PET_NNODES", "value": str(total)}]
            pods.append((index, spec, c, added))
            index += 1
def security_problems(where, spec, c):
    """What a security reviewer refuses in a pod: root, a service-account token, a secret in the
    environment, an image not pinned by digest, no resource requests and limits."""
    out = []
    pod, box = spec.get("securityContext", {}), c.get("securityContext", {})
    if spec.get("automountServiceAccountToken") is not False: out.append(f"{where}: automountServiceAccountToken is not false")
    if pod.get("runAsNonRoot") is not True or not pod.get("runAsUser"): out.append(f"{where}: the pod may run as root")
    if box.get("allowPrivilegeEscalation") is not False: out.append(f"{where}: allowPrivilegeEscalation is not false")
    if "ALL" not in box.get("capabilities", {}).get("drop", []): out.append(f"{where}: capabilities are not all dropped")
    if box.get("readOnlyRootFilesystem") is not True: out.append(f"{where}: the root file system is writable")
    if "@sha256:" not in c.get("image", "") or c.get("image", "").endswith(":latest"):
        out.append(f"{where}: the image is not pinned by digest")
    res = c.get("resources", {})
    if not res.get("limits") or not res.get("requests"): out.append(f"{where}: no resource requests and limits")
    for e in c.get("env", []):
        if "secretKeyRef" in e.get("valueFrom", {}): out.append(f"{where}: {e['name']} takes a Secret as an environment variable")
    return out

for i, spec, c, _ in pods:
    problems += security_problems(f"pod {i}", spec, c)
for name in overrides:
    if kind == "Job" and name == "TPB_NNODES": continue
    need(any(name in env_of(c) for _, _, c, _ in pods), f"the manifest sets no {name} (the test overrides it)")
if problems:
    print("\n".join("manifest: " + p for p in problems)); sys.exit(1)

def expand(text, env):
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), text)

def pod_env(i, c, added):
    env = {}
    for e in c.get("env", []) + added:
        name = e["name"]
        if name in overrides: env[name] = overrides[name]; continue
        if name == "MASTER_ADDR": env[name] = "127.0.0.1"; continue         # the Service's DNS answer
        if name == "MASTER_PORT": env[name] = str(port); continue           # free here
        if "value" in e: env[name] = expand(str(e["value"]), env); continue  # earlier vars only
        ref = e.get("valueFrom", {})
        if ref.get("fieldRef", {}).get("fieldPath") == "status.podIP": env[name] = "127.0.0.1"
        elif "job-completion-index" in ref.get("fieldRef", {}).get("fieldPath", ""): env[name] = str(i)
        elif "secretKeyRef" in ref: env[name] = "cluster-templates-test-secret"
        else: raise SystemExit(f"manifest: {name}: a valueFrom this test does not simulate: {ref}")
    return env

def map_path(arg, i, spec, c):
    # A path under a mount is that volume's local folder; any other absolute path is the
    # image's, which here is an empty root of the pod's own.
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    for m in sorted(c.get("volumeMounts", []), key=lambda m: -len(m["mountPath"])):
        mp = m["mountPath"].rstrip("/")
        for pre in ("", "--out="):
            if arg == pre + mp or arg.startswith(pre + mp + "/"):
                v = vols[m["name"]]
                if "configMap" in v: local = cluster                     # kubectl create configmap --from-file
                elif "persistentVolumeClaim" in v: local = os.path.join(work, "volumes", v["persistentVolumeClaim"]["claimName"])
                else: local = os.path.join(work, f"pod{i}", m["name"])
                os.makedirs(local, exist_ok=True)
                if "secret" in v:                                      # kubectl create secret ... --from-literal=secret=
                    f = os.path.join(local, "secret")
                    with open(f, "w") as out: out.write("cluster-templates-test-secret")
                    os.chmod(f, v["secret"].get("defaultMode", 0o644))
                return pre + local + arg[len(pre + mp):]
    if arg.startswith("--out=/"): return "--out=" + os.path.join(work, f"pod{i}", "root") + arg[len("--out="):]
    return arg

procs = []
for i, spec, c, added in pods:
    env = pod_env(i, c, added)
    env = {k: map_path(v, i, spec, c) for k, v in env.items()}   # a path under a mount, as in argv
    argv = [expand(a, env) for a in c.get("command", []) + c.get("args", [])]
    argv = [map_path(a, i, spec, c) for a in argv]
    full = {"PATH": os.environ["PATH"], "HOME": work, "TMPDIR": os.environ["TMPDIR"], **env}
    log = open(os.path.join(work, f"pod{i}.log"), "w")
    procs.append((i, subprocess.Popen(argv, env=full, stdout=log, stderr=subprocess.STDOUT, cwd="/")))
# Like the Job controller with backoffLimit 0 (and the operator): the first pod to fail fails
# the job, and the other pods are deleted (SIGTERM).
deadline = time.time() + 90
codes = {}
while len(codes) < len(procs):
    for i, p in procs:
        if i not in codes and p.poll() is not None:
            codes[i] = p.returncode
            if p.returncode != 0:
                for j, q in procs:
                    if q.poll() is None: q.terminate()
    if time.time() > deadline:
        for i, p in procs:
            if p.poll() is None: p.kill(); p.wait(); codes[i] = "killed after 90 s"
    time.sleep(0.1)
print(json.dumps(codes))
sys.exit(0 if all(v == 0 for v in codes.values()) else 1)
EOF

# k8s_case NAME MANIFEST KIND [VAR=VALUE | @pods=N ...]: runs the manifest's pods; sets WORK.
k8s_case() {
  local name=$1 manifest=$2 kind=$3
  shift 3
  WORK=$TMP/k8s-$name
  mkdir -p "$WORK"
  PATH="$TMP/bin:$PATH" "$PY" "$TMP/pods.py" "$manifest" "$kind" "$WORK" "$CLUSTER" "$@" > "$WORK/run.log" 2>&1
}
k8s_log() { tail -n 8 "$WORK/run.log" "$WORK"/pod*.log 2>/dev/null; }

start=$SECONDS
if k8s_case job "$CLUSTER/tpbench-sweep-job.yaml" Job "${TINY[@]}"; then
  check_results "$WORK/volumes/tpbench-results/tpbench-sweep.json" torchrun 2 1 2
else
  fail "kubernetes Indexed Job, 2 pods:"; k8s_log
fi
echo "kubernetes Indexed Job, 2 pods x 1 rank: $((SECONDS - start)) s"

start=$SECONDS
if k8s_case job-one-pod "$CLUSTER/tpbench-sweep-job.yaml" Job "${TINY[@]}" @pods=1 TPB_NPROC_PER_NODE=2; then
  check_results "$WORK/volumes/tpbench-results/tpbench-sweep.json" torchrun 2 1 2
else
  fail "kubernetes Indexed Job, 1 pod x 2 ranks:"; k8s_log
fi
echo "kubernetes Indexed Job, 1 pod x 2 ranks: $((SECONDS - start)) s"

start=$SECONDS
if k8s_case pytorchjob "$CLUSTER/tpbench-sweep-pytorchjob.yaml" PyTorchJob "${TINY[@]}" TPB_RESULTS_TO_LOG=1; then
  file=$WORK/volumes/tpbench-pytorchjob-results/tpbench-sweep.json
  check_results "$file" torchrun 2 1 2
  sed -n '/^==> tpbench results: /,/^==> end of tpbench results <==/p' "$WORK/pod0.log" | sed '1d;$d' > "$WORK/from-log.json"
  cmp -s "$file" "$WORK/from-log.json" || fail "kubernetes PyTorchJob: the results in pod 0's log differ from the file"
else
  fail "kubernetes PyTorchJob, Master + Worker:"; k8s_log
fi
echo "kubernetes PyTorchJob, Master + Worker: $((SECONDS - start)) s"

# The entrypoint's refusals: exit 2, one line naming the setting.
entry() {
  local needle=$1 out rc
  shift
  out=$(env -i PATH="$TMP/bin:$PATH" "$@" bash "$CLUSTER/tpb-rank.sh" true 2>&1)
  rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q -- "$needle" <<<"$out" ||
    fail "tpb-rank.sh with $*: exit $rc, not one line naming '$needle': $out"
}
entry "pod index 2 is not below the pod count 2" JOB_COMPLETION_INDEX=2 TPB_NNODES=2 MASTER_ADDR=a
entry "MASTER_ADDR is not set" JOB_COMPLETION_INDEX=0 TPB_NNODES=2
entry "loopback" JOB_COMPLETION_INDEX=0 TPB_NNODES=2 MASTER_ADDR=localhost
entry "TPB_NNODES" JOB_COMPLETION_INDEX=0 MASTER_ADDR=a
entry "did not resolve within 1 s" JOB_COMPLETION_INDEX=1 TPB_NNODES=2 MASTER_ADDR=tpbnohost.invalid TPB_RESOLVE_TIMEOUT=1
entry "not a multiple" RANK=0 WORLD_SIZE=3 TPB_NPROC_PER_NODE=2 MASTER_ADDR=a

[ "$FAILED" = 0 ] && echo "cluster templates: all cases passed"
exit "$FAILED"
