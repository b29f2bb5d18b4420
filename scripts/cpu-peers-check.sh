#!/usr/bin/env bash
# CPU collectives beside Open MPI (docs/measurements.md, "At the limit, beside Open MPI"): ROUNDS
# interleaved rounds of, at N = 2 and 4,
#   tpbench allreduce (ring, halving_doubling, recursive_doubling, param_server and direct in
#     place; mpi out of place, as IMB and OSU call MPI_Allreduce), timed back to back as IMB times,
#     and mpi per call too: 8 B and 1 KiB for SMALL_ITERS calls (default 10000), 64 KiB and 1 MiB
#     for 200, 16 and 64 MiB for 20;
#   IMB-MPI1 Allreduce and osu_allreduce (float; SMALL_ITERS calls up to 1 KiB, then 200 and
#     their own policies for large sizes), when IMB= and OSU= name their binaries (built
#     from their public sources against the same Open MPI; nothing here fetches them);
# then one table: per N and size the median over rounds of each one's mean call (µs; tpbench's
# time_us.rank_mean, IMB's t_avg, OSU's average: each rank's mean call, averaged over the ranks),
# the fastest from-scratch algorithm over Open MPI's (IMB where given, else tpbench's mpi), and
# busbw over single-thread memcpy at 1 and 64 MiB. With BUSY=1 each round also runs 8 B, 1 KiB
# and 64 KiB at N = 2 for BUSY_ITERS calls (default 100000: long enough to span many scheduler
# ticks), quiet and then beside one busy process (a shell loop), and prints for each the busy
# median over the quiet one, p99, the longest call and the calls over 10x the median.
# BIND=core binds every rank to a core of its own, tpbench's (--bind core) and the peers' alike
# (mpirun --map-by core --bind-to core); BIND=none (the default) binds none. tpbench's mpi runs
# with TPB_MPI_THREAD=$MPI_THREAD, by default single: MPI_Init's level, as IMB and OSU ask for
# (MPI_THREAD=funneled measures tpbench's default, which Open MPI makes slower per call).
#
#   IMB=/path/IMB-MPI1 OSU=/path/osu_allreduce ROUNDS=3 BIND=none [KEEP=dir] scripts/cpu-peers-check.sh [TPBENCH]
set -euo pipefail
cd "$(dirname "$0")/.."
TPBENCH=${1:-build/tpbench}
ROUNDS=${ROUNDS:-3}
[ -x "$TPBENCH" ] || { echo "cpu-peers-check: no $TPBENCH (build it first)" >&2; exit 2; }
for v in IMB OSU; do
  p=${!v:-}
  [ -z "$p" ] || [ -x "$p" ] || { echo "cpu-peers-check: $v=$p is not an executable" >&2; exit 2; }
done
SMALL_ITERS=${SMALL_ITERS:-10000}
BUSY_ITERS=${BUSY_ITERS:-100000}
# Plain decimal without a leading zero (bash arithmetic reads 08 as bad octal).
for v in ROUNDS SMALL_ITERS BUSY_ITERS; do
  case "${!v}" in '' | *[!0-9]* | 0*) echo "cpu-peers-check: $v must be a whole number >= 1" >&2; exit 2 ;; esac
done
BIND=${BIND:-none}
MPI_THREAD=${MPI_THREAD:-single}
case "$MPI_THREAD" in single | funneled) ;; *) echo "cpu-peers-check: MPI_THREAD must be single or funneled" >&2; exit 2 ;; esac
case "$BIND" in
  none) placement=(--bind-to none) ;;
  core) placement=(--map-by core --bind-to core:overload-allowed) ;;
  *) echo "cpu-peers-check: BIND must be none or core" >&2; exit 2 ;;
esac
# KEEP=DIR keeps every round's raw files (tpbench's JSON, IMB's and OSU's output) in DIR, a new
# directory in an existing one, to read again; otherwise they go with the run. mkdir itself is
# the check: it fails on anything already there, a link included.
KEEP=${KEEP:-}
if [ -n "$KEEP" ]; then
  mkdir -- "$KEEP" 2>/dev/null || { echo "cpu-peers-check: KEEP=$KEEP: cannot create it as a new directory" >&2; exit 2; }
  work=$(cd -- "$KEEP" && pwd)
else
  work=$(mktemp -d)
fi
busy=
cleanup() { [ -n "$busy" ] && kill "$busy" 2>/dev/null; [ -n "$KEEP" ] || rm -rf "$work"; }
trap cleanup EXIT
# Open MPI's launcher, as tpbench's mpi points run it: one node, shared memory, loopback only.
mpirun=(mpirun --oversubscribe "${placement[@]}" --mca btl self,vader --mca btl_tcp_if_include lo)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
algos=ring,halving_doubling,recursive_doubling,param_server,direct

for ((r = 0; r < ROUNDS; r++)); do
  echo "round $((r + 1)) of $ROUNDS" >&2
  for n in 2 4; do
    # The from-scratch algorithms in place (as they work); MPI_Allreduce out of place, with its
    # own send and receive buffers, as IMB and OSU call it (in place it skips a copy of the input).
    # 8 B and 1 KiB for SMALL_ITERS calls (default 10000, as the peers below), 64 KiB and 1 MiB
    # for 200; file names carry the size group so that the table reads them alike.
    for group in tiny mid; do
      if [ $group = tiny ]; then bytes=8,1K iters=$SMALL_ITERS; else bytes=64K,1M iters=200; fi
      "$TPBENCH" allreduce --bind "$BIND" --algos "$algos" --n_gpus $n --bytes $bytes --iters $iters --warmup 20 \
        --timing back_to_back --out "$work/small-$n-$r-$group.json" >/dev/null 2>&1
      TPB_MPI_THREAD=$MPI_THREAD "$TPBENCH" collective --op allreduce --place out --bind "$BIND" --algos mpi --n_gpus $n \
        --bytes $bytes --iters $iters --warmup 20 --timing back_to_back --out "$work/small-mpi-$n-$r-$group.json" >/dev/null 2>&1
      TPB_MPI_THREAD=$MPI_THREAD "$TPBENCH" collective --op allreduce --place out --bind "$BIND" --algos mpi --n_gpus $n \
        --bytes $bytes --iters $iters --warmup 20 --out "$work/percall-$n-$r-$group.json" >/dev/null 2>&1
    done
    "$TPBENCH" allreduce --bind "$BIND" --algos "$algos" --n_gpus $n --bytes 16M,64M --iters 20 --warmup 3 \
      --timing back_to_back --out "$work/large-$n-$r.json" >/dev/null 2>&1
    TPB_MPI_THREAD=$MPI_THREAD "$TPBENCH" collective --op allreduce --place out --bind "$BIND" --algos mpi --n_gpus $n --bytes 16M,64M \
      --iters 20 --warmup 3 --timing back_to_back --out "$work/large-mpi-$n-$r.json" >/dev/null 2>&1
    if [ -n "${IMB:-}" ]; then
      "${mpirun[@]}" -np $n "$IMB" Allreduce -npmin $n -msglog 3:10 -iter "$SMALL_ITERS" -time 60 \
        >"$work/imb-$n-$r-tiny.txt" 2>/dev/null
      "${mpirun[@]}" -np $n "$IMB" Allreduce -npmin $n -msglog 11:26 -iter 200 -time 60 \
        >"$work/imb-$n-$r-mid.txt" 2>/dev/null
    fi
    if [ -n "${OSU:-}" ]; then
      "${mpirun[@]}" -np $n "$OSU" -T mpi_float -m 8:1024 -i "$SMALL_ITERS" -x 200 >"$work/osu-$n-$r-tiny.txt" 2>/dev/null
      "${mpirun[@]}" -np $n "$OSU" -T mpi_float -m 2048:67108864 -i 200 -x 20 >"$work/osu-$n-$r-mid.txt" 2>/dev/null
    fi
  done
  if [ "${BUSY:-0}" = 1 ]; then
    for phase in quiet busy; do
      if [ $phase = busy ]; then
        (while :; do :; done) &
        busy=$!
      fi
      "$TPBENCH" allreduce --bind "$BIND" --algos "$algos" --n_gpus 2 --bytes 8,1K,64K --iters "$BUSY_ITERS" --warmup 200 \
        --timing back_to_back --out "$work/contention-$phase-$r.json" >/dev/null 2>&1 || true
      TPB_MPI_THREAD=$MPI_THREAD "$TPBENCH" collective --op allreduce --place out --bind "$BIND" --algos mpi --n_gpus 2 \
        --bytes 8,1K,64K --iters "$BUSY_ITERS" --warmup 200 --timing back_to_back \
        --out "$work/contention-mpi-$phase-$r.json" >/dev/null 2>&1 || true
      if [ $phase = busy ]; then
        kill "$busy"
        wait "$busy" 2>/dev/null || true
        busy=
      fi
    done
  fi
done
/usr/bin/python3 - "$work" "$ROUNDS" <<'PY'
import glob, json, os, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
med = statistics.median
scratch = ["ring", "halving_doubling", "recursive_doubling", "param_server", "direct"]
t = {}    # (source, n, bytes) -> [µs per round]
bw = {}   # (algo, n, bytes) -> [busbw / memcpy per round]
def add(key, v):
    t.setdefault(key, []).append(v)
for kind in ("small", "large", "percall"):
    for f in glob.glob(f"{work}/{kind}-*.json"):
        d = json.load(open(f))
        mc = {m["bytes"]: m["gbps"] for m in d.get("reference", {}).get("memcpy", [])}
        for p in d.get("allreduce", []):
            if p.get("status") != "ok":
                continue
            name = p["algo"] + (" per_call" if kind == "percall" else "")
            # The ranks' mean call, as IMB's t_avg and OSU's average read a point; the median
            # of the slowest rank's calls (what tpbench's table shows) beside it.
            add((name, p["n_gpus"], p["bytes"]), p["time_us"]["rank_mean"])
            add((name + " slowest", p["n_gpus"], p["bytes"]), p["time_us"]["median"])
            if p["bytes"] in mc and kind != "percall":
                bw.setdefault((p["algo"], p["n_gpus"], p["bytes"]), []).append(p["busbw_gbps"] / mc[p["bytes"]])
def peer(name, col):
    for f in glob.glob(f"{work}/{name}-*.txt"):
        n = int(os.path.basename(f).split("-")[1])
        for line in open(f):
            w = line.split()
            if len(w) >= 2 and w[0].isdigit() and int(w[0]) > 0:
                try:
                    add((name.upper(), n, int(w[0])), float(w[col]))
                except (ValueError, IndexError):
                    pass
peer("imb", 4)   # #bytes #repetitions t_min t_max t_avg
peer("osu", 1)   # size avg-latency
sizes = [8, 1024, 65536, 1 << 20, 16 << 20, 64 << 20]
def label(b):
    return f"{b >> 20}M" if b >= 1 << 20 else f"{b >> 10}K" if b >= 1024 else str(b)
cols = scratch + ["mpi", "IMB", "mpi per_call", "OSU"]
print(f"# median over {rounds} rounds of each one's mean call in µs (each rank's mean call averaged over"
      " the ranks: tpbench's time_us.rank_mean, IMB's t_avg, OSU's average); tpbench back to back as IMB"
      " times, unless 'per_call' (a barrier before each call, as OSU times)")
print("| N | size | " + " | ".join(cols) + " | fastest from scratch / Open MPI | mpi / IMB | mpi per_call / OSU |")
print("|---|---:|" + "---:|" * (len(cols) + 3))
for n in (2, 4):
    for b in sizes:
        row = [f"{med(t[(c, n, b)]):.2f}" if (c, n, b) in t else "-" for c in cols]
        best = min((med(t[(c, n, b)]), c) for c in scratch if (c, n, b) in t) if any((c, n, b) in t for c in scratch) else None
        ref = t.get(("IMB", n, b)) or t.get(("mpi", n, b))
        ratio = f"{best[0] / med(ref):.2f} ({best[1]})" if best and ref else "-"
        def over(a, b_):
            x, y = t.get((a, n, b)), t.get((b_, n, b))
            return f"{med(x) / med(y):.2f}" if x and y else "-"
        print(f"| {n} | {label(b)} | " + " | ".join(row) + f" | {ratio} | {over('mpi', 'IMB')} | "
              f"{over('mpi per_call', 'OSU')} |")
print()
print("# the same runs' median of the slowest rank's calls (tpbench's table), µs")
for n in (2, 4):
    for b in sizes:
        print(f"N={n} {label(b)}: " + ", ".join(f"{c} {med(t[(c + ' slowest', n, b)]):.2f}"
                                               for c in scratch + ["mpi"] if (c + " slowest", n, b) in t))
print()
print("# busbw over single-thread memcpy of the same size, median over rounds (min-max)")
for n in (2, 4):
    for b in (1 << 20, 64 << 20):
        parts = [f"{a} {med(bw[(a, n, b)]):.2f} ({min(bw[(a, n, b)]):.2f}-{max(bw[(a, n, b)]):.2f})"
                 for a in scratch + ["mpi"] if (a, n, b) in bw]
        print(f"N={n} {label(b)}: " + ", ".join(parts))
cont = {}  # (phase, algo, bytes) -> {round: time_us}
for f in glob.glob(f"{work}/contention-*.json"):
    words = os.path.basename(f)[:-len(".json")].split("-")
    phase, r = words[-2], int(words[-1])
    d = json.load(open(f))
    for p in d.get("allreduce", []):
        if p.get("status") == "ok":
            cont.setdefault((phase, p["algo"], p["bytes"]), {})[r] = p["time_us"]
if cont:
    print()
    print("# N=2, quiet and then beside one busy process, interleaved: per round the busy median over the"
          " quiet one, then busy p99 / longest call (µs) / calls over 10x the median; each phase's longest"
          " call over all rounds (ms)")
    for (_, a, b) in sorted((k for k in cont if k[0] == "busy"), key=lambda k: (k[2], k[1])):
        busyRuns, quietRuns = cont[("busy", a, b)], cont.get(("quiet", a, b), {})
        parts = []
        for r, tu in sorted(busyRuns.items()):
            ratio = f"{tu['median'] / quietRuns[r]['median']:.2f}x" if r in quietRuns else "-"
            parts.append(f"{ratio} {tu['p99']:.1f}/{tu['max']:.0f}/{tu.get('outliers', 0)}")
        longest = lambda runs: max(tu["max"] for tu in runs.values()) / 1000 if runs else float("nan")
        print(f"{a:18s} {label(b):>4s}  " + "  ".join(parts) +
              f"  longest: quiet {longest(quietRuns):.2f}, busy {longest(busyRuns):.2f}")
PY
