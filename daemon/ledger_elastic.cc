// Elastic gangs in the daemon (#13): a gang labelled topogang.io/min-members starts with its
// minimum when the whole gang does not fit, in the domain the core picks for growth
// (scheduler/elastic.h), and takes one more member per pod that comes while it runs, inside that
// domain and among the nodes kube-scheduler offered the pod. Growth is offered, not forced: the
// user's controller creates the pods (all of them at once, as a JobSet does, or more later).
#include "absl/strings/str_cat.h"
#include "daemon/gang_ledger.h"
#include "daemon/ledger_util.h"

namespace topogang {

absl::Status GangLedger::StartElasticLocked(GangScheduler& s, const GangSpec& spec, int min_members,
                                            absl::Time now) {
  const std::vector<int> masked = s.MaskNodes(ExcludedFor(spec));
  auto r = elastic_.Start(s, admission_->Effective(s, spec, now), min_members, spec.members, now);
  s.UnmaskNodes(masked);
  return r.status();
}

absl::StatusOr<int> GangLedger::GrowElasticLocked(const std::string& id, Entry& e,
                                                  const PodInfo& pod, const std::string& key,
                                                  const std::vector<std::string>& offered,
                                                  std::vector<GangNotice>* notices) {
  GangSpec full = e.spec;  // what the gang avoids is judged at its full size (slow nodes)
  full.members = e.elastic_max;
  auto avoid = AvoidedNodesLocked(full, pod);
  if (!avoid.ok()) return avoid.status();
  const int slot = static_cast<int>(e.slots.size());
  absl::StatusOr<std::string> node =
      state_.Plan([&](GangScheduler& s) -> absl::StatusOr<std::string> {
        const GangRecord* rec = s.Find(id);
        if (rec == nullptr || static_cast<int>(rec->placement.members.size()) != slot) {
          return absl::FailedPreconditionError("its members in the model and in the ledger differ");
        }
        std::vector<int> hide = NodesNotOffered(s.cluster(), offered);
        for (int n : NodeIndexes(s.cluster(), *avoid)) hide.push_back(n);
        const std::vector<int> masked = s.MaskNodes(hide);
        auto offer = elastic_.GrowthOffer(s, id);
        s.UnmaskNodes(masked);
        if (!offer.ok()) return offer.status();
        if (offer->members.empty()) {
          return absl::ResourceExhaustedError(absl::StrCat(
              "no room for one more member of ", e.spec.gpus_per_member,
              " GPUs among this pod's offered nodes in ", s.cluster().DomainPath(offer->domain),
              ", the domain it started in (it never grows across a wider tier)"));
        }
        const MemberPlacement m = offer->members[0];
        if (absl::Status st = elastic_.Grow(s, id, {m}); !st.ok()) return st;
        return s.cluster().node(m.node).name;
      });
  if (!node.ok()) return node.status();
  Member m;
  m.assigned = true;
  m.key = key;
  m.pod = PodBinding{pod.name, pod.namespace_, pod.uid, *node, pod.scheduler_name};
  e.slots.push_back(std::move(m));
  e.spec.members = static_cast<int>(e.slots.size());
  e.slots.back().pod.annotations = RankAnnotations(slot, e.spec.members);
  by_pod_[key] = {id, slot};
  ForgetWaitingPodLocked(key);
  const std::string msg = absl::StrCat("elastic gang ", id, " grows to ", e.spec.members, " of ",
                                       e.elastic_max, " members: pod ", pod.Key(), " on ", *node);
  state_.Publish({0, {}, "grow", id, *node, msg});
  notices->push_back({"Normal",
                      "GangGrown",
                      id,
                      "topogang: " + msg,
                      {PodBinding{pod.name, pod.namespace_, pod.uid, ""}}});
  return slot;
}

}  // namespace topogang
