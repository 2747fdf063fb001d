#!/usr/bin/env python3
"""The generated load/seed matrix of docs/placement-quality.md, run and compared.

  scripts/sim_matrix.py run --out DIR --policy P [--seeds 1,2,3] [--clusters a,b] [--loads 1,2]
                           [--jobs 2] [-- EXTRA SIMULATE FLAGS]
  scripts/sim_matrix.py compare --base DIR [--base DIR2 ...] --cand DIR [--cand-policy topogang]
                               [--seeds ...] [--clusters ...] [--loads ...] [-v] [--dominance]
                               [--spread] [--ratios]
  scripts/sim_matrix.py classload --traces DIR [--min-gpus 256] [--seeds ...] [--clusters ...]

`run` simulates every (cluster, load, seed) of the matrix with `topogang simulate` (the binary in
$TOPOGANG_BIN, else build/bin/topogang) and keeps each run's summary.csv and jobs-<policy>.csv
under DIR/<cluster>-L<load>-s<seed>/ (runs already there are kept unless --force). `compare` picks,
per run and per metric, the best of the six topology-aware baselines found under the --base dirs
and counts where the candidate policy (from --cand) wins, ties or loses: mean and p95 JCT (ties
within 0.5 %), goodput (0.1 point), longest wait of a 256+ GPU gang (0.5 %; a 256+ gang that never
started waited forever). -v prints every run; --dominance counts, per baseline, the runs where
the candidate is at least as good on all four metrics at once and those where the baseline is,
and better on one (the candidate dominated), then the runs where some baseline dominates it;
--spread gives, per cluster and load, the mean difference to the best baseline over the seeds
with its 95 % confidence interval (Student's t); --ratios the geometric mean over the seeds of
candidate / best baseline per metric (how far from the bar, where W/T/L only counts sides).
`classload` generates the matrix's traces (kept under --traces) and prints, per cluster and load,
the offered load of the gangs of at least --min-gpus GPUs alone and their share of the GPU-time:
where that load is above 1, the large gangs' backlog grows under any queue order.

Example (docs/placement-quality.md): the baselines once, then topogang with a queue option:
  scripts/sim_matrix.py run --out /tmp/mx/base --policy kueue-tas,kueue-tas-best,slurm-tree,\
      slurm-tree-best,volcano-hypernode,volcano-hypernode-best,topogang
  scripts/sim_matrix.py run --out /tmp/mx/noholds --policy topogang -- --queue-max-holds 0
  scripts/sim_matrix.py compare --base /tmp/mx/base --cand /tmp/mx/noholds --dominance
"""
import argparse
import csv
import math
import os
import signal
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

BIN = os.environ.get("TOPOGANG_BIN", os.path.join(os.path.dirname(__file__), "..", "build", "bin", "topogang"))
CL = os.path.join(os.path.dirname(__file__), "..", "examples", "clusters")
BASELINES = ["kueue-tas", "kueue-tas-best", "slurm-tree", "slurm-tree-best",
             "volcano-hypernode", "volcano-hypernode-best"]
ABBREV = {"kueue-tas": "KT", "kueue-tas-best": "KTb", "slurm-tree": "ST",
          "slurm-tree-best": "STb", "volcano-hypernode": "VH", "volcano-hypernode-best": "VHb"}

# (cluster, generator flags, loads): the matrix of "Offered loads over three seeds".
MATRIX = [
    ("meta-16k", ["--generate", "10000", "--profile", "mixed"], ["0.5", "0.9", "1", "2", "3"]),
    ("gb200-nvl72", ["--generate", "3000", "--profile", "nvl72", "--trace-failures", "0.02",
                     "--correlated-failures", "0.3"], ["0.5", "0.9", "1", "2", "3"]),
    ("mixed-h100-a100", ["--generate", "3000", "--profile", "llm"], ["0.5", "0.9", "1", "2", "3"]),
    ("hyperscale-100k", ["--generate", "10000", "--profile", "llm"], ["0.5", "1", "1.25", "2", "3"]),
]


def names(flag):
    """A comma-separated flag as a list, or None (no filter) when it is empty."""
    return flag.split(",") if flag else None


def runs(seeds, clusters, loads=None):
    for cluster, gen, cluster_loads in MATRIX:
        if clusters and cluster not in clusters:
            continue
        for s in seeds:
            for load in cluster_loads:
                if not loads or load in loads:
                    yield cluster, gen, load, s


def simulate_cmd(cluster, gen, load, seed, *tail):
    """`topogang simulate` for one (cluster, load, seed) of the matrix, then `tail`."""
    return [BIN, "simulate", "--cluster", os.path.join(CL, cluster + ".yaml"), *gen,
            "--seed", seed, "--load", load, *tail]


def cmd_run(a, extra):
    todo = list(runs(a.seeds.split(","), names(a.clusters), names(a.loads)))

    def one(r):
        cluster, gen, load, s = r
        out = os.path.join(a.out, f"{cluster}-L{load}-s{s}")
        if os.path.exists(os.path.join(out, "summary.csv")) and not a.force:
            return f"{out}: kept"
        cmd = simulate_cmd(cluster, gen, load, s, "--policy", a.policy, "--out", out, *extra)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
        except subprocess.TimeoutExpired:
            return f"{out}: TIMEOUT after {a.timeout} s"
        if p.returncode != 0:
            return f"{out}: FAILED\n{p.stderr}"
        return f"{out}: done"

    with ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for msg in ex.map(one, todo):
            print(msg, flush=True)


def read_summary(path):
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            rows[r["policy"]] = r
    return rows


def metrics(row):
    return {
        "mean": float(row["mean_jct_s"]),
        "p95": float(row["p95_jct_s"]),
        "goodput": float(row["goodput"]),
        # a 256+ gang that never started waited forever
        "wait256": float("inf") if int(row["never_started_256"]) else float(row["max_wait_256_s"]),
    }


def verdict(metric, cand, best):
    if metric == "goodput":
        d = cand - best
        return "W" if d > 0.001 else ("L" if d < -0.001 else "T")
    if cand == best:
        return "T"
    if best == 0 or best == float("inf"):
        return "L" if cand > best else "W"
    rel = (cand - best) / best
    return "L" if rel > 0.005 else ("W" if rel < -0.005 else "T")


def load_runs(a, clusters):
    """Each run with a candidate row: (cluster, load, name, candidate metrics, {baseline: metrics})
    from the --cand dir and every --base dir (a later --base overrides an earlier one)."""
    for cluster, gen, load, s in runs(a.seeds.split(","), clusters, names(a.loads)):
        name = f"{cluster}-L{load}-s{s}"
        cp = os.path.join(a.cand, name, "summary.csv")
        if not os.path.exists(cp):
            continue
        crow = read_summary(cp).get(a.cand_policy)
        if crow is None:
            continue
        base = {}
        for d in a.base:
            p = os.path.join(d, name, "summary.csv")
            if os.path.exists(p):
                for pol, row in read_summary(p).items():
                    if pol in BASELINES:
                        base[pol] = metrics(row)
        if base:
            yield cluster, load, name, metrics(crow), base


def dominance_table(loaded):
    """Per baseline: runs where the candidate is at least as good on all four metrics (ties
    within the tolerances of verdict()), runs where the baseline is (at least as good on all
    four and better on one: the candidate is dominated), and how often the candidate is worse
    on each metric; then the runs where some baseline dominates the candidate."""
    rows = {b: {"runs": 0, "dominates": 0, "dominated": 0, "mean": 0, "p95": 0, "goodput": 0,
                "wait256": 0} for b in BASELINES}
    any_dominated = 0
    for _, _, _, c, base in loaded:
        hit = False
        for pol, b in base.items():
            r = rows[pol]
            r["runs"] += 1
            v = {m: verdict(m, c[m], b[m]) for m in ("mean", "p95", "goodput", "wait256")}
            worse = [m for m, x in v.items() if x == "L"]
            for m in worse:
                r[m] += 1
            if not worse:
                r["dominates"] += 1
            elif "W" not in v.values():
                r["dominated"] += 1
                hit = True
        any_dominated += hit
    out = ["baseline                 runs  cand >= on all 4  base >= on all 4, > on one"
           "  cand worse on: mean  p95  goodput  wait256"]
    for b, r in rows.items():
        if r["runs"]:
            out.append(f"{b:24s} {r['runs']:4d}  {r['dominates']:16d}  {r['dominated']:26d}"
                       f"  {r['mean']:19d}  {r['p95']:3d}  {r['goodput']:7d}  {r['wait256']:7d}")
    out.append(f"runs where some baseline dominates the candidate: {any_dominated} of {len(loaded)}")
    return "\n".join(out)


def ratio_table(loaded):
    """Per (cluster, load) and over all runs: the geometric mean over the runs of the candidate's
    figure divided by the best baseline's on that metric (mean and p95 JCT; the longest 256+
    wait where both are above zero: a candidate gang that never started makes it inf, a run where
    only the baselines' gangs waited is left out), and the mean goodput difference in points. One
    number per metric for how far a variant is from the bar, where W/T/L only counts sides."""
    acc = {}
    for cluster, load, _, c, base in loaded:
        for key in ((cluster, load), ("all", "")):
            d = acc.setdefault(key, {"wait256": [], "mean": [], "p95": [], "goodput": []})
            for m in ("wait256", "mean", "p95"):
                best = min(b[m] for b in base.values())
                if 0 < best < float("inf") and 0 < c[m]:
                    d[m].append(math.log(c[m] / best) if c[m] < float("inf") else float("inf"))
            d["goodput"].append(100 * (c["goodput"] - max(b["goodput"] for b in base.values())))
    out = ["cluster            load  runs  256+ wait / best (runs)  mean JCT / best  p95 JCT / best"
           "  goodput - best (points)"]

    def geo(v):
        if not v:
            return "-"
        return "inf" if float("inf") in v else f"{math.exp(sum(v) / len(v)):.3f}"

    for (cluster, load), d in sorted(acc.items(), key=lambda kv: kv[0][0] == "all"):
        out.append(f"{cluster:18s} {load:>4s}  {len(d['mean']):4d}  "
                   f"{geo(d['wait256']) + ' (' + str(len(d['wait256'])) + ')':23s}  "
                   f"{geo(d['mean']):15s}  {geo(d['p95']):14s}  "
                   f"{statistics.mean(d['goodput']):+.2f}")
    return "\n".join(out)


# Student's t, two-sided 95 %, by degrees of freedom (beyond 30: the normal's 1.96).
T975 = [0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060,
        2.056, 2.052, 2.048, 2.045, 2.042]


def spread_table(diffs):
    """Per (cluster, load): over the seeds, the candidate's difference to each seed's best
    baseline (mean / p95 JCT in %, goodput in points) as mean +- the 95 % confidence half-width
    (min .. max), and W/T/L on mean JCT."""
    out = ["cluster            load  seeds  mean JCT vs best %              W/T/L   p95 JCT vs best %"
           "               goodput vs best (points)"]

    def cell(v):
        m = statistics.mean(v)
        half = (T975[len(v) - 1] if len(v) <= 31 else 1.96) * statistics.stdev(v) / len(v) ** 0.5
        return f"{m:+.1f} +- {half:.1f} ({min(v):+.1f} .. {max(v):+.1f})"

    for (cluster, load), d in diffs.items():
        if len(d["mean"]) < 2:
            continue
        wtl = "/".join(str(sum(1 for v in d["verdict"] if v == k)) for k in "WTL")
        out.append(f"{cluster:18s} {load:>4s}  {len(d['mean']):5d}  {cell(d['mean']):30s}  {wtl:6s}  "
                   f"{cell(d['p95']):30s}  {cell(d['goodput'])}")
    return "\n".join(out)


def cmd_compare(a):
    clusters = names(a.clusters)
    totals = {}
    lines = []
    diffs = {}  # (cluster, load) -> per-seed differences, for --spread
    loaded = list(load_runs(a, clusters))
    for cluster, load, name, c, base in loaded:
        cells = []
        d = diffs.setdefault((cluster, load), {"mean": [], "p95": [], "goodput": [], "verdict": []})
        for m in ("mean", "p95", "goodput", "wait256"):
            better = max if m == "goodput" else min
            who = better(base, key=lambda p: base[p][m])
            v = verdict(m, c[m], base[who][m])
            if m == "goodput":
                d[m].append(100 * (c[m] - base[who][m]))
            elif m != "wait256":
                d[m].append(100 * (c[m] / base[who][m] - 1) if base[who][m] > 0 else 0.0)
                if m == "mean":
                    d["verdict"].append(v)
            if m == "wait256" and c[m] == 0 and base[who][m] == 0:
                v = "-"
            totals.setdefault((cluster, m), {"W": 0, "T": 0, "L": 0, "-": 0})[v] += 1
            totals.setdefault(("all", m), {"W": 0, "T": 0, "L": 0, "-": 0})[v] += 1
            if m == "goodput":
                cells.append(f"{m} {100*c[m]:.1f}/{100*base[who][m]:.1f}{ABBREV[who]} {v}")
            elif m == "wait256":
                cells.append(f"w256 {c[m]/3600:.1f}h/{base[who][m]/3600:.1f}h{ABBREV[who]} {v}")
            else:
                cells.append(f"{m} {c[m]/3600:.2f}h/{base[who][m]/3600:.2f}h{ABBREV[who]} {v}")
        lines.append(f"{name:28s} " + " | ".join(cells))
    if a.verbose:
        print("\n".join(lines))
    if a.dominance:
        print(dominance_table(loaded))
    if a.spread:
        print(spread_table(diffs))
    if a.ratios:
        print(ratio_table(loaded))
    print(f"{'cluster':18s} {'metric':8s} W/T/L (- = no 256+ gang waited)")
    for (cluster, m), t in sorted(totals.items()):
        print(f"{cluster:18s} {m:8s} {t['W']}/{t['T']}/{t['L']}" + (f" ({t['-']} -)" if t["-"] else ""))


def trace_class_load(path, min_gpus):
    """(offered load of the gangs of at least min_gpus GPUs alone, their share of the GPU-time)
    of one trace written by `simulate --write-trace`. The offered load is the generator's: GPU-time
    over the cluster's GPUs times the arrival window (first to last arrival); the cluster's GPUs
    come from the trace's first comment line ("... on meta-16k (16384 GPUs)"); event rows are
    skipped."""
    with open(path) as f:
        header = f.readline()
        try:
            gpus = int(header.rsplit("(", 1)[1].split()[0])
        except (IndexError, ValueError):
            raise SystemExit(f"{path}: first line does not name the cluster's GPUs: {header.strip()!r}")
        # event rows (@fail, @drain, @slow) are not jobs
        rows = list(csv.DictReader(line for line in f if not line.startswith(("#", "@"))))
    if not rows or gpus <= 0:
        raise SystemExit(f"{path}: no jobs, or a cluster of no GPUs")
    arrivals = [float(r["arrival_s"]) for r in rows]
    window = max(arrivals) - min(arrivals)
    total = big = 0.0
    for r in rows:
        size = int(r["members"]) * int(r["gpus_per_member"])
        work = size * float(r["duration_s"])
        total += work
        if size >= min_gpus:
            big += work
    if window <= 0 or total <= 0:
        raise SystemExit(f"{path}: arrivals or run times are all zero")
    return big / (gpus * window), big / total


def cmd_classload(a):
    clusters = names(a.clusters)
    os.makedirs(a.traces, exist_ok=True)
    got = {}
    for cluster, gen, load, s in runs(a.seeds.split(","), clusters):
        path = os.path.join(a.traces, f"{cluster}-L{load}-s{s}.csv")
        if not os.path.exists(path):
            p = subprocess.run(simulate_cmd(cluster, gen, load, s, "--write-trace", path),
                               capture_output=True, text=True)
            if p.returncode != 0:
                if os.path.exists(path):
                    os.remove(path)  # a partial trace would be taken as done next time
                raise SystemExit(f"{path}: simulate failed\n{p.stderr}")
        got.setdefault((cluster, load), []).append(trace_class_load(path, a.min_gpus))
    print(f"{'cluster':18s} {'load':>5s} {'seeds':>5s}  offered load of {a.min_gpus}+ GPU gangs alone  their share of the GPU-time")
    for (cluster, load), v in got.items():
        lo, hi = min(x[0] for x in v), max(x[0] for x in v)
        slo, shi = min(x[1] for x in v), max(x[1] for x in v)
        print(f"{cluster:18s} {load:>5s} {len(v):5d}  {lo:.2f}-{hi:.2f}{'':28s}{slo:.2f}-{shi:.2f}")


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--policy", required=True)
    r.add_argument("--seeds", default="1,2,3")
    r.add_argument("--clusters", default="")
    r.add_argument("--loads", default="", help="only these loads of the matrix, e.g. 0.9,1,1.25")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--force", action="store_true")
    r.add_argument("--timeout", type=float, default=600, help="seconds per simulate run")
    c = sub.add_parser("compare")
    c.add_argument("--base", action="append", required=True)
    c.add_argument("--cand", required=True)
    c.add_argument("--cand-policy", default="topogang")
    c.add_argument("--seeds", default="1,2,3")
    c.add_argument("--clusters", default="")
    c.add_argument("--loads", default="", help="only these loads of the matrix")
    c.add_argument("-v", "--verbose", action="store_true")
    c.add_argument("--ratios", action="store_true",
                   help="also print, per cluster and load, the geometric mean of candidate / best baseline per metric")
    c.add_argument("--spread", action="store_true",
                   help="also print, per cluster and load, the mean difference to the best baseline over the seeds with its 95 %% confidence interval")
    c.add_argument("--dominance", action="store_true",
                   help="also count, per baseline, the runs where the candidate is at least as good on every metric")
    k = sub.add_parser("classload", help="offered load of the large gangs alone, per cluster and load")
    k.add_argument("--traces", required=True, help="where the generated traces are kept")
    k.add_argument("--min-gpus", type=int, default=256)
    k.add_argument("--seeds", default="1,2,3")
    k.add_argument("--clusters", default="")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        cmd_run(a, extra)
    elif a.cmd == "classload":
        cmd_classload(a)
    else:
        cmd_compare(a)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly
    main()
