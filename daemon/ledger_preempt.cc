// Topology-aware gang preemption in the daemon (#13): a gang that cannot be placed may evict
// whole gangs of lower priority, chosen by the core (scheduler/preemption.h) so that the GPUs
// they free form the domain the gang needs. kube-scheduler's own preemption works pod by pod and
// node by node, which can never make room for a gang and could evict part of one: topogang marks
// a gang's nodes unresolvable (kube-scheduler then does not preempt for it) and preempts whole
// gangs itself, through the Eviction API (PodDisruptionBudgets honoured, dry-run first), like
// kube-scheduler's DefaultPreemption evicts (pkg/scheduler/framework/preemption/preemption.go,
// prepareCandidate) and nominates (status.nominatedNodeName): the freed nodes are kept from
// gangs of equal or lower priority until the preemptor is placed or the nomination expires.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/gang_ledger.h"
#include "daemon/ledger_util.h"
#include "scheduler/preemption.h"

namespace topogang {

void GangLedger::SetEvictor(Evictor* evictor) {
  std::lock_guard<std::mutex> lock(mu_);
  evictions_ = evictor ? std::make_unique<EvictionQueue>(*evictor) : nullptr;
}

std::vector<int> GangLedger::ExcludedFor(
    const GangSpec& g, const std::map<std::string, std::vector<int>>& by_gang) const {
  std::vector<int> out;
  if (auto it = by_gang.find(g.name); it != by_gang.end()) out = it->second;
  for (const auto& [id, p] : preempting_) {
    if (id != g.name && p.priority >= g.priority) {
      out.insert(out.end(), p.nodes.begin(), p.nodes.end());
    }
  }
  return out;
}

void GangLedger::ExpireNominationsLocked(absl::Time now) {
  for (auto it = preempting_.begin(); it != preempting_.end();) {
    if (it->second.deadline <= now) {
      state_.Publish({0,
                      {},
                      "preempt-expired",
                      it->first,
                      "",
                      "nomination of the preempted gangs' nodes expired"});
      it = preempting_.erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<std::string> GangLedger::PreemptLocked(const GangSpec& spec, const PodInfo& pod,
                                                     const std::vector<std::string>& offered,
                                                     FailList* fails,
                                                     std::vector<GangNotice>* notices) {
  if (!options_.preemption || !evictions_) return std::nullopt;
  // The admission is read under the DaemonState lock, as the queue's passes change it.
  if (!state_.With([&](GangScheduler&) { return admission_->WaitsBehind(spec.name); }).empty()) {
    return std::nullopt;
  }
  const absl::Time now = state_.clock().Now();
  ExpireNominationsLocked(now);
  if (auto it = preempting_.find(spec.name); it != preempting_.end()) {
    const Preemption& p = it->second;
    if (!p.failure.empty() && p.retry_after <= now) {
      preempting_.erase(it);  // blocked last time: plan again below
    } else if (!p.failure.empty()) {
      return absl::StrCat("topogang: preempting for ", spec.name, " is blocked: ", p.failure);
    } else {
      return absl::StrCat("topogang: preempting ", absl::StrJoin(p.victims, ", "), " (priority ",
                          p.victim_priority, ") for ", spec.name, " (priority ", spec.priority,
                          "); waiting for their pods to go");
    }
  }
  // Plan with the nodes kube-scheduler rejected for reasons of its own hidden: a node not offered
  // although it has room for a member (a selector, an untolerated taint, ...) is no use even
  // once its gangs are gone. Nodes without room may be absent only because they are full, which
  // is what preemption changes. Nodes nominated for other preemptors of equal or higher priority
  // are hidden too.
  absl::StatusOr<PreemptionPlan> plan = state_.Plan([&](GangScheduler& s) {  // spares hidden
    const Cluster& c = s.cluster();
    std::vector<int> hidden;
    std::vector<bool> is_offered(c.num_nodes(), false);
    for (const std::string& n : offered) {
      int i = c.FindNode(n);
      if (i >= 0) is_offered[i] = true;
    }
    for (int n = 0; n < c.num_nodes(); ++n) {
      if (!is_offered[n] && c.NodeFreeHealthy(n) >= spec.gpus_per_member) hidden.push_back(n);
    }
    for (const auto& [id, p] : preempting_) {
      if (id != spec.name && p.priority >= spec.priority) {
        hidden.insert(hidden.end(), p.nodes.begin(), p.nodes.end());
      }
    }
    const std::vector<int> masked = s.MaskNodes(hidden);
    // A required tier that has lapsed for the gang no longer confines its victims (as its queue).
    absl::StatusOr<PreemptionPlan> r =
        PlanPreemption(s, admission_->Effective(s, spec, now), options_.preemption_plan);
    s.UnmaskNodes(masked);
    return r;
  });
  if (!plan.ok() || plan->victims.empty()) return std::nullopt;  // the caller's reason stands

  // Every victim must be a gang whose pods topogang knows, none of them already being preempted.
  std::vector<PodBinding> evict;
  std::vector<std::string> pending_victims;
  for (const std::string& v : plan->victims) {
    auto it = gangs_.find(v);
    if (it == gangs_.end()) return std::nullopt;
    const Entry& e = it->second;
    if (e.running || e.binding || e.adopted) {
      for (const Member& m : e.slots) {
        if (m.assigned && (m.bound || m.in_flight)) evict.push_back(m.pod);
      }
    } else {
      pending_victims.push_back(v);  // only a reservation: dropped here, nothing to evict
    }
  }
  Preemption p;
  p.priority = spec.priority;
  p.victims = plan->victims;
  p.victim_priority = plan->max_victim_priority;
  p.deadline = now + options_.nomination_ttl;
  p.pods_left = static_cast<int>(evict.size());
  p.pod = PodBinding{pod.name, pod.namespace_, pod.uid, "", pod.scheduler_name};
  for (const MemberPlacement& m : plan->placement.members) p.nodes.push_back(m.node);
  std::sort(p.nodes.begin(), p.nodes.end());
  p.nodes.erase(std::unique(p.nodes.begin(), p.nodes.end()), p.nodes.end());
  const std::string domain = state_.With([&](GangScheduler& s) {
    return plan->domain >= 0 ? s.cluster().DomainPath(plan->domain) : std::string("the cluster");
  });
  for (const std::string& v : pending_victims) {
    DropEntryLocked(v,
                    absl::StrCat("topogang: the reservation of ", v, " was preempted by ",
                                 spec.name, " (priority ", spec.priority, ")"),
                    /*release_core=*/true, fails);
    state_.With([&](GangScheduler& s) {
      admission_->Forget(s, v);
      return 0;
    });
  }
  const std::string summary = absl::StrCat(
      plan->victims.size(), " gang(s) of priority <= ", plan->max_victim_priority, " (",
      absl::StrJoin(plan->victims, ", "), "; ", plan->victim_gpus, " GPUs) preempted in ", domain,
      " for ", spec.name, " (priority ", spec.priority, ")");
  state_.Publish({0, {}, "preempt", spec.name, "", summary});
  notices->push_back({"Normal",
                      "GangPreempting",
                      spec.name,
                      absl::StrCat("topogang: ", summary),
                      {PodBinding{pod.name, pod.namespace_, pod.uid, "", pod.scheduler_name}}});
  if (!evict.empty()) {
    notices->push_back({"Warning", "GangPreempted", spec.name,
                        absl::StrCat("topogang: ", summary, "; evicting ", evict.size(), " pods"),
                        evict});
    const std::string id = spec.name;
    evictions_->Submit(evict, [this, id](absl::Status st) { EvictionsDone(id, st); });
  }
  preempting_[spec.name] = std::move(p);
  return absl::StrCat("topogang: ", summary, "; waiting for their pods to go");
}

void GangLedger::EvictionsDone(const std::string& id, const absl::Status& st) {
  std::optional<GangNotice> notice;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = preempting_.find(id);
    if (it == preempting_.end()) return;
    if (st.ok()) {
      it->second.pods_left = 0;
      state_.Publish({0, {}, "preempt-evicted", id, "", "every victim pod was evicted"});
      return;
    }
    // Nothing was evicted if a dry run refused (a PodDisruptionBudget); a later refusal leaves
    // some victims evicted, and their GPUs free. Either way the nomination is kept until the
    // retry, so what was freed is not taken by a lower-priority gang meanwhile.
    it->second.failure = std::string(st.message());
    it->second.retry_after = state_.clock().Now() + options_.preemption_retry;
    state_.Publish({0, {}, "preempt-blocked", id, "", it->second.failure});
    notice = GangNotice{
        "Warning",
        "GangPreemptionBlocked",
        id,
        absl::StrCat("topogang: preempting for gang ", id, " is blocked: ", it->second.failure),
        {it->second.pod}};
  }
  if (notice) Notify(*notice);
}

void GangLedger::PreemptorPlacedLocked(const std::string& id) { preempting_.erase(id); }

bool GangLedger::PreemptForGang(const PodInfo& pod, const std::vector<std::string>& candidates) {
  GangResolution r = Resolve(pod);
  if (r.kind != GangResolution::Kind::kGang || r.gang.size <= 1 || pod.gpus <= 0) return false;
  GangSpec spec = r.gang.ToSpec(static_cast<int>(pod.gpus));
  spec.priority = pod.priority;
  SetRuntimeEstimate(pod, &spec);
  FailList fails;
  std::vector<GangNotice> notices;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A gang already reserved or running needs no preemption: its members are steered.
    if (!gangs_.contains(spec.name)) PreemptLocked(spec, pod, candidates, &fails, &notices);
  }
  RunFails(fails);
  for (const GangNotice& n : notices) Notify(n);
  return true;
}

}  // namespace topogang
