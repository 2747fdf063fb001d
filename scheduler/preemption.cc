#include "scheduler/preemption.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "scheduler/gang_skus.h"
#include "scheduler/planner.h"

namespace topogang {
namespace {

// A gang that may be evicted for the pending one.
struct Eligible {
  const GangRecord* rec = nullptr;
  int priority = 0;
  long gpus = 0;                           // every GPU it holds
  std::vector<std::pair<int, int>> nodes;  // (node, healthy GPUs it holds there), by node
};

// One candidate domain and the victims chosen in it (indices into the eligible list, ascending).
struct Candidate {
  int domain = -1;
  int level = 0;
  std::vector<int> victims;
  int max_priority = 0;
  long gpus = 0;
  auto Key() const { return std::make_tuple(max_priority, victims.size(), gpus); }
};

bool Partial(const Cluster& c, int node) {
  const NodeInfo& n = c.node(node);
  int free = 0;
  for (int g = n.gpu_begin; g < n.gpu_begin + n.gpus; ++g) free += c.IsFree(g);
  return free > 0 && free < n.gpus;
}

// Chooses victims inside domains for one SKU filter; see the header for the policy.
class VictimSearch {
 public:
  VictimSearch(const Cluster& c, const GangSpec& gang, const std::vector<Eligible>& eligible,
               int sku)
      : c_(c), gang_(gang), eligible_(eligible), sku_(sku), seen_(eligible.size(), -1) {
    free_.resize(c.num_nodes());
    for (int n = 0; n < c.num_nodes(); ++n) free_[n] = Matches(n) ? c.NodeFreeHealthy(n) : 0;
  }

  bool Matches(int node) const { return sku_ == kAnySku || c_.node(node).sku == sku_; }

  // Members that would fit on each node with every eligible gang gone, summed over node ranges:
  // the bound that lets most domains be skipped without looking at their gangs.
  std::vector<long> PotentialPrefix() const {
    std::vector<int> all = free_;
    for (const Eligible& e : eligible_) {
      for (auto [n, k] : e.nodes) all[n] += Matches(n) ? k : 0;
    }
    std::vector<long> prefix(c_.num_nodes() + 1, 0);
    for (int n = 0; n < c_.num_nodes(); ++n) {
      prefix[n + 1] = prefix[n] + all[n] / gang_.gpus_per_member;
    }
    return prefix;
  }

  // The victims in domain `d`, or false when even every eligible gang is not enough.
  bool Evaluate(int d, Candidate* out) {
    const Domain& dom = c_.domain(d);
    nb_ = dom.node_begin;
    ne_ = dom.node_end;
    std::vector<int> touching;
    for (int n = nb_; n < ne_; ++n) {
      if (!Matches(n)) continue;
      for (int i : by_node_[n]) {
        if (seen_[i] != d) seen_[i] = d, touching.push_back(i);
      }
    }
    // 1. The lowest priority ceiling that makes room (exact: room only grows with the ceiling).
    std::sort(touching.begin(), touching.end(), [&](int a, int b) {
      return std::tie(eligible_[a].priority, a) < std::tie(eligible_[b].priority, b);
    });
    Reset();
    int ceiling = 0;
    bool fits = cap_ >= gang_.members;
    for (size_t i = 0; i < touching.size() && !fits;) {
      ceiling = eligible_[touching[i]].priority;
      for (; i < touching.size() && eligible_[touching[i]].priority == ceiling; ++i) {
        Apply(touching[i], +1);
      }
      fits = cap_ >= gang_.members;
    }
    if (!fits) return false;
    std::vector<int> allowed;
    for (int i : touching) {
      if (eligible_[i].priority <= ceiling) allowed.push_back(i);
    }
    // 2. Greedy: the eviction that frees the most member slots; ties: more GPUs freed in the
    // domain, lower priority, fewer GPUs in all, then the lower index (the name order).
    Reset();
    std::vector<int> chosen;
    std::vector<char> taken(allowed.size(), 0);
    while (cap_ < gang_.members) {
      int pick = -1;
      std::tuple<long, long, int, long, int> best;
      for (size_t j = 0; j < allowed.size(); ++j) {
        if (taken[j]) continue;
        const int i = allowed[j];
        auto key =
            std::make_tuple(-Gain(i), -InDomain(i), eligible_[i].priority, eligible_[i].gpus, i);
        if (pick < 0 || key < best) pick = static_cast<int>(j), best = key;
      }
      if (pick < 0) return false;  // unreachable: every allowed gang makes room
      taken[pick] = 1;
      chosen.push_back(allowed[pick]);
      Apply(allowed[pick], +1);
    }
    // 3. Drop victims the others made unnecessary, the most expensive first.
    std::sort(chosen.begin(), chosen.end(), [&](int a, int b) {
      return std::make_tuple(eligible_[a].priority, eligible_[a].gpus, a) >
             std::make_tuple(eligible_[b].priority, eligible_[b].gpus, b);
    });
    std::vector<int> kept;
    for (int i : chosen) {
      Apply(i, -1);
      if (cap_ >= gang_.members) continue;
      Apply(i, +1);
      kept.push_back(i);
    }
    std::sort(kept.begin(), kept.end());
    out->domain = d;
    out->level = dom.level;
    out->victims = std::move(kept);
    out->max_priority = 0;
    out->gpus = 0;
    for (size_t k = 0; k < out->victims.size(); ++k) {
      const Eligible& e = eligible_[out->victims[k]];
      out->max_priority = k == 0 ? e.priority : std::max(out->max_priority, e.priority);
      out->gpus += e.gpus;
    }
    return true;
  }

  void IndexNodes() {
    by_node_.assign(c_.num_nodes(), {});
    for (size_t i = 0; i < eligible_.size(); ++i) {
      for (auto [n, k] : eligible_[i].nodes) by_node_[n].push_back(static_cast<int>(i));
    }
  }

 private:
  void Reset() {
    rel_.assign(ne_ - nb_, 0);
    cap_ = 0;
    for (int n = nb_; n < ne_; ++n) cap_ += free_[n] / gang_.gpus_per_member;
  }
  // Adds (+1) or removes (-1) gang i's GPUs in the domain to the freed ones.
  void Apply(int i, int sign) {
    const int g = gang_.gpus_per_member;
    for (auto [n, k] : eligible_[i].nodes) {
      if (n < nb_ || n >= ne_ || !Matches(n)) continue;
      int& r = rel_[n - nb_];
      cap_ -= (free_[n] + r) / g;
      r += sign * k;
      cap_ += (free_[n] + r) / g;
    }
  }
  long Gain(int i) const {
    const int g = gang_.gpus_per_member;
    long gain = 0;
    for (auto [n, k] : eligible_[i].nodes) {
      if (n < nb_ || n >= ne_ || !Matches(n)) continue;
      int r = rel_[n - nb_];
      gain += (free_[n] + r + k) / g - (free_[n] + r) / g;
    }
    return gain;
  }
  long InDomain(int i) const {
    long sum = 0;
    for (auto [n, k] : eligible_[i].nodes) {
      if (n >= nb_ && n < ne_ && Matches(n)) sum += k;
    }
    return sum;
  }

  const Cluster& c_;
  const GangSpec& gang_;
  const std::vector<Eligible>& eligible_;
  const int sku_;
  std::vector<int> free_;                  // free healthy GPUs per node of the SKU
  std::vector<std::vector<int>> by_node_;  // eligible gangs per node
  std::vector<int> seen_;                  // last domain a gang was collected for
  int nb_ = 0, ne_ = 0;
  std::vector<int> rel_;  // GPUs freed per node of the current domain
  long cap_ = 0;          // members that fit in the current domain with rel_ freed
};

std::vector<int> VictimGpus(const std::vector<Eligible>& eligible, const Candidate& cand) {
  std::vector<int> gpus;
  for (int i : cand.victims) {
    std::vector<int> g = eligible[i].rec->placement.Gpus();
    gpus.insert(gpus.end(), g.begin(), g.end());
  }
  return gpus;
}

}  // namespace

absl::StatusOr<PreemptionPlan> PlanPreemption(const GangScheduler& sched, const GangSpec& gang,
                                              const PreemptionOptions& options) {
  const Cluster& c = sched.cluster();
  auto now = sched.planner().Plan(gang);
  if (now.ok()) {
    PreemptionPlan plan;
    plan.placement = *std::move(now);
    plan.domain = plan.placement.domain;
    return plan;
  }
  if (now.status().code() != absl::StatusCode::kResourceExhausted) return now.status();
  // Plan validated the tiers and SKU, and the member shape fits a node.
  const int top = gang.required_tier.empty() ? 0 : c.LevelByName(gang.required_tier);
  if (!gang.sku.empty() && c.FindSku(gang.sku) < 0) return now.status();

  std::vector<Eligible> eligible;
  for (const auto& [name, rec] : sched.gangs()) {
    if (rec.spec.priority >= gang.priority || rec.state == GangState::kHeld) continue;
    if (rec.state == GangState::kReserved && !options.preempt_reserved) continue;
    Eligible e{&rec, rec.spec.priority, 0, {}};
    for (const MemberPlacement& m : rec.placement.members) {
      if (m.node < 0) continue;
      int healthy = 0;
      for (int g : m.gpus) healthy += c.IsHealthy(g);
      e.gpus += static_cast<long>(m.gpus.size());
      e.nodes.emplace_back(m.node, healthy);
    }
    std::sort(e.nodes.begin(), e.nodes.end());
    // Members sharing a node: one entry per node.
    std::vector<std::pair<int, int>> merged;
    for (auto [n, k] : e.nodes) {
      if (!merged.empty() && merged.back().first == n) {
        merged.back().second += k;
      } else {
        merged.emplace_back(n, k);
      }
    }
    e.nodes = std::move(merged);
    if (e.gpus > 0) eligible.push_back(std::move(e));
  }

  // Victim sets found, each kept once with its narrowest domain.
  std::map<std::vector<int>, Candidate> found;
  for (int sku : CandidateSkus(c, gang)) {  // an unknown model returned above
    VictimSearch search(c, gang, eligible, sku);
    search.IndexNodes();
    const std::vector<long> pot = search.PotentialPrefix();
    for (int level = c.node_level(); level >= top; --level) {
      if (c.MaxDomainGpus(level) < gang.total_gpus()) continue;
      for (int d = c.LevelBegin(level); d < c.LevelEnd(level); ++d) {
        const Domain& dom = c.domain(d);
        if (pot[dom.node_end] - pot[dom.node_begin] < gang.members) continue;
        Candidate cand;
        if (!search.Evaluate(d, &cand) || cand.victims.empty()) continue;
        auto [it, inserted] = found.emplace(cand.victims, cand);
        if (!inserted && std::make_tuple(-cand.level, cand.domain) <
                             std::make_tuple(-it->second.level, it->second.domain)) {
          it->second = cand;
        }
      }
    }
  }
  const std::string who = absl::StrCat("gang '", gang.name, "' (priority ", gang.priority, ")");
  const std::string where =
      top == 0 ? std::string("the cluster") : absl::StrCat("any ", c.LevelName(top));
  if (found.empty()) {
    return absl::ResourceExhaustedError(
        absl::StrCat(who, ": evicting every gang of lower priority would not make room in ", where,
                     "; ", now.status().message()));
  }
  std::vector<Candidate> ranked;
  for (auto& [victims, cand] : found) ranked.push_back(std::move(cand));
  std::sort(ranked.begin(), ranked.end(), [](const Candidate& a, const Candidate& b) {
    return std::make_tuple(a.Key(), -a.level, a.domain) <
           std::make_tuple(b.Key(), -b.level, b.domain);
  });

  // Re-plan the best candidates on a copy, one group of equal (priority, count, GPUs) at a time.
  Cluster work = c;
  int budget = std::max(1, options.max_verifications);
  std::optional<PreemptionPlan> best;
  for (size_t i = 0; i < ranked.size() && budget > 0 && !best;) {
    const auto key = ranked[i].Key();
    for (; i < ranked.size() && ranked[i].Key() == key && budget > 0; ++i, --budget) {
      const Candidate& cand = ranked[i];
      const std::vector<int> freed = VictimGpus(eligible, cand);
      if (!work.Release(freed).ok()) continue;  // unreachable: victims hold these GPUs
      auto p = Planner(work).Plan(gang);
      if (p.ok()) {
        std::vector<int> touched = p->Nodes();
        for (int g : freed) touched.push_back(c.GpuNode(g));
        std::sort(touched.begin(), touched.end());
        touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
        const std::vector<int> placed = p->Gpus();
        int delta = 0;
        if (work.Allocate(placed).ok()) {
          for (int n : touched) delta += Partial(work, n) - Partial(c, n);
          (void)work.Release(placed);
        }
        if (!best || delta < best->fragmentation_delta) {
          PreemptionPlan plan;
          for (int v : cand.victims) plan.victims.push_back(eligible[v].rec->spec.name);
          std::sort(plan.victims.begin(), plan.victims.end());
          plan.placement = *std::move(p);
          plan.domain = cand.domain;
          plan.max_victim_priority = cand.max_priority;
          plan.victim_gpus = cand.gpus;
          plan.fragmentation_delta = delta;
          best = std::move(plan);
        }
      }
      (void)work.Allocate(freed, /*require_healthy=*/false);
    }
  }
  if (!best) {
    return absl::ResourceExhaustedError(absl::StrCat(
        who, ": no set of lower-priority gangs in ", where, " makes room the planner can use (",
        ranked.size(), " candidate set(s), slices or SKUs may not fit); ", now.status().message()));
  }
  return *std::move(best);
}

absl::Status ApplyPreemption(GangScheduler& sched, const GangSpec& gang, const PreemptionPlan& plan,
                             absl::Time now) {
  if (sched.Find(gang.name)) {
    return absl::AlreadyExistsError(absl::StrCat("gang '", gang.name, "' already holds GPUs"));
  }
  std::vector<GangRecord> saved;
  for (const std::string& v : plan.victims) {
    const GangRecord* rec = sched.Find(v);
    if (!rec) return absl::NotFoundError(absl::StrCat("victim '", v, "' holds no GPUs"));
    if (rec->spec.priority >= gang.priority || rec->state == GangState::kHeld) {
      return absl::FailedPreconditionError(
          absl::StrCat("victim '", v, "' may not be preempted by '", gang.name, "'"));
    }
    saved.push_back(*rec);
  }
  for (const GangRecord& rec : saved) {
    if (absl::Status s = sched.Release(rec.spec.name); !s.ok()) return s;
  }
  absl::Status s = sched.Adopt(gang, plan.placement, GangState::kReserved, now);
  if (!s.ok()) {
    // The cluster changed since the plan: put the victims back as they were.
    for (const GangRecord& rec : saved) {
      (void)sched.Adopt(rec.spec, rec.placement, rec.state, rec.reserved_at, false);
    }
  }
  return s;
}

}  // namespace topogang
