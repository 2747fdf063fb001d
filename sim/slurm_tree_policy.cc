// slurm-tree: Slurm's topology/tree plugin, written from `slurm:doc/html/topology.shtml` and
// `slurm:src/plugins/topology/tree/eval_nodes_tree.c` (_eval_nodes_topo,
// _topo_choose_best_switch, _topo_compare_switches, _topo_add_dist; hop distances from
// `tree/switch_record.c`), summary in research/anchors.md §4 and §B6. All nodes have one
// scheduling weight here, so:
//  1. the top switch is the highest-level switch with enough resources (the root);
//  2. leaf switches are chosen one at a time. A candidate beats the current best when it is
//     closer (sum of hop distances to the leaves already chosen) and holds the rest of the job,
//     or is equally close and compares better: when both hold the rest, the one with fewer free
//     resources (tightest fit); when one does, that one; when neither, their parents are
//     compared the same way; finally the one with more free resources;
//  3. the chosen leaf's free nodes are taken in node order until the job is satisfied.
// Resources are counted in members that fit (Slurm counts nodes and CPUs; a member here is a
// task with its GPUs). A required tier is our stand-in for `--switches=1@<forever>` at that
// tier: the top switch becomes the tightest switch of that tier that fits.
// Queue: FIFO by submit time with the backfill scheduler (sched/backfill, the default): the
// first job that cannot start gets a reservation, later jobs start if they do not delay it.
// Tasks are ranked in node order (an allocation is a node bitmap; block distribution).
//
// `slurm-tree` is the idealised version: the trace's tiers as they are, a required tier held
// forever, backfill on every event over the whole queue with exact run times. `slurm-tree-best`
// is Slurm as its users and admins run it:
//  - a gang that fits one node is submitted with `-N1` (all its tasks on one node: the tightest
//    leaf switch with such a node, its first such node);
//  - larger gangs with `--ntasks-per-node` = GPUs per node / GPUs per task: whole nodes only;
//  - a required tier is `--switches=1@T`, which Slurm waits for at most `max_switch_wait`
//    (default 300 s; slurm.conf.5), then places the job anywhere;
//  - the backfill scheduler's defaults: a pass every bf_interval = 30 s (between passes the main
//    scheduler starts jobs in strict order until the first that cannot start), bf_window = 1 day,
//    bf_max_job_test = 500 (`src/plugins/sched/backfill/backfill.c`), planning with the users'
//    time limits (the trace's estimate; without one the partition's MaxTime, 7 days) instead of
//    real run times. Users over-estimate by large factors (Mu'alem & Feitelson, IEEE TPDS 12(6),
//    2001; Tsafrir, Etsion & Feitelson, JSSPP 2005), which the generator's estimates reproduce
//    (sim/generator.h); `--estimates exact` gives Slurm exact limits, its upper bound.
// Slurm reserves resources for every job its backfill pass tests (up to bf_max_job_test); this
// model reserves for the first blocked job only (EASY), which lets more jobs backfill.
#include <algorithm>
#include <set>

#include "sim/network_model.h"
#include "sim/policies.h"

namespace topogang::sim {
namespace {

class SlurmTreePolicy : public ClusterGangPolicy {
 public:
  SlurmTreePolicy(const Cluster& c, PolicyContext ctx, bool best)
      : ClusterGangPolicy(c, std::move(ctx), Queueing::kBackfill, Params(best)),
        best_(best),
        taken_(c.num_domains(), 0) {}
  std::string name() const override { return best_ ? "slurm-tree-best" : "slurm-tree"; }

  static constexpr double kMaxSwitchWaitS = 300;  // SchedulerParameters=max_switch_wait default

  void Enqueue(int j, double now) override {
    GangPolicy::Enqueue(j, now);
    const std::string& req = job(j).gang.required_tier;
    if (best_ && !req.empty() && !IsNvlinkLevel(cluster_, cluster_.LevelByName(req))) {
      switch_deadlines_.insert(FirstEnqueued(j) + kMaxSwitchWaitS);
    }
  }
  std::vector<Started> Schedule(double now) override {
    // A switch requirement given up re-opens the queue (the backfill pass reconsiders it).
    bool expired = false;
    while (!switch_deadlines_.empty() && *switch_deadlines_.begin() <= now) {
      switch_deadlines_.erase(switch_deadlines_.begin());
      expired = true;
    }
    if (expired) Invalidate();
    return GangPolicy::Schedule(now);
  }
  double NextWakeup() const override {
    const double base = GangPolicy::NextWakeup();
    return switch_deadlines_.empty() ? base : std::min(base, *switch_deadlines_.begin());
  }
  static BackfillParams Params(bool best) {
    BackfillParams p;
    if (!best) return p;
    p.interval_s = 30;       // bf_interval
    p.window_s = 1440 * 60;  // bf_window (minutes)
    p.max_job_test = 500;    // bf_max_job_test (DEF_BF_MAX_JOB_TEST)
    p.use_time_limits = true;
    return p;
  }

 protected:
  std::optional<std::vector<MemberPlacement>> PlaceSku(int j, int sku) override {
    const GangSpec& s = job(j).gang;
    const Cluster& c = cluster_;
    const int g = s.gpus_per_member, n = s.members;
    const int leaf_level = std::max(1, c.node_level() - 1);
    if (c.node_level() < 2) return std::nullopt;  // no switches configured
    if (best_ && s.total_gpus() <= c.max_gpus_per_node()) return OneNode(j, sku);
    // --ntasks-per-node: whole nodes of `per_node` tasks (best) or any free GPUs (as annotated).
    per_node_ = best_ ? std::max(1, c.max_gpus_per_node() / g) : 0;
    if (per_node_ > 0 && n % per_node_ != 0) per_node_ = 0;
    sku_ = sku;
    g_ = g;
    int top = 0;
    // A leaf/spine requirement is --switches=1@T (given up after max_switch_wait); an NVLink
    // domain requirement is topology/block's --segment, which is never given up.
    const bool switch_wait_over = best_ && !IsNvlinkLevel(c, c.LevelByName(s.required_tier)) &&
                                  now() - FirstEnqueued(j) >= kMaxSwitchWaitS;
    if (!s.required_tier.empty() && !switch_wait_over) {
      const int req = std::max(1, c.LevelByName(s.required_tier));
      top = -1;
      for (int d = c.LevelBegin(req); d < c.LevelEnd(req); ++d) {
        int k = Cap(d);
        if (k >= n && (top < 0 || k < Cap(top))) top = d;
      }
      if (top < 0) return std::nullopt;
    }
    if (Cap(top) < n) return std::nullopt;
    if (c.domain(top).level >= leaf_level) {
      // Required within one leaf switch (or one node): its free nodes in order.
      std::vector<std::pair<int, int>> picks;
      int rem = n;
      for (int node = c.domain(top).node_begin; node < c.domain(top).node_end && rem > 0; ++node) {
        int k = std::min(rem, NodeMembers(node));
        if (k > 0) picks.emplace_back(node, k), rem -= k;
      }
      return Materialize(c, picks, g);
    }

    // Leaves under the top switch.
    std::vector<int> leaves;
    {
      int lo = c.domain(top).node_begin, hi = c.domain(top).node_end;
      for (int d = c.LevelBegin(leaf_level); d < c.LevelEnd(leaf_level); ++d) {
        if (c.domain(d).node_begin >= lo && c.domain(d).node_end <= hi) leaves.push_back(d);
      }
    }
    std::vector<long> dist(leaves.size(), 0);
    std::vector<char> used(leaves.size(), 0);
    touched_.clear();
    auto cnt = [&](int d) { return Cap(d) - taken_[d]; };
    std::vector<std::pair<int, int>> picks;
    int rem = n;
    while (rem > 0) {
      int best = -1;
      for (size_t i = 0; i < leaves.size(); ++i) {
        if (used[i] || cnt(leaves[i]) <= 0) continue;
        if (best < 0) {
          best = static_cast<int>(i);
          continue;
        }
        bool i_fit = false;
        int tcs = Compare(leaves[i], leaves[best], rem, cnt, &i_fit);
        if ((dist[i] < dist[best] && i_fit) || (dist[i] == dist[best] && tcs > 0)) {
          best = static_cast<int>(i);
        }
      }
      if (best < 0) break;
      used[best] = 1;
      const int leaf = leaves[best];
      for (size_t i = 0; i < leaves.size(); ++i) dist[i] += Hops(leaf, leaves[i]);
      const Domain& ld = c.domain(leaf);
      for (int node = ld.node_begin; node < ld.node_end && rem > 0; ++node) {
        int k = std::min(rem, NodeMembers(node));
        if (k <= 0) continue;
        picks.emplace_back(node, k);
        rem -= k;
        for (int d = c.NodeDomain(node); d >= 0; d = c.domain(d).parent) {
          if (taken_[d] == 0) touched_.push_back(d);
          taken_[d] += k;
        }
      }
    }
    for (int d : touched_) taken_[d] = 0;
    if (rem > 0) return std::nullopt;
    std::sort(picks.begin(), picks.end());  // ranks in node order
    return Materialize(c, picks, g);
  }

 private:
  // Members of the job being placed that fit domain d (whole nodes of per_node_ with
  // --ntasks-per-node), and on one node.
  int Cap(int d) const {
    if (per_node_ == 0) return cluster_.MemberCapacity(d, sku_, g_);
    int nodes = 0;
    for (int k = per_node_ * g_; k <= cluster_.max_gpus_per_node(); ++k) {
      nodes += cluster_.NodesWithFree(d, sku_, k);
    }
    return nodes * per_node_;
  }
  int NodeMembers(int node) const {
    const Cluster& c = cluster_;
    if (sku_ != kAnySku && c.node(node).sku != sku_) return 0;
    const int k = c.NodeFreeHealthy(node) / g_;
    if (per_node_ == 0) return k;
    return k >= per_node_ ? per_node_ : 0;
  }

  // -N1: the leaf switch with a node that holds the whole gang and the fewest such members
  // free (best fit, as _eval_nodes_topo picks leaves), then its first such node.
  std::optional<std::vector<MemberPlacement>> OneNode(int j, int sku) {
    const GangSpec& s = job(j).gang;
    const Cluster& c = cluster_;
    const int need = static_cast<int>(s.total_gpus());
    const int leaf_level = std::max(1, c.node_level() - 1);
    int best_leaf = -1, best_cap = 0;
    for (int d = c.LevelBegin(leaf_level); d < c.LevelEnd(leaf_level); ++d) {
      bool holds = false;
      for (int k = need; k <= c.max_gpus_per_node() && !holds; ++k) {
        holds = c.NodesWithFree(d, sku, k) > 0;
      }
      if (!holds) continue;
      const int cap = c.MemberCapacity(d, sku, s.gpus_per_member);
      if (best_leaf < 0 || cap < best_cap) best_leaf = d, best_cap = cap;
    }
    if (best_leaf < 0) return std::nullopt;
    const Domain& ld = c.domain(best_leaf);
    for (int node = ld.node_begin; node < ld.node_end; ++node) {
      if ((sku != kAnySku && c.node(node).sku != sku) || c.NodeFreeHealthy(node) < need) continue;
      return Materialize(c, {{node, s.members}}, s.gpus_per_member);
    }
    return std::nullopt;
  }

  // Hop distance between two leaf switches: up to their lowest common switch and down again.
  int Hops(int a, int b) const {
    int h = 0;
    while (a != b) {
      a = cluster_.domain(a).parent;
      b = cluster_.domain(b).parent;
      h += 2;
    }
    return h;
  }
  // 1: a is the better fit, -1: b is, 0: no preference (_topo_compare_switches).
  template <typename Cnt>
  int Compare(int a, int b, int rem, const Cnt& cnt, bool* a_fit_out) const {
    while (true) {
      bool a_fit = cnt(a) >= rem, b_fit = cnt(b) >= rem;
      *a_fit_out = a_fit;
      if (a_fit && b_fit) {
        if (cnt(a) != cnt(b)) return cnt(a) < cnt(b) ? 1 : -1;
        break;
      }
      if (a_fit) return 1;
      if (b_fit) return -1;
      int pa = cluster_.domain(a).parent, pb = cluster_.domain(b).parent;
      if (pa >= 0 && pb >= 0 && pa != pb) {
        a = pa;
        b = pb;
        continue;
      }
      break;
    }
    if (cnt(a) != cnt(b)) return cnt(a) > cnt(b) ? 1 : -1;
    return 0;
  }

  bool best_;
  std::multiset<double> switch_deadlines_;  // when waiting jobs' --switches waits run out
  // The job being placed: GPU model, GPUs per task, tasks per node (0: any).
  int sku_ = kAnySku, g_ = 1, per_node_ = 0;
  std::vector<int> taken_;  // members taken per domain during one Place
  std::vector<int> touched_;
};

}  // namespace

std::unique_ptr<Policy> MakeSlurmTreePolicy(const Cluster& c, PolicyContext ctx, bool best) {
  return std::make_unique<SlurmTreePolicy>(c, std::move(ctx), best);
}

}  // namespace topogang::sim
