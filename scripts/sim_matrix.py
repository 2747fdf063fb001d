#!/usr/bin/env python3
"""The generated load/seed matrix of docs/placement-quality.md, run and compared.

  scripts/sim_matrix.py run --out DIR --policy P [--seeds 1,2,3] [--clusters a,b] [--loads 1,2]
                           [--jobs 2] [--load-factor F] [-- EXTRA SIMULATE FLAGS]
  scripts/sim_matrix.py compare --base DIR [--base DIR2 ...] --cand DIR [--cand-policy topogang]
                               [--seeds ...] [--clusters ...] [--loads ...] [-v] [--dominance]
                               [--spread] [--ratios] [--paired [--wait-against POLICY]]
  scripts/sim_matrix.py stability --a DIR [--a DIR2] --b DIR [--cand-policy topogang] [--seeds ...]
  scripts/sim_matrix.py classload --traces DIR [--min-gpus 256] [--seeds ...] [--clusters ...]
  scripts/sim_matrix.py gap --dir DIR [--dir DIR2 ...] [--seeds ...] [--clusters ...] [--loads ...]
  scripts/sim_matrix.py tradeoff --base DIR [--base DIR2 ...] --row LABEL=DIR[:POLICY] [--row ...]
                                --cells CLUSTER:LOAD,... [--seeds ...] [--interval]
  scripts/sim_matrix.py waits [--base DIR ...] --row LABEL=DIR[:POLICY] [--row ...]
                             --cells CLUSTER:LOAD,... [--seeds ...] [--min-gpus 256]

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
candidate / best baseline per metric (how far from the bar, where W/T/L only counts sides);
--paired reads the bar per (cluster, load) against each baseline: the mean paired difference over
the seeds with its 95 % interval, and whether even the interval's worse end is within the tie
tolerance everywhere (the cell shown to match or beat every baseline); --wait-against POLICY
reads the 256+ wait there against that baseline only (`best-mean`: the one with the lowest mean
JCT in each cell), the other reading of the issue's "best baseline". Every compare ends with
the runs that meet the whole bar.
`run --load-factor 1.001` simulates the same jobs with arrivals 0.1 % denser, under the matrix's
load names; `stability --a MATRIX --b PERTURBED` then shows how far each policy's figures and the
candidate's verdicts move under so small a change (both with all seven policies).
`classload` generates the matrix's traces (kept under --traces) and prints, per cluster and load,
the offered load of the gangs of at least --min-gpus GPUs alone and their share of the GPU-time:
where that load is above 1, the large gangs' backlog grows under any queue order.
`gap` reads runs made with `-- --lower-bound-max-wait-256 best` (bound.csv: sim/jct_bound.h) and
prints, per cluster and load over the seeds, the lower bound on mean JCT no scheduler beats, how
much the best baseline's 256+ promise raises it, each policy's mean JCT over it (geometric mean),
and the runs where the bar's mean JCT is below what that promise allows (unreachable by anyone).
`tradeoff` prints the table of "Where issue #12's queue bar stands": one markdown row per --row
(`LABEL=base:POLICY` for a baseline's own runs), one column per cell, each the mean paired
difference over the seeds of mean / p95 JCT against --jct-baseline (kueue-tas-best) and of the
longest 256+ wait against --wait-baseline (slurm-tree-best); --interval adds the 95 % half-widths.
`waits` reads the same rows' jobs-<policy>.csv files: per cell, the mean over the seeds of each
run's mean, p95 and longest wait of the gangs of --min-gpus+ GPUs and of how many waited over an
hour; whether a policy keeps the longest wait short at the others' expense.

Example (docs/placement-quality.md): the baselines once, then topogang with a queue option:
  scripts/sim_matrix.py run --out /tmp/mx/base --policy kueue-tas,kueue-tas-best,slurm-tree,\
      slurm-tree-best,volcano-hypernode,volcano-hypernode-best,topogang
  scripts/sim_matrix.py run --out /tmp/mx/noholds --policy topogang -- --queue-max-holds 0
  scripts/sim_matrix.py compare --base /tmp/mx/base --cand /tmp/mx/noholds --dominance
"""
import argparse
import collections
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
        offered = load if a.load_factor == 1 else repr(float(load) * a.load_factor)
        cmd = simulate_cmd(cluster, gen, offered, s, "--policy", a.policy, "--out", out, *extra)
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


def run_files(dirs, name, filename):
    """The paths of one run's `filename` that exist under `dirs`, in their order (a later dir
    overrides an earlier one)."""
    paths = (os.path.join(d, name, filename) for d in dirs)
    return [p for p in paths if os.path.exists(p)]


def matrix_rows(dirs, name):
    """{policy: metrics} of one run from `dirs` (a later dir overrides an earlier one)."""
    got = {}
    for p in run_files(dirs, name, "summary.csv"):
        got.update({pol: metrics(row) for pol, row in read_summary(p).items()})
    return got


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
        base = {p: m for p, m in matrix_rows(a.base, name).items() if p in BASELINES}
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


def half_width(v):
    """The 95 % confidence half-width of the mean of v (Student's t; 0 for a single value)."""
    if len(v) < 2:
        return 0.0
    return (T975[len(v) - 1] if len(v) <= 31 else 1.96) * statistics.stdev(v) / len(v) ** 0.5


def spread_table(diffs):
    """Per (cluster, load): over the seeds, the candidate's difference to each seed's best
    baseline (mean / p95 JCT in %, goodput in points) as mean +- the 95 % confidence half-width
    (min .. max), and W/T/L on mean JCT."""
    out = ["cluster            load  seeds  mean JCT vs best %              W/T/L   p95 JCT vs best %"
           "               goodput vs best (points)"]

    def cell(v):
        return f"{statistics.mean(v):+.1f} +- {half_width(v):.1f} ({min(v):+.1f} .. {max(v):+.1f})"

    for (cluster, load), d in diffs.items():
        if len(d["mean"]) < 2:
            continue
        wtl = "/".join(str(sum(1 for v in d["verdict"] if v == k)) for k in "WTL")
        out.append(f"{cluster:18s} {load:>4s}  {len(d['mean']):5d}  {cell(d['mean']):30s}  {wtl:6s}  "
                   f"{cell(d['p95']):30s}  {cell(d['goodput'])}")
    return "\n".join(out)


METRICS = ("mean", "p95", "goodput", "wait256")


def best_of(base, m):
    """The baseline with the best figure on metric m (highest goodput, else lowest)."""
    better = max if m == "goodput" else min
    return better(base, key=lambda p: base[p][m])


def run_verdicts(c, base):
    """Per metric: the candidate's W / T / L against the best baseline on it ("-" for the 256+
    wait when no 256+ gang waited under the candidate or the best baseline)."""
    out = {}
    for m in METRICS:
        b = base[best_of(base, m)][m]
        out[m] = "-" if m == "wait256" and c[m] == 0 and b == 0 else verdict(m, c[m], b)
    return out


def paired_diff(m, c, b):
    """How far the candidate's figures `c` are behind the baseline's `b` on metric m (positive:
    the baseline is ahead): mean and p95 JCT in % (0 against a baseline of none), goodput in
    points, the longest 256+ wait in hours (+-inf when only one side's gang never started)."""
    if m == "goodput":
        return 100 * (b[m] - c[m])
    if m == "wait256":
        if c[m] == float("inf") or b[m] == float("inf"):
            return 0.0 if c[m] == b[m] else (float("inf") if c[m] > b[m] else -float("inf"))
        return (c[m] - b[m]) / 3600
    return 100 * (c[m] / b[m] - 1) if b[m] > 0 else 0.0


def wait_reference(d, wait_against):
    """The baselines the 256+ wait is read against in one cell: all of them (the issue's "best
    baseline" as the best on that metric), a named one, or, for "best-mean", the one with the
    lowest mean JCT over the cell's seeds (the issue's "best baseline" read as one baseline,
    the best on its headline metric). `d` maps (baseline, metric) to the per-seed differences."""
    pols = sorted({pol for pol, _ in d})
    if not wait_against:
        return set(pols)
    if wait_against == "best-mean":
        # The candidate's mean JCT difference is largest against the baseline with the lowest.
        return {max(pols, key=lambda pol: statistics.mean(d[(pol, "mean")]))}
    if wait_against not in pols:
        raise SystemExit(f"--wait-against {wait_against}: no such baseline among {pols}")
    return {wait_against}


def paired_table(loaded, wait_against=""):
    """The bar read per (cluster, load) and per baseline, as the issue words it ("match or beat
    every baseline"), instead of per run against the best of six: over the seeds, the candidate's
    paired difference to each baseline (mean and p95 JCT in %, goodput in points, the longest 256+
    wait in hours), its mean and 95 % interval. A cell is lost on a metric when the candidate is
    behind some baseline by more than the tie tolerance of verdict() on average ("point"), or when
    even the interval's better end is ("significant"). Per cell the baseline furthest ahead of the
    candidate on each metric is shown. A third reading asks more: the cell is shown to match or
    beat every baseline ("shown") only when even the interval's worse end is within the tie
    tolerance on every metric against every baseline (a non-inferiority test). Under the first
    two, a variant that only widens the spread of its figures can clear a cell; under this one
    it cannot: a wider interval makes the cell harder to show, not easier. With `wait_against`
    the 256+ wait is read against that baseline only (wait_reference)."""
    cells = {}  # (cluster, load) -> {(baseline, metric): [difference per seed]}
    base_waits = {}  # (cluster, load) -> {baseline: [its longest 256+ wait, hours, when finite]}
    for cluster, load, _, c, base in loaded:
        d = cells.setdefault((cluster, load), {})
        bw = base_waits.setdefault((cluster, load), {})
        for pol, b in base.items():
            if b["wait256"] < float("inf"):
                bw.setdefault(pol, []).append(b["wait256"] / 3600)
            for m in METRICS:
                d.setdefault((pol, m), []).append(paired_diff(m, c, b))
    tol = {"mean": 0.5, "p95": 0.5, "goodput": 0.1}
    out = ["cluster            load  seeds  worst baseline per metric: mean over the seeds +- 95 % "
           "(mean/p95 JCT %, goodput points behind, 256+ wait hours)   lost point/significant, "
           "shown (- yes, ? no)"]
    met = {"point": 0, "significant": 0, "shown": 0}
    for (cluster, load), d in cells.items():
        waits = collections.defaultdict(list, base_waits[(cluster, load)])
        lost_point = lost_sig = False
        shown = True
        parts = []
        wait_ref = wait_reference(d, wait_against)
        for m in METRICS:
            worst = None
            for (pol, mm), v in d.items():
                if mm != m or (m == "wait256" and pol not in wait_ref):
                    continue
                mean = statistics.mean(v) if all(abs(x) < float("inf") for x in v) else (
                    float("inf") if float("inf") in v else -float("inf"))
                half = half_width(v) if abs(mean) < float("inf") else 0.0
                # the 256+ wait: verdict()'s relative tolerance, on the baseline's mean wait
                t = 0.005 * statistics.mean(waits[pol] or [0]) if m == "wait256" else tol[m]
                shown = shown and mean + half <= t
                if worst is None or mean > worst[1]:
                    worst = (pol, mean, half, t)
            pol, mean, half, t = worst
            lost_point = lost_point or mean > t
            lost_sig = lost_sig or mean - half > t
            parts.append(f"{m} {ABBREV[pol]} {mean:+.1f}+-{half:.1f}")
        met["point"] += not lost_point
        met["significant"] += not lost_sig
        met["shown"] += shown
        n = len(next(iter(d.values())))
        flags = f"{'L' if lost_point else '-'}/{'L' if lost_sig else '-'} {'-' if shown else '?'}"
        out.append(f"{cluster:18s} {load:>4s}  {n:5d}  {'  '.join(parts):78s} {flags}")
    out.append(f"(cluster, load) cells with no metric lost to any baseline: {met['point']} of "
               f"{len(cells)} by the mean, {met['significant']} of {len(cells)} beyond the 95 % "
               f"interval; shown to match or beat every baseline on every metric (the interval's "
               f"worse end within the tolerance): {met['shown']} of {len(cells)}")
    return "\n".join(out)


def cmd_compare(a):
    clusters = names(a.clusters)
    totals = {}
    lines = []
    diffs = {}  # (cluster, load) -> per-seed differences, for --spread
    loaded = list(load_runs(a, clusters))
    bar_met = 0
    for cluster, load, name, c, base in loaded:
        cells = []
        d = diffs.setdefault((cluster, load), {"mean": [], "p95": [], "goodput": [], "verdict": []})
        verdicts = run_verdicts(c, base)
        bar_met += "L" not in verdicts.values()
        for m in METRICS:
            who = best_of(base, m)
            v = verdicts[m]
            if m == "goodput":
                d[m].append(100 * (c[m] - base[who][m]))
            elif m != "wait256":
                d[m].append(100 * (c[m] / base[who][m] - 1) if base[who][m] > 0 else 0.0)
                if m == "mean":
                    d["verdict"].append(v)
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
    if a.paired:
        print(paired_table(loaded, a.wait_against))
    print(f"{'cluster':18s} {'metric':8s} W/T/L (- = no 256+ gang waited)")
    for (cluster, m), t in sorted(totals.items()):
        print(f"{cluster:18s} {m:8s} {t['W']}/{t['T']}/{t['L']}" + (f" ({t['-']} -)" if t["-"] else ""))
    print(f"the whole bar (no metric lost to the best baseline): {bar_met} of {len(loaded)} runs")


def change(m, x, y):
    """How far metric m moved from x to y: relative (in %) for JCTs and waits, points for
    goodput; None where the 256+ wait is zero or forever on either side."""
    if m == "goodput":
        return 100 * abs(y - x)
    if m == "wait256" and not (0 < x < float("inf") and 0 < y < float("inf")):
        return None
    return 100 * abs(y / x - 1) if x > 0 else None


def cmd_stability(a):
    """Two matrices of the same runs, all seven policies in each, the second perturbed (e.g.
    `run --load-factor 1.001`): how far each policy's figures move (the floor below which a
    difference between policies says nothing about them), and how many of the candidate's
    verdicts against the best baseline and whole-bar runs survive the perturbation."""
    moved = {}  # (policy, cluster, metric) -> [change]
    flips = {m: [0, 0] for m in METRICS}  # metric -> [runs, verdict differs]
    bar = {"a": 0, "b": 0, "both": 0}
    n = 0
    for cluster, _, load, s in runs(a.seeds.split(","), names(a.clusters), names(a.loads)):
        name = f"{cluster}-L{load}-s{s}"
        ra, rb = matrix_rows(a.a, name), matrix_rows(a.b, name)
        pols = [p for p in [a.cand_policy] + BASELINES if p in ra and p in rb]
        for p in pols:
            for m in METRICS:
                c = change(m, ra[p][m], rb[p][m])
                if c is not None:
                    moved.setdefault((p, cluster, m), []).append(c)
        if a.cand_policy not in pols or not any(p in pols for p in BASELINES):
            continue
        n += 1
        va = run_verdicts(ra[a.cand_policy], {p: ra[p] for p in BASELINES if p in pols})
        vb = run_verdicts(rb[a.cand_policy], {p: rb[p] for p in BASELINES if p in pols})
        for m in METRICS:
            flips[m][0] += 1
            flips[m][1] += va[m] != vb[m]
        ma, mb = "L" not in va.values(), "L" not in vb.values()
        bar["a"] += ma
        bar["b"] += mb
        bar["both"] += ma and mb
    print("how far each policy's figures moved (median / largest over the runs; mean and p95 JCT"
          " and 256+ wait in %, goodput in points)")
    print(f"{'policy':24s} {'cluster':18s} {'runs':>4s}  {'mean JCT':>12s}  {'p95 JCT':>12s}"
          f"  {'goodput':>12s}  {'256+ wait':>12s}")
    for p in [a.cand_policy] + BASELINES:
        for cluster, _, _ in MATRIX:
            cells = []
            for m in METRICS:
                v = moved.get((p, cluster, m))
                cells.append(f"{statistics.median(v):5.2f} / {max(v):5.1f}" if v else f"{'-':>13s}")
            if any(moved.get((p, cluster, m)) for m in METRICS):
                runs_n = len(moved.get((p, cluster, "mean"), []))
                print(f"{p:24s} {cluster:18s} {runs_n:4d}  " + "  ".join(cells))
    print(f"{a.cand_policy}'s verdict against the best baseline changed in:")
    for m in METRICS:
        print(f"  {m:8s} {flips[m][1]} of {flips[m][0]} runs")
    print(f"the whole bar met: {bar['a']} of {n} runs in the first matrix, {bar['b']} in the "
          f"second, {bar['both']} in both")


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


def read_bound(path):
    """{promise (seconds, inf for none): (mean JCT bound, p95 JCT bound)} from a run's bound.csv."""
    got = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            got[float(r["max_wait_256_s"])] = (float(r["mean_jct_lower_bound_s"]),
                                               float(r["p95_jct_lower_bound_s"]))
    return got


def cmd_gap(a):
    policies = None
    table = collections.OrderedDict()
    for cluster, gen, load, s in runs(a.seeds.split(","), names(a.clusters), names(a.loads)):
        name = f"{cluster}-L{load}-s{s}"
        bp = [os.path.join(d, name, "bound.csv") for d in a.dir]
        bp = [p for p in bp if os.path.exists(p)]
        rows = matrix_rows(a.dir, name)
        if not bp or not rows:
            continue
        bound = read_bound(bp[-1])
        free, p95 = bound.get(float("inf"), (0, 0))
        if free <= 0 or p95 <= 0:
            continue
        promised = [v[0] for k, v in bound.items() if k != float("inf")]
        policies = policies or list(rows)
        best_mean = min((m["mean"] for p, m in rows.items() if p in BASELINES), default=None)
        table.setdefault((cluster, load), []).append(
            (free, promised[0] if promised else None, {p: m["mean"] / free for p, m in rows.items()},
             best_mean, p95, {p: m["p95"] / p95 for p, m in rows.items()}))
    if not table:
        raise SystemExit("no run with a bound.csv: run with `-- --lower-bound-max-wait-256 best`")
    geo = lambda xs: math.exp(statistics.mean(math.log(x) for x in xs)) if xs else float("nan")
    head = "".join(f" {ABBREV.get(p, p)[:9]:>9s}" for p in policies)
    print("mean JCT over its lower bound (geometric mean over the seeds)")
    print(f"{'cluster':16s} {'load':>5s} {'runs':>4s} {'bound h':>8s} {'256+ promise':>12s}{head}"
          f"  best baseline mean below the promise bound (bar unreachable)")
    for (cluster, load), v in table.items():
        free_h = statistics.mean(x[0] for x in v) / 3600
        with_promise = [x[1] / x[0] for x in v if x[1] is not None]
        cells = "".join(f" {geo([x[2][p] for x in v if p in x[2]]):9.3f}" for p in policies)
        unreachable = sum(1 for x in v if x[1] is not None and x[3] is not None and x[3] < x[1])
        promise = f"{geo(with_promise):12.3f}" if with_promise else f"{'-':>12s}"
        print(f"{cluster:16s} {load:>5s} {len(v):4d} {free_h:8.2f} {promise}{cells}"
              f"  {unreachable} of {len(with_promise)}")
    print("\np95 JCT over its lower bound (the p95 of the durations)")
    print(f"{'cluster':16s} {'load':>5s} {'runs':>4s} {'bound h':>8s}{head}")
    for (cluster, load), v in table.items():
        p95_h = statistics.mean(x[4] for x in v) / 3600
        cells = "".join(f" {geo([x[5][p] for x in v if p in x[5]]):9.3f}" for p in policies)
        print(f"{cluster:16s} {load:>5s} {len(v):4d} {p95_h:8.2f}{cells}")


def parse_row(spec):
    """LABEL=DIR[:POLICY] of `tradeoff --row`: POLICY defaults to topogang; DIR `base` takes the
    runs from the --base folders (a baseline's own row)."""
    label, sep, rest = spec.partition("=")
    if not sep or not label or not rest:
        raise SystemExit(f"--row {spec!r}: expected LABEL=DIR or LABEL=DIR:POLICY")
    d, sep, pol = rest.rpartition(":")
    if not sep or "/" in pol:  # no policy given (a ':' inside the path is not one)
        d, pol = rest, ""
    if d != "base" and not os.path.isdir(d):
        raise SystemExit(f"--row {spec!r}: no folder {d!r}")
    return label, d, pol or "topogang"


def parse_cells(spec):
    """CLUSTER:LOAD,... of --cells as (cluster, load) pairs."""
    cells = []
    for c in spec.split(","):
        cluster, sep, load = c.partition(":")
        if not sep or not cluster or not load:
            raise SystemExit(f"--cells {c!r}: expected CLUSTER:LOAD, e.g. meta-16k:1")
        cells.append((cluster, load))
    return cells


def print_table_head(first, cells):
    """The head of a markdown table with a column per (cluster, load) cell."""
    print(f"| {first} | " + " | ".join(f"`{c}` {l}\u00d7" for c, l in cells) + " |")
    print("| --- |" + " --- |" * len(cells))


def tradeoff_figure(v, unit, dec, interval):
    """The mean of v as the doc's tables write it: signed, a typographic minus, no "-0.0", and
    with --interval its 95 % half-width."""
    m = statistics.mean(v)
    if math.isnan(m):  # 256+ gangs that never started, in both directions
        return "n/a"
    text = f"{m:+.{dec}f}" if abs(m) < float("inf") else ("+inf" if m > 0 else "-inf")
    if text.lstrip("+-").strip("0.") == "":
        text = f"+{0:.{dec}f}"
    if interval and abs(m) < float("inf"):
        text += f" \u00b1 {half_width(v):.{dec}f}"
    return text.replace("-", "\u2212") + unit


def cmd_tradeoff(a):
    """One markdown row per --row and one column per cell: the mean over the seeds of the paired
    difference of mean and p95 JCT against --jct-baseline (%) and of the longest 256+ wait against
    --wait-baseline (hours). Two baselines that each lead on some metric are the two ends of a
    trade-off; a row meets the bar in a cell only where all three are at or below zero."""
    cells = parse_cells(a.cells)
    seeds = a.seeds.split(",")
    rows = [parse_row(spec) for spec in a.row]
    print_table_head("variant", cells)
    for label, d, pol in rows:
        out = []
        for cluster, load in cells:
            dm, dp, dw = [], [], []
            for s in seeds:
                name = f"{cluster}-L{load}-s{s}"
                base = matrix_rows(a.base, name)
                cand = base if d == "base" else matrix_rows([d], name)
                c, k, w = cand.get(pol), base.get(a.jct_baseline), base.get(a.wait_baseline)
                if c is None or k is None or w is None or k["mean"] <= 0 or k["p95"] <= 0:
                    continue  # a baseline of no JCT gives no ratio: the seed is left out
                dm.append(paired_diff("mean", c, k))
                dp.append(paired_diff("p95", c, k))
                dw.append(paired_diff("wait256", c, w))
            if not dm:
                out.append("-")
                continue
            f = lambda v, unit, dec: tradeoff_figure(v, unit, dec, a.interval)
            n = "" if len(dm) == len(seeds) else f" ({len(dm)} seed{'' if len(dm) == 1 else 's'})"
            out.append(f"{f(dm, ' %', 1)} / {f(dp, ' %', 1)} / {f(dw, ' h', 2)}{n}")
        print(f"| {label} | " + " | ".join(out) + " |")


def gang_waits(path, min_gpus):
    """The waits in seconds of the gangs of min_gpus+ GPUs in a jobs-POLICY.csv, sorted; inf for
    one that never started (its start_s is negative)."""
    out = []
    with open(path) as f:
        for r in csv.DictReader(f):
            if int(r["gpus"]) >= min_gpus:
                start, arrival = float(r["start_s"]), float(r["arrival_s"])
                out.append(float("inf") if start < 0 else start - arrival)
    return sorted(out)


def wait_figures(w):
    """Mean, p95 (nearest rank) and longest of the waits w in hours, and how many exceed an
    hour; None without gangs."""
    if not w:
        return None
    p95 = w[math.ceil(0.95 * len(w)) - 1]
    return (sum(w) / len(w) / 3600, p95 / 3600, w[-1] / 3600, sum(1 for x in w if x > 3600))


def cmd_waits(a):
    """One markdown row per --row and one column per cell: over the seeds, the mean of each run's
    mean / p95 / longest wait (hours) of the gangs of --min-gpus+ GPUs, and of how many of them
    waited over an hour. The bar reads the longest wait alone; this shows whether a policy keeps
    it short by lengthening the others, or serves those gangs better throughout. A seed counts
    only where every row has its jobs file."""
    cells = parse_cells(a.cells)
    rows = [parse_row(spec) for spec in a.row]

    def jobs_file(d, pol, name):
        found = run_files(a.base if d == "base" else [d], name, f"jobs-{pol}.csv")
        return found[-1] if found else None

    per_cell = []
    for cluster, load in cells:
        got = {label: [] for label, _, _ in rows}
        for s in a.seeds.split(","):
            name = f"{cluster}-L{load}-s{s}"
            paths = [jobs_file(d, pol, name) for _, d, pol in rows]
            if None in paths:
                continue
            figs = [wait_figures(gang_waits(p, a.min_gpus)) for p in paths]
            if None in figs:
                continue  # no gang that large in this run
            for (label, _, _), f in zip(rows, figs):
                got[label].append(f)
        per_cell.append(got)
    print(f"mean / p95 / longest wait of the gangs of {a.min_gpus}+ GPUs, and how many waited "
          "over an hour (means over the seeds)")
    print()
    print_table_head("policy", cells)
    for label, _, _ in rows:
        out = []
        for got in per_cell:
            v = got[label]
            if not v:
                out.append("-")
                continue
            m = [statistics.mean(x[i] for x in v) for i in range(4)]
            text = " / ".join("inf" if x == float("inf") else f"{x:.2f}" for x in m[:3])
            out.append(f"{text} h, {m[3]:.1f} over 1 h ({len(v)} seed{'' if len(v) == 1 else 's'})")
        print(f"| {label} | " + " | ".join(out) + " |")


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
    r.add_argument("--load-factor", type=float, default=1.0,
                   help="offer load x this factor (the same jobs, arrivals that much denser), "
                        "kept under the matrix's load name: a perturbed matrix for `stability`")
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
    c.add_argument("--paired", action="store_true",
                   help="also read the bar per (cluster, load) against each baseline: the mean "
                        "paired difference over the seeds with its 95 %% interval")
    c.add_argument("--wait-against", default="",
                   help="with --paired: read the 256+ wait against this baseline only, or "
                        "`best-mean` for the one with the lowest mean JCT in each cell (default: "
                        "against every baseline)")
    c.add_argument("--dominance", action="store_true",
                   help="also count, per baseline, the runs where the candidate is at least as good on every metric")
    st = sub.add_parser("stability", help="how far each policy and the candidate's verdicts move "
                                          "between a matrix and a perturbed copy of it")
    st.add_argument("--a", action="append", required=True, help="the matrix (repeatable: a later "
                    "dir overrides an earlier one)")
    st.add_argument("--b", action="append", required=True, help="the perturbed matrix")
    st.add_argument("--cand-policy", default="topogang")
    st.add_argument("--seeds", default="1,2,3")
    st.add_argument("--clusters", default="")
    st.add_argument("--loads", default="", help="only these loads of the matrix")
    k = sub.add_parser("classload", help="offered load of the large gangs alone, per cluster and load")
    k.add_argument("--traces", required=True, help="where the generated traces are kept")
    k.add_argument("--min-gpus", type=int, default=256)
    k.add_argument("--seeds", default="1,2,3")
    k.add_argument("--clusters", default="")
    g = sub.add_parser("gap", help="each policy's mean JCT over the lower bound no scheduler beats")
    g.add_argument("--dir", action="append", required=True, help="runs made with `-- "
                   "--lower-bound-max-wait-256 best` (repeatable: a later dir overrides)")
    g.add_argument("--seeds", default="1,2,3")
    g.add_argument("--clusters", default="")
    g.add_argument("--loads", default="", help="only these loads of the matrix")
    t = sub.add_parser("tradeoff", help="variants between two baselines that each lead on some "
                       "metric: mean and p95 JCT against one, the 256+ wait against the other")
    t.add_argument("--base", action="append", required=True)
    t.add_argument("--row", action="append", required=True,
                   help="LABEL=DIR or LABEL=DIR:POLICY (default topogang), a row each, in order; "
                        "DIR `base` for a baseline's own runs")
    t.add_argument("--cells", required=True, help="CLUSTER:LOAD,... e.g. meta-16k:1,hyperscale-100k:2")
    t.add_argument("--seeds", default="1,2,3")
    t.add_argument("--jct-baseline", default="kueue-tas-best")
    t.add_argument("--wait-baseline", default="slurm-tree-best")
    t.add_argument("--interval", action="store_true", help="each mean with its 95 %% half-width")
    w = sub.add_parser("waits", help="the whole spread of the large gangs' waits, not the "
                       "longest alone: mean, p95, longest and how many over an hour, per policy")
    w.add_argument("--base", action="append", default=[])
    w.add_argument("--row", action="append", required=True,
                   help="LABEL=DIR or LABEL=DIR:POLICY (default topogang), a row each, in order; "
                        "DIR `base` for a baseline's own runs")
    w.add_argument("--cells", required=True, help="CLUSTER:LOAD,... e.g. meta-16k:1,hyperscale-100k:2")
    w.add_argument("--seeds", default="1,2,3")
    w.add_argument("--min-gpus", type=int, default=256)
    a = ap.parse_args(argv)
    if a.cmd == "waits":
        cmd_waits(a)
        return
    if a.cmd == "tradeoff":
        cmd_tradeoff(a)
        return
    if a.cmd == "gap":
        cmd_gap(a)
        return
    if a.cmd == "run":
        cmd_run(a, extra)
    elif a.cmd == "classload":
        cmd_classload(a)
    elif a.cmd == "stability":
        cmd_stability(a)
    else:
        cmd_compare(a)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly
    main()
