#!/usr/bin/env python3
"""scripts/reader-scaling.py — how the readers' time and memory grow with their input.

    /usr/bin/python3 scripts/reader-scaling.py [TPBENCH] [--scales 1,10,100,1000]

For each reader it writes a typical input and inputs 10, 100 and 1000 times its size, runs the
command on each (three times, the median printed) and prints wall seconds and peak resident
memory, and each as a ratio to the typical input's: a reader is linear when both ratios follow
the scale (memory plus the program's own fixed start, about 300 MB of LibTorch).

- import: an nccl-tests allreduce log of 8 ranks, 8 B to 8 GiB (32 rows); scaled by repeating the
  test (several runs in one log, as a job log of many runs holds them);
- compare: a results file of 200 collective points against itself; scaled by more points;
- history: a directory of 20 results files of 50 points; scaled by more files, up to the 2000
  history reads (1000x is refused by count, and says so);
- report: a results file of 200 collective points; scaled as for compare.
Nothing here is a pass or a fail: it prints figures (docs/reports.md cites them).
"""
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def log_text(repeats):
    """An nccl-tests 2.17-style allreduce log of 8 ranks, the table repeated `repeats` times."""
    head = ["# nccl-tests version 2.17.1 nccl-headers=22304 nccl-library=22304",
            "# Collective test starting: all_reduce_perf",
            "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 "
            "agg iters: 1 validation: 1 graph: 0",
            "#", "# Using devices"]
    for r in range(8):
        head.append(f"#  Rank  {r} Group  0 Pid  {1000 + r:5d} on      node0 device  {r} [0000:{r:02x}:00] "
                    "NVIDIA H100 80GB HBM3")
    table = ["#",
             "#                                                              out-of-place                       in-place          ",
             "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
             "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       "]
    rows = []
    size = 8
    while size <= 8 << 30:
        t = 20.0 + size / 300e3
        alg = size / (t * 1e3)
        bus = alg * 2 * 7 / 8
        cell = f"{t:8.1f} {alg:7.2f} {bus:7.2f} {0:6d}"
        rows.append(f"{size:12d} {max(size // 4, 1):13d}     float     sum      -1 {cell} {cell}")
        size *= 2
    foot = ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 100.0", "#"]
    out = head + table + rows + foot
    for _ in range(repeats - 1):
        out += table + rows + foot
    return "\n".join(out) + "\n"


def results_doc(points, seed=0):
    recs = []
    for i in range(points):
        n = 2 + i % 3
        b = 4 << (i // 3 % 30)
        recs.append({"op": "allreduce", "algo": ["ring", "tree", "library"][i // 90 % 3], "transport": "shm",
                     "device": "cpu", "n_gpus": n, "bytes": b * (1 + i // 270), "count": b * (1 + i // 270) // 4,
                     "iters": 10, "warmup": 2, "status": "ok",
                     "time_us": {"median": 100.0 + seed, "min": 90.0, "max": 120.0},
                     "algbw_gbps": 1.0, "busbw_gbps": 1.5, "wrong": 0})
    return {"schema": "tpbench.results/2", "meta": {}, "runs": [], "allreduce": recs}


def run(cmd, cwd):
    """Seconds and peak RSS (MB) of one run of cmd; its exit status."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    s = time.monotonic() - t0
    # ru_maxrss of the children is the largest of any child so far: measure each in a fresh
    # process (see measure()), so this is this run's.
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return s, max(peak, before) / 1024, p.returncode, p.stderr.strip().splitlines()[-1:] if p.stderr else []


def measure(cmd, cwd, repeats=3):
    """Median seconds and peak MB over `repeats` runs, each in a fresh Python child."""
    secs, mems, rc, err = [], [], 0, []
    for _ in range(repeats):
        probe = subprocess.run([sys.executable, __file__, "--one", json.dumps(cmd)], cwd=cwd,
                               capture_output=True, text=True)
        s, m, rc, err = json.loads(probe.stdout)
        secs.append(s)
        mems.append(m)
    return statistics.median(secs), statistics.median(mems), rc, err


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        print(json.dumps(run(json.loads(sys.argv[2]), os.getcwd())))
        return
    args = [a for a in sys.argv[1:]]
    scales = [1, 10, 100, 1000]
    if "--scales" in args:
        i = args.index("--scales")
        scales = [int(x) for x in args[i + 1].split(",")]
        del args[i:i + 2]
    tpbench = os.path.abspath(args[0] if args else os.path.join(ROOT, "build", "tpbench"))
    work = tempfile.mkdtemp(prefix="tpb-scaling-")
    try:
        print(f"{'reader':8} {'scale':>6} {'input':>10} {'seconds':>9} {'x time':>8} {'peak MB':>9} {'x memory':>9}  note")
        for reader in ("import", "compare", "history", "report"):
            base = None
            for scale in scales:
                d = os.path.join(work, f"{reader}-{scale}")
                os.makedirs(d)
                if reader == "import":
                    with open(os.path.join(d, "in.log"), "w") as f:
                        f.write(log_text(scale))
                    cmd = [tpbench, "import", "in.log", "--out", "out.json"]
                    size = os.path.getsize(os.path.join(d, "in.log"))
                elif reader in ("compare", "report"):
                    with open(os.path.join(d, "r.json"), "w") as f:
                        json.dump(results_doc(min(200 * scale, 200000)), f)
                    cmd = [tpbench, "compare", "r.json", "r.json"] if reader == "compare" else \
                          [tpbench, "report", "r.json", "-o", "rep", "--gnuplot", ""]
                    size = os.path.getsize(os.path.join(d, "r.json"))
                else:
                    os.makedirs(os.path.join(d, "h"))
                    size = 0
                    for k in range(20 * scale):
                        p = os.path.join(d, "h", f"{k:06d}.json")
                        with open(p, "w") as f:
                            json.dump(results_doc(50, seed=k % 7), f)
                        size += os.path.getsize(p)
                        if k >= 2000:
                            break  # refused by count: the rest would change nothing
                    cmd = [tpbench, "history", "h", "--metric", "busbw_gbps", "--permutations", "19"]
                if reader == "import":
                    # Each run writes out.json; the next must replace it.
                    cmd += ["--overwrite"]
                s, m, rc, err = measure(cmd, d)
                if base is None:
                    base = (s, m)
                note = "" if rc in (0, 3) else f"exit {rc}: {err[0][:90] if err else ''}"
                print(f"{reader:8} {scale:>6} {size / 1e6:>8.2f}MB {s:>9.2f} {s / base[0]:>8.1f} {m:>9.0f} "
                      f"{m / base[1]:>9.2f}  {note}", flush=True)
                shutil.rmtree(d)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
