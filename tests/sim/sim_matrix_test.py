#!/usr/bin/env python3
"""scripts/sim_matrix.py compare on hand-made summaries: best of six per metric, the tie
tolerances, a 256+ gang that never started, and the per-baseline dominance count; classload's
arithmetic on a hand-made trace; the whole-bar count, the paired per-baseline reading (and the
cells shown), stability between a matrix and a perturbed copy, run --load-factor (with a stand-in
binary), gap's ratios to the lower bound, tradeoff's paired rows, and the spread of the large
gangs' waits."""
import csv
import io
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "sim_matrix.py")
FIELDS = ["policy", "mean_jct_s", "p95_jct_s", "goodput", "max_wait_256_s", "never_started_256"]
BASELINES = ["kueue-tas", "kueue-tas-best", "slurm-tree", "slurm-tree-best", "volcano-hypernode",
             "volcano-hypernode-best"]


def write(root, run, rows):
    os.makedirs(os.path.join(root, run))
    with open(os.path.join(root, run, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        for r in rows:
            w.writerow(r)


def run_script(cmd, *args, check=False):
    """sim_matrix.py CMD ARGS, its output captured; it may fail unless `check`."""
    return subprocess.run([sys.executable, SCRIPT, cmd, *args], capture_output=True, text=True,
                          check=check)


def compare(base, cand, *extra, seeds="1"):
    return run_script("compare", "--base", base, "--cand", cand, "--clusters", "meta-16k",
                      "--seeds", seeds, *extra, check=True).stdout


class Compare(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.base = os.path.join(self.tmp.name, "base")
        self.cand = os.path.join(self.tmp.name, "cand")
        # Run L0.5: the best mean is kueue-tas-best (100), the best goodput slurm-tree (0.80),
        # the shortest 256+ wait slurm-tree-best (10).
        rows = []
        for b in BASELINES:
            mean = 100 if b == "kueue-tas-best" else 200
            good = 0.80 if b == "slurm-tree" else 0.70
            wait = 10 if b == "slurm-tree-best" else 50
            rows.append([b, mean, 1000, good, wait, 0])
        write(self.base, "meta-16k-L0.5-s1", rows)
        # Run L0.9: every baseline equal.
        write(self.base, "meta-16k-L0.9-s1", [[b, 100, 1000, 0.5, 0, 0] for b in BASELINES])
        # The candidate: L0.5 ties the mean within 0.5 % (100.4), wins p95, loses goodput by
        # 0.2 points, loses the wait (11 > 10 by 10 %). L0.9: a 256+ gang never started.
        write(self.cand, "meta-16k-L0.5-s1", [["topogang", 100.4, 900, 0.798, 11, 0]])
        write(self.cand, "meta-16k-L0.9-s1", [["topogang", 100, 1000, 0.5, 5, 1]])

    def tearDown(self):
        self.tmp.cleanup()

    def totals(self, out):
        got = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "meta-16k" and "/" in parts[2]:
                got[parts[1]] = parts[2]
        return got

    def test_best_of_six_per_metric_with_tolerances(self):
        got = self.totals(compare(self.base, self.cand))
        # mean: L0.5 tie (0.4 %), L0.9 tie; p95: L0.5 win, L0.9 tie; goodput: L0.5 loss
        # (-0.2 pt), L0.9 tie; wait: L0.5 loss, L0.9 loss (never started = forever).
        self.assertEqual(got["mean"], "0/2/0")
        self.assertEqual(got["p95"], "1/1/0")
        self.assertEqual(got["goodput"], "0/1/1")
        self.assertEqual(got["wait256"], "0/0/2")

    def test_whole_bar_counts_runs_with_no_metric_lost(self):
        self.assertIn("the whole bar (no metric lost to the best baseline): 0 of 2 runs",
                      compare(self.base, self.cand))
        # A third run where the candidate ties every baseline on everything meets it.
        write(self.base, "meta-16k-L1-s1", [[b, 100, 1000, 0.5, 0, 0] for b in BASELINES])
        write(self.cand, "meta-16k-L1-s1", [["topogang", 100, 1000, 0.5, 0, 0]])
        self.assertIn("the whole bar (no metric lost to the best baseline): 1 of 3 runs",
                      compare(self.base, self.cand))

    def test_dominance_counts_each_baseline_alone(self):
        out = compare(self.base, self.cand, "--dominance")
        rows = {l.split()[0]: l.split()[1:] for l in out.splitlines()
                if l.split() and l.split()[0].startswith(("kueue", "slurm", "volcano"))}
        # volcano-hypernode on L0.5: candidate better on mean (100.4 vs 200), p95, goodput
        # (0.798 vs 0.70) and wait (11 vs 50): dominated. On L0.9 the candidate's 256+ gang
        # never started: worse on the wait. So 1 of 2, worse on wait256 once.
        self.assertEqual(rows["volcano-hypernode"][:2], ["2", "1"])
        self.assertEqual(rows["volcano-hypernode"][-1], "1")
        # kueue-tas-best: L0.5 the candidate's mean 100.4 ties its 100, goodput wins, wait wins:
        # dominated there; L0.9 lost on the wait.
        self.assertEqual(rows["kueue-tas-best"][:2], ["2", "1"])
        # slurm-tree-best: lost on the wait in both runs.
        self.assertEqual(rows["slurm-tree-best"][:2], ["2", "0"])
        self.assertEqual(rows["slurm-tree-best"][-1], "2")
        # The candidate dominated: on L0.9 every baseline ties it on three metrics and beats it
        # on the wait; on L0.5 it beats each baseline on p95 (900 < 1000), so none dominates it.
        for b in rows:
            self.assertEqual(rows[b][2], "1", b)
        self.assertIn("runs where some baseline dominates the candidate: 1 of 2", out)


class Spread(unittest.TestCase):
    def test_mean_and_confidence_interval_over_seeds(self):
        with tempfile.TemporaryDirectory() as tmp:
            base, cand = os.path.join(tmp, "base"), os.path.join(tmp, "cand")
            # Three seeds at load 1, best baseline mean 100 each time; the candidate's mean is
            # 110, 90, 100 (+10 %, -10 %, 0 %): mean 0, sample sd 10, t(2 df) = 4.303, so the
            # half-width is 4.303 x 10 / sqrt(3) = 24.8. Goodput: +1, +2, +3 points: mean +2,
            # sd 1, half-width 4.303 / sqrt(3) = 2.5.
            for s, (mean, good) in enumerate([(110, 0.51), (90, 0.52), (100, 0.53)], start=1):
                write(base, f"meta-16k-L1-s{s}", [[b, 100, 1000, 0.5, 0, 0] for b in BASELINES])
                write(cand, f"meta-16k-L1-s{s}", [["topogang", mean, 1000, good, 0, 0]])
            out = compare(base, cand, "--spread", seeds="1,2,3")
            row = [l for l in out.splitlines() if l.startswith("meta-16k") and " 1 " in l]
            self.assertEqual(len(row), 1, out)
            self.assertIn("+0.0 +- 24.8 (-10.0 .. +10.0)", row[0])
            self.assertIn("1/1/1", row[0])  # W / T / L on mean JCT
            self.assertIn("+2.0 +- 2.5 (+1.0 .. +3.0)", row[0])


class Ratios(unittest.TestCase):
    def test_geometric_mean_of_candidate_over_best_and_load_filter(self):
        with tempfile.TemporaryDirectory() as tmp:
            base, cand = os.path.join(tmp, "base"), os.path.join(tmp, "cand")
            # Load 1, two seeds. Best baseline: mean 100, p95 1000, goodput 0.5, 256+ wait 10
            # (slurm-tree-best; the others 40). The candidate: mean 200 then 50 (ratios 2 and
            # 0.5: geometric mean 1.000, where the arithmetic one would say 1.25), p95 1000,
            # goodput 0.52 and 0.50 (+1.00 point on average), wait 40 then 0 (a run where the
            # candidate's gang did not wait has no ratio: 4.000 over 1 run).
            for s, (mean, good, wait) in enumerate([(200, 0.52, 40), (50, 0.50, 0)], start=1):
                write(base, f"meta-16k-L1-s{s}",
                      [[b, 100, 1000, 0.5, 10 if b == "slurm-tree-best" else 40, 0]
                       for b in BASELINES])
                write(cand, f"meta-16k-L1-s{s}", [["topogang", mean, 1000, good, wait, 0]])
            # Load 2 (left out by --loads 1): a candidate 10x worse on mean.
            write(base, "meta-16k-L2-s1", [[b, 100, 1000, 0.5, 10, 0] for b in BASELINES])
            write(cand, "meta-16k-L2-s1", [["topogang", 1000, 1000, 0.5, 10, 0]])
            out = compare(base, cand, "--loads", "1", "--ratios", seeds="1,2")
            rows = {tuple(l.split()[:2]): l.split() for l in out.splitlines()
                    if l.startswith(("meta-16k ", "all "))}
            self.assertEqual(rows[("meta-16k", "1")][2:], ["2", "4.000", "(1)", "1.000", "1.000",
                                                           "+1.00"], out)
            self.assertNotIn(("meta-16k", "2"), rows, out)
            self.assertEqual(rows[("all", "2")][1:], ["2", "4.000", "(1)", "1.000", "1.000",
                                                      "+1.00"], out)
            # A candidate's 256+ gang that never started is not left out: the ratio is inf.
            write(cand, "meta-16k-L1-s3", [["topogang", 100, 1000, 0.5, 5, 1]])
            write(base, "meta-16k-L1-s3", [[b, 100, 1000, 0.5, 10, 0] for b in BASELINES])
            out = compare(base, cand, "--loads", "1", "--ratios", seeds="1,2,3")
            row = [l.split() for l in out.splitlines() if l.startswith("meta-16k ")][0]
            self.assertEqual(row[3:5], ["inf", "(2)"], out)


class Paired(unittest.TestCase):
    def test_each_baseline_over_the_seeds_by_the_mean_and_beyond_the_interval(self):
        with tempfile.TemporaryDirectory() as tmp:
            base, cand = os.path.join(tmp, "base"), os.path.join(tmp, "cand")

            def run(load, seed, cand_mean, ktb_mean=100):
                write(base, f"meta-16k-L{load}-s{seed}",
                      [[b, ktb_mean if b == "kueue-tas-best" else 200, 1000, 0.5, 0, 0]
                       for b in BASELINES])
                write(cand, f"meta-16k-L{load}-s{seed}", [["topogang", cand_mean, 1000, 0.5, 0, 0]])

            # Load 1: +10 % then +0 % against kueue-tas-best: mean +5.0, sd 7.07, t(1 df)
            # 12.706: half-width 12.706 x 7.07 / sqrt(2) = 63.5. Lost by the mean (5 > 0.5),
            # not beyond the interval (5 - 63.5 < 0.5).
            run("1", 1, 110)
            run("1", 2, 100)
            # Load 2: the candidate ahead of every baseline in both seeds (-10 %, -5 % against
            # kueue-tas-best, the closest: mean -7.5, sd 3.54, half-width 31.8).
            run("2", 1, 90)
            run("2", 2, 95)
            # Load 3: +10, +11, +12 %: mean 11, sd 1, t(2 df) 4.303: half-width 2.5, lost both ways.
            for s, m in enumerate([110, 111, 112], start=1):
                run("3", s, m)
            # Load 0.5: -10, -11, -12 %: mean -11 +- 2.5, so even the interval's worse end (-8.5) is
            # ahead; p95, goodput and the wait are equal in every seed (difference 0 +- 0, within
            # the tolerance), and the other baselines are further behind: the one cell shown.
            # Loads 1 and 2 are not shown: their worse ends (+68.5, +24.3) are past 0.5.
            for s, m in enumerate([90, 89, 88], start=1):
                run("0.5", s, m)
            out = compare(base, cand, "--paired", seeds="1,2,3")
            rows = {l.split()[1]: l for l in out.splitlines() if l.startswith("meta-16k ")
                    and "worst" not in l and len(l.split()) > 8}
            self.assertIn("mean KTb +5.0+-63.5", rows["1"], out)
            self.assertTrue(rows["1"].endswith("L/- ?"), rows["1"])
            self.assertIn("mean KTb -7.5+-31.8", rows["2"], out)
            self.assertTrue(rows["2"].endswith("-/- ?"), rows["2"])
            self.assertIn("mean KTb +11.0+-2.5", rows["3"], out)
            self.assertTrue(rows["3"].endswith("L/L ?"), rows["3"])
            self.assertIn("mean KTb -11.0+-2.5", rows["0.5"], out)
            self.assertTrue(rows["0.5"].endswith("-/- -"), rows["0.5"])
            self.assertIn("with no metric lost to any baseline: 2 of 4 by the mean, 3 of 4 beyond "
                          "the 95 % interval; shown to match or beat every baseline on every "
                          "metric (the interval's worse end within the tolerance): 1 of 4", out)

    def test_the_wait_against_one_baseline_or_the_one_best_on_mean_jct(self):
        with tempfile.TemporaryDirectory() as tmp:
            base, cand = os.path.join(tmp, "base"), os.path.join(tmp, "cand")
            # Two seeds of one cell: kueue-tas-best has the lowest mean JCT (100 against 200)
            # and a longest 256+ wait of 5 h; slurm-tree-best the shortest wait, 1 h; the rest
            # 9 h. The candidate ties every mean, p95 and goodput and waits 3 h: 2 h behind
            # slurm-tree-best in both seeds (lost beyond the interval: half-width 0), 2 h ahead
            # of kueue-tas-best.
            for seed in (1, 2):
                write(base, f"meta-16k-L1-s{seed}",
                      [[b, 100 if b == "kueue-tas-best" else 200, 1000, 0.5,
                        {"kueue-tas-best": 5, "slurm-tree-best": 1}.get(b, 9) * 3600, 0]
                       for b in BASELINES])
                write(cand, f"meta-16k-L1-s{seed}", [["topogang", 100, 1000, 0.5, 3 * 3600, 0]])

            def row(*extra):
                out = compare(base, cand, "--paired", *extra, seeds="1,2")
                return [l for l in out.splitlines() if l.startswith("meta-16k ") and
                        "wait256" in l][0]

            every = row()
            self.assertIn("wait256 STb +2.0+-0.0", every)
            self.assertTrue(every.endswith("L/L ?"), every)
            for extra in (["--wait-against", "best-mean"], ["--wait-against", "kueue-tas-best"]):
                one = row(*extra)
                self.assertIn("wait256 KTb -2.0+-0.0", one)
                self.assertTrue(one.endswith("-/- -"), one)
            named = row("--wait-against", "volcano-hypernode")
            self.assertIn("wait256 VH -6.0+-0.0", named)
            bad = run_script("compare", "--base", base, "--cand", cand, "--clusters", "meta-16k",
                             "--seeds", "1,2", "--paired", "--wait-against", "no-such-policy")
            self.assertNotEqual(bad.returncode, 0)
            self.assertIn("--wait-against no-such-policy: no such baseline", bad.stderr)


class Stability(unittest.TestCase):
    def test_how_far_figures_and_verdicts_move_under_a_perturbation(self):
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
            # Both seeds: in the first matrix topogang ties kueue-tas-best's mean (100); in the
            # perturbed one kueue-tas-best moves 10 % (110), topogang 20 % (120) and loses.
            for s in (1, 2):
                for root, ktb, tg in ((a, 100, 100), (b, 110, 120)):
                    write(root, f"meta-16k-L1-s{s}",
                          [[p, ktb if p == "kueue-tas-best" else 200, 1000, 0.5, 0, 0]
                           for p in BASELINES] + [["topogang", tg, 1000, 0.5, 0, 0]])
            out = run_script("stability", "--a", a, "--b", b, "--clusters", "meta-16k",
                             "--seeds", "1,2", check=True).stdout
            rows = {l.split()[0]: l.split() for l in out.splitlines() if "meta-16k" in l}
            # runs, then median / largest per metric: mean JCT moved 20 % and 10 %.
            self.assertEqual(rows["topogang"][2:6], ["2", "20.00", "/", "20.0"], out)
            self.assertEqual(rows["kueue-tas-best"][2:6], ["2", "10.00", "/", "10.0"], out)
            self.assertEqual(rows["slurm-tree"][2:9], ["2", "0.00", "/", "0.0", "0.00", "/", "0.0"])
            self.assertIn("mean     2 of 2 runs", out)
            self.assertIn("p95      0 of 2 runs", out)
            self.assertIn("the whole bar met: 2 of 2 runs in the first matrix, 0 in the second, "
                          "0 in both", out)


class RunLoadFactor(unittest.TestCase):
    def test_perturbed_load_under_the_matrix_load_name(self):
        with tempfile.TemporaryDirectory() as tmp:
            # A stand-in for the binary that records the load it was asked for.
            stub = os.path.join(tmp, "topogang")
            with open(stub, "w") as f:
                f.write("#!/usr/bin/env python3\nimport os, sys\na = sys.argv\n"
                        "out = a[a.index('--out') + 1]\nos.makedirs(out)\n"
                        "open(os.path.join(out, 'load'), 'w').write(a[a.index('--load') + 1])\n")
            os.chmod(stub, 0o755)
            env = dict(os.environ, TOPOGANG_BIN=stub)
            for out, extra in (("x", ["--load-factor", "1.5"]), ("y", [])):
                subprocess.run([sys.executable, SCRIPT, "run", "--out", os.path.join(tmp, out),
                                "--policy", "topogang", "--clusters", "meta-16k", "--loads", "2",
                                "--seeds", "1", *extra], env=env, check=True, capture_output=True)
            with open(os.path.join(tmp, "x", "meta-16k-L2-s1", "load")) as f:
                self.assertEqual(f.read(), "3.0")
            with open(os.path.join(tmp, "y", "meta-16k-L2-s1", "load")) as f:
                self.assertEqual(f.read(), "2")  # the matrix's own spelling, unchanged


class ClassLoad(unittest.TestCase):
    """trace_class_load on a hand-made trace (classload's arithmetic, without the binary)."""

    def load_module(self):
        import importlib.util
        spec = importlib.util.spec_from_file_location("sim_matrix", SCRIPT)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    def test_offered_load_and_share_of_the_large_gangs(self):
        mod = self.load_module()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.csv")
            with open(path, "w") as f:
                f.write("# topogang trace: 3 jobs, profile mixed, seed 1, load 1.00 on tiny (16 GPUs)\n"
                        "id,arrival_s,members,gpus_per_member,duration_s,comm_fraction,required_tier,"
                        "preferred_tier,sku,estimate_s,priority,min_members\n"
                        "j0,0,1,8,100,0.1,,,,,,\n"
                        "@fail,20,node-1,600\n"
                        "j1,50,1,1,200,0,,,,,,\n"
                        "j2,100,2,8,50,0.3,,,,,,\n")
            # Window 0..100 s on 16 GPUs: 1,600 GPU-s of capacity. Work: j0 8 x 100 = 800,
            # j1 1 x 200 = 200, j2 16 x 50 = 800; gangs of 16+ GPUs: j2 alone, 800 GPU-s:
            # offered load 800 / 1600 = 0.5, share 800 / 1800 = 0.444.
            load, share = mod.trace_class_load(path, 16)
            self.assertAlmostEqual(load, 0.5)
            self.assertAlmostEqual(share, 800 / 1800)
            # Gangs of 8+ GPUs: j0 and j2, 1,600 GPU-s: load 1.0.
            self.assertAlmostEqual(mod.trace_class_load(path, 8)[0], 1.0)

    def test_a_trace_without_the_cluster_size_is_refused(self):
        mod = self.load_module()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.csv")
            with open(path, "w") as f:
                f.write("id,arrival_s,members,gpus_per_member,duration_s\nj0,0,1,8,100\n")
            with self.assertRaises(SystemExit) as e:
                mod.trace_class_load(path, 16)
            self.assertIn("does not name the cluster's GPUs", str(e.exception))


class Gap(unittest.TestCase):
    """gap: each policy's mean JCT over the run's lower bound, and the runs where the bar's mean
    is below what the best baseline's 256+ promise allows."""

    def test_ratio_to_the_bound_and_unreachable_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            rows = [[b, 200, 1000, 0.5, 10, 0] for b in BASELINES] + [["topogang", 150, 1000, 0.5, 20, 0]]
            # Seed 1: bound 100 s, 120 s under the promise: the best baseline's mean (200) is
            # above it. Seed 2: bound 100 s, 250 s under the promise: above the best mean, so
            # no scheduler meets the bar there.
            for seed, promised in (("1", 120), ("2", 250)):
                run = f"meta-16k-L2-s{seed}"
                write(tmp, run, rows)
                with open(os.path.join(tmp, run, "bound.csv"), "w") as f:
                    f.write("max_wait_256_s,mean_jct_lower_bound_s,p95_jct_lower_bound_s\n"
                            f"inf,100.0,500.0\n10.0,{promised}.0,500.0\n")
            out = run_script("gap", "--dir", tmp, "--clusters", "meta-16k", "--seeds", "1,2",
                             check=True).stdout
            line = [x for x in out.splitlines() if x.startswith("meta-16k")]
            self.assertEqual(len(line), 2, out)
            # p95: 1,000 s over the durations' 500 s for every policy.
            self.assertEqual(line[1].split()[4:], ["2.000"] * 7)
            cols = line[0].split()
            # load, runs, bound in hours, promise ratio (geometric mean of 1.2 and 2.5), then
            # the six baselines at 2.0 and topogang at 1.5, then "1 of 2".
            self.assertEqual(cols[1:4], ["2", "2", "0.03"])
            self.assertAlmostEqual(float(cols[4]), (1.2 * 2.5) ** 0.5, places=3)
            self.assertEqual(cols[5:11], ["2.000"] * 6)
            self.assertEqual(cols[11], "1.500")
            self.assertEqual(cols[12:], ["1", "of", "2"])

    def test_runs_without_a_bound_are_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            write(tmp, "meta-16k-L2-s1", [["topogang", 150, 1000, 0.5, 20, 0]])
            p = run_script("gap", "--dir", tmp, "--clusters", "meta-16k", "--seeds", "1")
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("--lower-bound-max-wait-256 best", p.stderr)


class Tradeoff(unittest.TestCase):
    """tradeoff: per cell, the mean paired difference of mean and p95 JCT against one baseline
    and of the longest 256+ wait against another, a markdown row per variant."""

    def run_tradeoff(self, *args):
        return run_script("tradeoff", *args)

    def test_paired_means_against_two_baselines(self):
        with tempfile.TemporaryDirectory() as tmp:
            base, cand = os.path.join(tmp, "base"), os.path.join(tmp, "cand")
            # kueue-tas-best: mean 100 / 200 s, p95 1,000 s; slurm-tree-best waits 3,600 s.
            for seed, kmean in (("1", 100), ("2", 200)):
                rows = [[b, 400, 2000, 0.5, 36000, 0] for b in BASELINES]
                rows[1] = ["kueue-tas-best", kmean, 1000, 0.5, 36000, 0]
                rows[3] = ["slurm-tree-best", 400, 2000, 0.5, 3600, 0]
                write(base, f"meta-16k-L1-s{seed}", rows)
            # The candidate: +10 % and -10 % mean (mean 0), p95 +5 % both times, waits of 2 h
            # and 4 h (+1 h and +3 h: +2.00 h). Seed 3 has no baselines and is left out.
            write(cand, "meta-16k-L1-s1", [["topogang", 110, 1050, 0.5, 7200, 0]])
            write(cand, "meta-16k-L1-s2", [["topogang", 180, 1050, 0.5, 14400, 0]])
            write(cand, "meta-16k-L1-s3", [["topogang", 1, 1, 0.5, 0, 0]])
            p = self.run_tradeoff("--base", base, "--row", f"cand={cand}", "--row",
                                  "slurm=base:slurm-tree-best", "--cells", "meta-16k:1",
                                  "--seeds", "1,2,3", "--interval")
            self.assertEqual(p.returncode, 0, p.stderr)
            lines = p.stdout.splitlines()
            self.assertEqual(lines[0], "| variant | `meta-16k` 1\u00d7 |")
            # Half-widths: t(1) = 12.706 times the standard deviation over sqrt(2).
            self.assertEqual(lines[2], "| cand | +0.0 \u00b1 127.1 % / +5.0 \u00b1 0.0 % / "
                                       "+2.00 \u00b1 12.71 h (2 seeds) |")
            # slurm-tree-best against kueue-tas-best: +300 % and +100 % mean (+200), p95 +100 %.
            self.assertEqual(lines[3], "| slurm | +200.0 \u00b1 1270.6 % / +100.0 \u00b1 0.0 % / "
                                       "+0.00 \u00b1 0.00 h (2 seeds) |")

    def test_a_gang_that_never_started_and_a_baseline_of_no_jct(self):
        with tempfile.TemporaryDirectory() as tmp:
            base, cand = os.path.join(tmp, "base"), os.path.join(tmp, "cand")
            rows = [[b, 100, 1000, 0.5, 3600, 0] for b in BASELINES]
            write(base, "meta-16k-L1-s1", rows)
            write(base, "meta-16k-L1-s2", [[b, 0, 0, 0.5, 3600, 0] for b in BASELINES])
            # Seed 1: a 256+ gang never started (it waited forever). Seed 2: the baseline's JCT
            # is 0, which gives no ratio: left out, not a division by zero.
            write(cand, "meta-16k-L1-s1", [["topogang", 100, 1000, 0.5, 0, 1]])
            write(cand, "meta-16k-L1-s2", [["topogang", 100, 1000, 0.5, 0, 0]])
            p = self.run_tradeoff("--base", base, "--row", f"c={cand}", "--cells", "meta-16k:1",
                                  "--seeds", "1,2")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.splitlines()[2],
                             "| c | +0.0 % / +0.0 % / +inf h (1 seed) |")

    def test_bad_rows_and_cells_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            for args, msg in ((["--row", "nolabel", "--cells", "meta-16k:1"], "LABEL=DIR"),
                              (["--row", f"x={tmp}/none", "--cells", "meta-16k:1"], "no folder"),
                              (["--row", f"x={tmp}", "--cells", "meta-16k"], "CLUSTER:LOAD")):
                p = self.run_tradeoff("--base", tmp, *args)
                self.assertNotEqual(p.returncode, 0)
                self.assertIn(msg, p.stderr)
                self.assertEqual(p.stdout, "")


def write_jobs(root, run, policy, jobs):
    """A jobs-POLICY.csv of (gpus, arrival_s, start_s) rows; start -1: never started."""
    os.makedirs(os.path.join(root, run), exist_ok=True)
    with open(os.path.join(root, run, f"jobs-{policy}.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "arrival_s", "start_s", "end_s", "gpus"])
        for i, (gpus, arrival, start) in enumerate(jobs):
            w.writerow([f"j{i}", arrival, start, -1 if start < 0 else start + 60, gpus])


class Waits(unittest.TestCase):
    """waits: per cell, the mean over the seeds of each run's mean / p95 / longest wait of the
    large gangs and of how many waited over an hour."""

    def run_waits(self, *args):
        return run_script("waits", *args)

    def test_spread_of_the_large_gangs_waits(self):
        with tempfile.TemporaryDirectory() as tmp:
            base, cand = os.path.join(tmp, "base"), os.path.join(tmp, "cand")
            # The candidate. Seed 1: 256+ waits 0 and 2 h (mean 1 h; p95 by nearest rank, the
            # 2nd of 2: 2 h; longest 2 h; 1 over an hour); the 128-GPU job's 10 h is not counted.
            # Seed 2: 0, 1, 1 and 4 h (mean 1.5 h, p95 = the 4th of 4 = 4 h, longest 4 h; a wait
            # of exactly 1 h is not over it: 1). Means: 1.25 / 3.00 / 3.00 h, 1.0.
            write_jobs(cand, "meta-16k-L1-s1", "topogang",
                       [(256, 100, 100), (512, 0, 7200), (128, 0, 36000)])
            write_jobs(cand, "meta-16k-L1-s2", "topogang",
                       [(256, 0, 0), (256, 0, 3600), (1024, 50, 3650), (2048, 0, 14400)])
            # Seed 3 has no baseline run: left out for every row.
            write_jobs(cand, "meta-16k-L1-s3", "topogang", [(256, 0, 99999)])
            # slurm-tree-best: 0.5 h, then 1.5 h (over an hour once): 1.00 / 1.00 / 1.00 h, 0.5.
            write_jobs(base, "meta-16k-L1-s1", "slurm-tree-best", [(256, 0, 1800)])
            write_jobs(base, "meta-16k-L1-s2", "slurm-tree-best", [(256, 0, 5400)])
            p = self.run_waits("--base", base, "--row", f"c={cand}", "--row",
                               "s=base:slurm-tree-best", "--cells", "meta-16k:1",
                               "--seeds", "1,2,3")
            self.assertEqual(p.returncode, 0, p.stderr)
            lines = p.stdout.splitlines()
            self.assertEqual(lines[2], "| policy | `meta-16k` 1\u00d7 |")
            self.assertEqual(lines[4], "| c | 1.25 / 3.00 / 3.00 h, 1.0 over 1 h (2 seeds) |")
            self.assertEqual(lines[5], "| s | 1.00 / 1.00 / 1.00 h, 0.5 over 1 h (2 seeds) |")

    def test_a_gang_that_never_started_and_a_run_without_large_gangs(self):
        with tempfile.TemporaryDirectory() as tmp:
            cand = os.path.join(tmp, "cand")
            # Seed 1: one 256+ gang never started: it waited forever. Seed 2 has no 256+ gang
            # at all and says nothing about their waits: left out.
            write_jobs(cand, "meta-16k-L1-s1", "topogang", [(256, 0, -1), (256, 0, 0)])
            write_jobs(cand, "meta-16k-L1-s2", "topogang", [(8, 0, 0)])
            p = self.run_waits("--row", f"c={cand}", "--cells", "meta-16k:1", "--seeds", "1,2")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.splitlines()[4],
                             "| c | inf / inf / inf h, 1.0 over 1 h (1 seed) |")

    def test_bad_cells_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            p = self.run_waits("--row", f"x={tmp}", "--cells", "meta-16k")
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("CLUSTER:LOAD", p.stderr)
            self.assertEqual(p.stdout, "")


if __name__ == "__main__":
    unittest.main()
