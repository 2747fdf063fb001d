// default: kube-scheduler with no gang support and its default NodeResourcesFit scoring
// (LeastAllocated: spread), as a cluster runs when nothing knows about gangs or the network
// (`kubernetes:pkg/scheduler/schedule_one.go`, findNodesThatFitPod / numFeasibleNodesToFind /
// selectHost; `pkg/scheduler/framework/plugins/noderesources/least_allocated.go`):
//  - pods are scheduled one at a time in queue order (priority, then creation time);
//  - each pod examines nodes starting where the previous search stopped, until it has found
//    numFeasibleNodesToFind = max(100, N * max(5, 50 - N/125) / 100) feasible nodes (the
//    adaptive percentageOfNodesToScore), and binds to the one with the most free GPUs after
//    placement; ties are broken at random (seeded);
//  - a pod that does not fit waits; the pods of the same job that did fit stay bound and hold
//    their GPUs while the job waits for the rest (a job starts when all its pods run). That
//    held time is the "partial gang" waste. So that two half-placed jobs cannot deadlock, a job
//    that has waited `rendezvous_timeout_s` since its first pod bound gives back its pods and
//    is resubmitted at the end of the queue (what a launcher's rendezvous timeout and the job
//    controller's pod re-creation do).
// Node order carries no topology (seeded permutation), as in firstfit_policy.cc.
#include <algorithm>
#include <map>
#include <numeric>

#include "sim/policies.h"
#include "sim/rng.h"

namespace topogang::sim {
namespace {

class DefaultPolicy : public Policy {
 public:
  DefaultPolicy(const Cluster& c, PolicyContext ctx)
      : ctx_(std::move(ctx)), cluster_(c), rng_(ctx_.seed ^ 0xdefa) {
    const int n = c.num_nodes();
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), 0);
    Rng shuffle(ctx_.seed ^ 0xf1f1);
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[shuffle.Below(i)]);
    const int pct = std::max(5, 50 - n / 125);
    to_find_ = n < 100 ? n : std::max(100, n * pct / 100);
  }
  std::string name() const override { return "default"; }
  const Cluster& cluster() const override { return cluster_; }

  void Enqueue(int j, double) override {
    queue_.emplace(next_seq_++, j);
    fresh_ = true;
  }

  std::vector<Started> Schedule(double now) override {
    std::vector<Started> out;
    // Rendezvous timeouts: give the pods back, resubmit at the end of the queue.
    std::vector<std::pair<long, int>> expired;
    for (const auto& [seq, j] : queue_) {
      auto it = partial_.find(j);
      if (it != partial_.end() && it->second.since + ctx_.rendezvous_timeout_s <= now) {
        expired.emplace_back(seq, j);
      }
    }
    for (auto [seq, j] : expired) {
      ReleasePartial(j);
      queue_.erase(seq);
      queue_.emplace(next_seq_++, j);
      freed_ = true;
    }
    if (!freed_ && !fresh_) return out;
    freed_ = fresh_ = false;
    std::vector<long> done;
    for (const auto& [seq, j] : queue_) {
      const GangSpec& s = job(j).gang;
      auto& part = partial_[j];
      // A gang that names a GPU model carries a nodeSelector for it; one that does not may mix.
      const int sku = s.sku.empty() ? kAnySku : cluster_.FindSku(s.sku);
      while (static_cast<int>(part.members.size()) < s.members) {
        if (cluster_.MemberCapacity(0, sku, s.gpus_per_member) == 0) break;
        int node = PickNode(s.gpus_per_member, sku);
        if (node < 0) break;
        std::vector<MemberPlacement> one;
        TakeMembersOnNode(cluster_, node, s.gpus_per_member, 1, &one);
        (void)cluster_.Allocate(one[0].gpus);
        if (part.members.empty()) part.since = now;
        held_ += s.gpus_per_member;
        part.members.push_back(std::move(one[0]));
      }
      if (static_cast<int>(part.members.size()) == s.members) {
        held_ -= s.total_gpus();
        running_[j] = part.members;
        out.push_back(Started{j, std::move(part.members)});
        partial_.erase(j);
        done.push_back(seq);
      } else if (part.members.empty()) {
        partial_.erase(j);
      }
    }
    for (long seq : done) queue_.erase(seq);
    return out;
  }

  void Finish(int j) override {
    auto it = running_.find(j);
    if (it == running_.end()) return;
    Release(it->second);
    running_.erase(it);
    freed_ = true;
  }

  HealthResult SetNodeDown(int node, bool down, bool fail, double) override {
    HealthResult r;
    cluster_.SetNodeCordoned(node, down);
    freed_ = true;
    if (!down || !fail) return r;
    auto on_node = [&](const std::vector<MemberPlacement>& ms) {
      return std::any_of(ms.begin(), ms.end(), [&](auto& m) { return m.node == node; });
    };
    for (auto it = running_.begin(); it != running_.end();) {
      if (on_node(it->second)) {
        Release(it->second);
        r.killed.push_back(it->first);
        it = running_.erase(it);
      } else {
        ++it;
      }
    }
    std::vector<int> hit;
    for (const auto& [j, p] : partial_) {
      if (on_node(p.members)) hit.push_back(j);
    }
    for (int j : hit) ReleasePartial(j);  // pods evicted; the job stays queued
    return r;
  }

  double NextWakeup() const override {
    double t = kNever;
    for (const auto& [j, p] : partial_) {
      if (!p.members.empty()) t = std::min(t, p.since + ctx_.rendezvous_timeout_s);
    }
    return t;
  }
  long HeldIdleGpus() const override { return held_; }

 private:
  struct Partial {
    std::vector<MemberPlacement> members;
    double since = 0;
  };
  const SimJob& job(int j) const { return (*ctx_.jobs)[j]; }

  void Release(const std::vector<MemberPlacement>& ms) {
    std::vector<int> gpus;
    for (const auto& m : ms) gpus.insert(gpus.end(), m.gpus.begin(), m.gpus.end());
    (void)cluster_.Release(gpus);
  }
  void ReleasePartial(int j) {
    auto it = partial_.find(j);
    if (it == partial_.end()) return;
    for (const auto& m : it->second.members) held_ -= static_cast<long>(m.gpus.size());
    Release(it->second.members);
    partial_.erase(it);
  }

  int PickNode(int g, int sku) {
    const int n = static_cast<int>(order_.size());
    int found = 0, best = -1, best_free = -1, ties = 0, processed = 0;
    for (; processed < n && found < to_find_; ++processed) {
      int node = order_[(start_ + processed) % n];
      int f = cluster_.NodeFreeHealthy(node);
      if (f < g || (sku != kAnySku && cluster_.node(node).sku != sku)) continue;
      ++found;
      if (f > best_free) {
        best = node, best_free = f, ties = 1;
      } else if (f == best_free && rng_.Below(++ties) == 0) {
        best = node;  // reservoir sampling among equal scores, like selectHost
      }
    }
    start_ = (start_ + processed) % n;
    return best;
  }

  PolicyContext ctx_;
  Cluster cluster_;
  Rng rng_;
  std::vector<int> order_;
  int to_find_ = 100;
  int start_ = 0;
  std::map<long, int> queue_;  // seq -> job
  long next_seq_ = 0;
  bool fresh_ = false, freed_ = true;
  std::map<int, Partial> partial_;
  std::map<int, std::vector<MemberPlacement>> running_;
  long held_ = 0;
};

}  // namespace

std::unique_ptr<Policy> MakeDefaultPolicy(const Cluster& c, PolicyContext ctx) {
  return std::make_unique<DefaultPolicy>(c, std::move(ctx));
}

}  // namespace topogang::sim
