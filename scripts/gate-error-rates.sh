#!/usr/bin/env bash
# Measures the A/B gate's error rates (docs/reports.md, "The A/B gate"): records POOL rounds of
# the gate's suite (scripts/ab-suite.sh) with one binary on both sides, and beside them the
# training points slowed by a known amount (--slow_ranks on every rank: each rank's compute
# takes FACTOR-1 of itself again in every step, spun out on its CPU clock; the knob's record is
# taken out of the slowed files so that they read as a revision that got slower). Then it draws
# DECISIONS gate decisions of ROUNDS rounds each from the pool (rounds drawn without
# replacement), runs `tpbench compare --paired` on each, and prints per THRESHOLD and ALPHA of
# the grid how often the A/A decision regressed (false positives) and how often the slowed one
# did (power).
#
#   scripts/gate-error-rates.sh [TPBENCH]      default build/tpbench
#     POOL=48 ROUNDS=12 DECISIONS=300 WORK=build/gate-rates
#     REUSE=1: judge the pool already in WORK again (no new rounds)
#     POWER_ONLY=1: no A/A arm and no collective points (the slowed arms need only training)
#     DDP_FACTORS=1.10,1.20 RING_FACTORS=1.057,1.115   (about 5 % and 10 % on the epoch time)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ab-suite.sh
TPBENCH=${1:-build/tpbench}
POOL=${POOL:-48}
ROUNDS=${ROUNDS:-12}
DECISIONS=${DECISIONS:-300}
WORK=${WORK:-build/gate-rates}
DDP_FACTORS=${DDP_FACTORS:-1.10,1.20}
RING_FACTORS=${RING_FACTORS:-1.057,1.115}
ab_positive_int POOL "$POOL" 1000
ab_positive_int ROUNDS "$ROUNDS" 1000
ab_positive_int DECISIONS "$DECISIONS" 100000
((ROUNDS <= POOL)) || { echo "gate-error-rates: ROUNDS ($ROUNDS) must not exceed POOL ($POOL)" >&2; exit 2; }
[ -x "$TPBENCH" ] || { echo "gate-error-rates: no $TPBENCH (build it first)" >&2; exit 2; }
IFS=, read -r -a ddp_f <<<"$DDP_FACTORS"
IFS=, read -r -a ring_f <<<"$RING_FACTORS"
((${#ddp_f[@]} == ${#ring_f[@]})) || { echo "gate-error-rates: DDP_FACTORS and RING_FACTORS need as many values" >&2; exit 2; }
for f in "${ddp_f[@]}" "${ring_f[@]}"; do
  [[ $f =~ ^[1-9]\.[0-9]{1,4}$ ]] || { printf 'gate-error-rates: a factor must read like 1.10, got %q\n' "$f" >&2; exit 2; }
done
case $WORK in /* | *..* | '') echo "gate-error-rates: WORK must be a relative path without '..'" >&2; exit 2 ;; esac
PY=/usr/bin/python3

POWER_ONLY=${POWER_ONLY:-0}
arms=()
[ "$POWER_ONLY" = 1 ] || arms=(aa)
for ((k = 0; k < ${#ddp_f[@]}; k++)); do arms+=("slow$k"); done
REUSE=${REUSE:-0}
[ "$REUSE" = 1 ] || rm -rf "$WORK"
mkdir -p "$WORK/A"
for arm in "${arms[@]}"; do mkdir -p "$WORK/$arm"; done
# One slowed side of a round: each strategy with its own factor (their compute shares differ),
# merged into one file under the round's name, the knob's record dropped.
slowed_round() {
  local k=$1 dir=$2 name=$3
  "$TPBENCH" "${AB_TRAIN[@]/ddp,ring_all_reduce/ddp}" --slow_ranks "0:${ddp_f[$k]},1:${ddp_f[$k]}" \
    --out "$dir/$name-ddp.tmp" --overwrite >>"$dir/log" 2>&1
  "$TPBENCH" "${AB_TRAIN[@]/ddp,ring_all_reduce/ring_all_reduce}" --slow_ranks "0:${ring_f[$k]},1:${ring_f[$k]}" \
    --out "$dir/$name-ring.tmp" --overwrite >>"$dir/log" 2>&1
  "$PY" - "$dir/$name-ddp.tmp" "$dir/$name-ring.tmp" "$dir/$name-train.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
a["runs"] += b["runs"]
for r in a["runs"]:
    r["config"].pop("slow_ranks", None)
json.dump(a, open(sys.argv[3], "w"))
PY
  rm -f "$dir/$name-ddp.tmp" "$dir/$name-ring.tmp"
}

start=$(date +%s)
[ "$REUSE" = 1 ] && POOL=0
for ((i = 1; i <= POOL; i++)); do
  name=$(printf 'r%03d' "$i")
  # The order of the sides turns with the round, so no side always runs first.
  sides=(A "${arms[@]}")
  shift_by=$(((i - 1) % ${#sides[@]}))
  sides=("${sides[@]:shift_by}" "${sides[@]:0:shift_by}")
  for side in "${sides[@]}"; do
    case $side in
      A) if [ "$POWER_ONLY" = 1 ]; then
           "$TPBENCH" "${AB_TRAIN[@]}" --out "$WORK/A/$name-train.json" --overwrite >>"$WORK/A/log" 2>&1
         else ab_round "$TPBENCH" "$WORK/$side" "$name"; fi ;;
      aa) ab_round "$TPBENCH" "$WORK/$side" "$name" ;;
      slow*) slowed_round "${side#slow}" "$WORK/$side" "$name" ;;
    esac || { tail -5 "$WORK/$side/log" >&2; echo "gate-error-rates: round $i ($side) failed" >&2; exit 1; }
  done
  echo "gate-error-rates: round $i of $POOL ($(($(date +%s) - start)) s)"
done

# The decisions: compare's own verdict numbers (--format json) at threshold 0 and alpha ~1, so
# that every (threshold, alpha) of the grid is judged from one run of compare per decision.
"$PY" - "$TPBENCH" "$WORK" "$ROUNDS" "$DECISIONS" "${arms[@]}" <<'PY'
import json, math, os, random, subprocess, sys, tempfile
tpbench, work, rounds, decisions, arms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
names = sorted({f.rsplit("-", 1)[0] for f in os.listdir(os.path.join(work, "A")) if f.endswith(".json")})
rng = random.Random(1)
grid = [(t, a) for t in (0.02, 0.03, 0.05) for a in (0.001, 0.01, 0.05)]

def verdict(doc):
    """Per timing metric (point, slowdown, p); and whether anything but timing regressed."""
    timing, other = [], False
    for pt in doc["points"]:
        for m in pt["metrics"]:
            if m["kind"] == "timing" and m["p"] is not None:
                timing.append((pt["point"].split(" batch")[0], m["slowdown"], m["p"]))
            elif m["regression"] and m["kind"] != "timing":
                other = True
    return timing, other

def decide(timing, other, t, a):
    return other or any(s > t and p < a for _, s, p in timing)

def compare(tmp, pick, arm):
    """compare --paired over the rounds `pick` of A and `arm` (the files both sides have), as JSON."""
    for side, src in (("a", "A"), ("b", arm)):
        os.mkdir(os.path.join(tmp, side))
    both = set(os.listdir(os.path.join(work, "A"))) & set(os.listdir(os.path.join(work, arm)))
    for f in both:
        if f.endswith(".json") and f.rsplit("-", 1)[0] in pick:
            for side, src in (("a", "A"), ("b", arm)):
                os.link(os.path.join(work, src, f), os.path.join(tmp, side, f))
    out = subprocess.run([tpbench, "compare", "--paired", os.path.join(tmp, "a"), os.path.join(tmp, "b"),
                          "--format", "json", "--threshold", "0", "--alpha", "0.999999"],
                         capture_output=True, text=True)
    if out.returncode not in (0, 3):
        sys.exit(f"gate-error-rates: compare failed: {out.stderr.strip()}")
    return json.loads(out.stdout)

def ratios(arm):
    """The median over the whole pool of each point's per-round slowdown."""
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        doc = compare(tmp, set(names), arm)
    return {pt["point"]: m["slowdown"] for pt in doc["points"] for m in pt["metrics"]
            if m["metric"] in ("epoch_s", "busbw_gbps")}

print(f"pool: {len(names)} rounds; decisions of {rounds} rounds, {decisions} per arm")
for arm in arms:
    print(f"{arm}: slowdown over the whole pool (median of per-round ratios): " +
          ", ".join(f"{p.split(' batch')[0]} {100 * s:+.1f} %" for p, s in ratios(arm).items()))
# Drawing rounds from a pool stands for fresh decisions when rounds are exchangeable: the A/A
# log ratios of successive rounds must not be correlated.
def series(side, suffix):
    out = {}
    for f in sorted(os.listdir(os.path.join(work, side))):
        if not f.endswith(suffix):
            continue
        doc = json.load(open(os.path.join(work, side, f)))
        for r in doc.get("runs", []):
            e = [x["wall_s"] for x in r["epochs"]]
            out.setdefault(r["config"]["strategy"], {})[f] = sum(e) / len(e)
        for r in doc.get("allreduce", []):
            if r.get("busbw_gbps"):
                out.setdefault(f"allreduce {r['bytes']} B", {})[f] = 1 / r["busbw_gbps"]
    return out
base = {**series("A", "-train.json"), **series("A", "-coll.json")}
other = {**series("aa", "-train.json"), **series("aa", "-coll.json")} if "aa" in arms else {}
for point, by_file in (base.items() if other else []):
    logs = [math.log(other[point][f] / by_file[f]) for f in sorted(by_file) if f in other.get(point, {})]
    m = sum(logs) / len(logs)
    den = sum((x - m) ** 2 for x in logs)
    lag1 = sum((logs[i] - m) * (logs[i + 1] - m) for i in range(len(logs) - 1)) / den if den else 0
    q = sorted(logs)
    iqr = q[(3 * len(q)) // 4] - q[len(q) // 4]
    print(f"A/A {point}: {len(logs)} rounds, log ratio spread (IQR/1.35) {iqr / 1.35:.3f}, lag-1 autocorrelation {lag1:+.2f}")
print()
print("arm     " + "  ".join(f"t={t:.2f},a={a:.3f}" for t, a in grid))
per_point = {}
for arm in arms:
    hits = [0] * len(grid)
    for d in range(decisions):
        pick = set(rng.sample(names, rounds))
        with tempfile.TemporaryDirectory(dir=work) as tmp:
            timing, other = verdict(compare(tmp, pick, arm))
        for g, (t, a) in enumerate(grid):
            hits[g] += decide(timing, other, t, a)
            for point in {p for p, _, _ in timing}:
                flagged = any(s > t and pv < a for q, s, pv in timing if q == point)
                per_point.setdefault((arm, point), [0] * len(grid))[g] += flagged
    print(f"{arm:<7} " + "  ".join(f"{100 * h / decisions:14.1f}" for h in hits) + "   % of decisions regressed")
print()
print("per point, % of decisions that flagged it:")
for (arm, point), hits in sorted(per_point.items()):
    print(f"{arm:<7} " + "  ".join(f"{100 * h / decisions:14.1f}" for h in hits) + f"   {point}")
PY
