#include "scheduler/spares.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "scheduler/planner.h"

namespace topogang {
namespace {

// Usable GPUs of `node` not yet promised in this proposal.
std::vector<int> UsableGpus(const Cluster& c, int node, const std::set<int>& promised) {
  std::vector<int> gpus;
  const NodeInfo& n = c.node(node);
  for (int g = n.gpu_begin; g < n.gpu_begin + n.gpus; ++g) {
    if (c.IsUsable(g) && !promised.count(g)) gpus.push_back(g);
  }
  return gpus;
}

}  // namespace

absl::StatusOr<SparePool> SparePool::Build(const Cluster& c, const SpareOptions& o) {
  SparePool pool;
  pool.level_ = o.tier.empty() ? std::max(0, c.node_level() - 1) : c.LevelByName(o.tier);
  if (pool.level_ < 0 || pool.level_ >= c.node_level()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spares: '", o.tier, "' is not a tier above the nodes"));
  }
  if (o.per_domain < 0) return absl::InvalidArgumentError("spares: per_domain < 0");
  std::set<int> spares;
  for (const std::string& name : o.marked_nodes) {
    int n = c.FindNode(name);
    if (n < 0) return absl::InvalidArgumentError(absl::StrCat("spares: no node '", name, "'"));
    spares.insert(n);
  }
  for (int d = c.LevelBegin(pool.level_); d < c.LevelEnd(pool.level_); ++d) {
    const Domain& dom = c.domain(d);
    int have = static_cast<int>(
        std::distance(spares.lower_bound(dom.node_begin), spares.lower_bound(dom.node_end)));
    for (int n = dom.node_end - 1; n >= dom.node_begin && have < o.per_domain; --n) {
      // Idle and healthy: every GPU free and usable.
      if (spares.count(n) || c.NodeFreeHealthy(n) != c.node(n).gpus) continue;
      spares.insert(n);
      ++have;
    }
  }
  pool.nodes_.assign(spares.begin(), spares.end());
  return pool;
}

bool SparePool::IsSpare(int node) const {
  return std::binary_search(nodes_.begin(), nodes_.end(), node);
}

int SparePool::Available(const Cluster& c, int domain, int gpus) const {
  const Domain& d = c.domain(domain);
  int count = 0;
  for (auto it = std::lower_bound(nodes_.begin(), nodes_.end(), d.node_begin);
       it != nodes_.end() && *it < d.node_end; ++it) {
    count += c.NodeFreeHealthy(*it) >= gpus;
  }
  return count;
}

absl::StatusOr<std::vector<MemberPlacement>> ProposeSpareReplacement(GangScheduler& sched,
                                                                     const SparePool& pool,
                                                                     absl::string_view gang,
                                                                     const std::vector<int>& lost) {
  const GangRecord* rec = sched.Find(gang);
  if (!rec) return absl::NotFoundError(absl::StrCat("no gang '", gang, "'"));
  const Cluster& c = sched.cluster();
  const Placement& p = rec->placement;
  const int g = rec->spec.gpus_per_member;
  if (lost.empty()) return std::vector<MemberPlacement>{};  // nothing to replace
  std::vector<char> is_lost(p.members.size(), 0);
  for (int m : lost) {
    if (m < 0 || m >= static_cast<int>(p.members.size())) {
      return absl::InvalidArgumentError(absl::StrCat("member ", m, " out of range"));
    }
    is_lost[m] = 1;
  }
  std::vector<int> survivors;
  for (size_t m = 0; m < p.members.size(); ++m) {
    if (!is_lost[m] && p.members[m].node >= 0) survivors.push_back(p.members[m].node);
  }
  // The required-tier domain the gang lives in, and the SKU it runs on.
  const int req = rec->spec.required_tier.empty() ? -1 : c.LevelByName(rec->spec.required_tier);
  const int any_node = !survivors.empty() ? survivors[0] : p.members[lost.at(0)].node;
  const int home = req >= 0 && any_node >= 0 ? c.AncestorAt(c.NodeDomain(any_node), req) : -1;
  const int sku = rec->spec.allow_mixed_sku || any_node < 0 ? kAnySku : c.node(any_node).sku;

  std::vector<MemberPlacement> out(lost.size());
  std::vector<int> rest;  // indices into `lost` no spare took
  std::set<int> promised;
  for (size_t i = 0; i < lost.size(); ++i) {
    const int old = p.members[lost[i]].node;
    bool done = false;
    if (old >= 0) {
      const Domain& d = c.domain(c.AncestorAt(c.NodeDomain(old), pool.level()));
      for (auto it = std::lower_bound(pool.nodes().begin(), pool.nodes().end(), d.node_begin);
           !done && it != pool.nodes().end() && *it < d.node_end; ++it) {
        const int n = *it;
        if (n == old || (sku != kAnySku && c.node(n).sku != sku)) continue;
        if (home >= 0 && c.AncestorAt(c.NodeDomain(n), req) != home) continue;
        std::vector<int> gpus = UsableGpus(c, n, promised);
        if (static_cast<int>(gpus.size()) < g) continue;
        gpus.resize(g);
        promised.insert(gpus.begin(), gpus.end());
        out[i] = MemberPlacement{n, std::move(gpus)};
        survivors.push_back(n);  // later members anchor next to it too
        done = true;
      }
    }
    if (!done) rest.push_back(static_cast<int>(i));
  }
  if (rest.empty()) return out;
  // The rest from ordinary capacity: spares hidden, as are the GPUs just promised.
  std::vector<int> hide = pool.nodes();
  std::vector<int> masked = sched.MaskNodes(hide);
  auto near = sched.planner().PlanNear(rec->spec, static_cast<int>(rest.size()), survivors);
  sched.UnmaskNodes(masked);
  if (!near.ok()) return near.status();
  for (size_t k = 0; k < rest.size(); ++k) out[rest[k]] = std::move((*near)[k]);
  return out;
}

}  // namespace topogang
