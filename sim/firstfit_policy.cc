// gang-firstfit: all-or-nothing but topology-blind, as with kube-scheduler plus a gang plugin
// (scheduler-plugins Coscheduling: `sp:pkg/coscheduling/core/core.go` PreFilter checks the
// quorum and total free resources, Permit releases the gang only when minMember pods are
// assigned) where nothing knows the network. Members go to the first nodes with room, in the
// order the scheduler lists nodes. That order carries no topology (node names and the API
// server's listing do not follow switches), so we use a fixed seeded permutation of the nodes;
// walking our topology-sorted node index instead would be accidentally topology-aware.
// Queue: best-effort FIFO (coscheduling's QueueSort by priority, then creation time; a gang
// that does not fit goes back to the unschedulable queue and the next one is tried).
#include <numeric>

#include "sim/policies.h"
#include "sim/rng.h"

namespace topogang::sim {
namespace {

class FirstFitPolicy : public ClusterGangPolicy {
 public:
  FirstFitPolicy(const Cluster& c, PolicyContext ctx)
      : ClusterGangPolicy(c, std::move(ctx), Queueing::kSkipBlocked) {
    order_.resize(c.num_nodes());
    std::iota(order_.begin(), order_.end(), 0);
    Rng rng(ctx_.seed ^ 0xf1f1);
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.Below(i)]);
  }
  std::string name() const override { return "gang-firstfit"; }

 protected:
  std::optional<std::vector<MemberPlacement>> PlaceSku(int j, int sku) override {
    const GangSpec& s = job(j).gang;
    if (cluster_.MemberCapacity(0, sku, s.gpus_per_member) < s.members) return std::nullopt;
    std::vector<std::pair<int, int>> picks;
    int rem = s.members;
    for (int n : order_) {
      if (sku != kAnySku && cluster_.node(n).sku != sku) continue;
      int k = std::min(rem, cluster_.NodeFreeHealthy(n) / s.gpus_per_member);
      if (k <= 0) continue;
      picks.emplace_back(n, k);
      if ((rem -= k) == 0) break;
    }
    return Materialize(cluster_, picks, s.gpus_per_member);
  }

 private:
  std::vector<int> order_;
};

}  // namespace

std::unique_ptr<Policy> MakeFirstFitPolicy(const Cluster& c, PolicyContext ctx) {
  return std::make_unique<FirstFitPolicy>(c, std::move(ctx));
}

}  // namespace topogang::sim
