#include "extender/extender_service.h"

#include "absl/strings/str_cat.h"
#include "k8s/gang_conventions.h"
#include "k8s/pod_info.h"

namespace topogang {
namespace {

// Every input node failed with one reason.
FilterVerdicts FailAll(const ExtenderArgs& args, std::string reason, bool unresolvable) {
  FilterVerdicts v;
  uint16_t k = v.AddReason(std::move(reason), unresolvable);
  // kube-scheduler never repeats a node; if a client does, it gets each answer once per mention.
  v.verdict.assign(args.names.size(), k);
  return v;
}

FilterVerdicts ErrorResult(const ExtenderArgs& args, const std::string& error) {
  FilterVerdicts v = FailAll(args, "topogang: " + error, /*unresolvable=*/true);
  v.error = error;
  return v;
}

}  // namespace

ExtenderFilterResult ExtenderService::Filter(const ExtenderArgs& args) {
  return ToFilterResult(args, FilterNodes(args));
}

FilterVerdicts ExtenderService::FilterNodes(const ExtenderArgs& args) {
  auto pod = ParsePod(args.pod, ledger_.options().gpu_resource);
  if (!pod.ok()) return ErrorResult(args, std::string(pod.status().message()));
  FilterDecision d = ledger_.Filter(*pod, args.names);
  switch (d.kind) {
    case FilterDecision::Kind::kPassAll: {
      FilterVerdicts v;
      v.verdict.assign(args.names.size(), 0);
      return v;
    }
    case FilterDecision::Kind::kFailAll: {
      FilterVerdicts v = FailAll(args, std::move(d.reason), d.unresolvable);
      v.error = std::move(d.error);
      return v;
    }
    case FilterDecision::Kind::kSteer:
      break;
  }
  // One pass over the offered names: steer to the reserved node (the others are left out of the
  // reply, see FilterVerdicts::kOmit), or, when it was not offered, fail every node with that
  // reason instead (that message is what the pod's FailedScheduling event shows).
  FilterVerdicts v;
  v.verdict.resize(args.names.size());
  bool offered = false;
  for (size_t i = 0; i < args.names.size(); ++i) {
    const bool match = args.names[i] == d.node;
    offered |= match;
    v.verdict[i] = match ? 0 : FilterVerdicts::kOmit;
  }
  if (offered) return v;
  return FailAll(args,
                 absl::StrCat("topogang: this pod's GPUs are reserved on node ", d.node,
                              ", which kube-scheduler did not offer"),
                 /*unresolvable=*/true);
}

absl::StatusOr<std::vector<HostPriority>> ExtenderService::Prioritize(const ExtenderArgs& args) {
  auto pod = ParsePod(args.pod, ledger_.options().gpu_resource);
  if (!pod.ok()) return pod.status();
  const std::string node = ledger_.ReservedNode(*pod);
  std::vector<HostPriority> out;
  out.reserve(args.names.size());
  for (const std::string& n : args.names) {
    out.push_back({n, !node.empty() && n == node ? 10 : 0});
  }
  return out;
}

void ExtenderService::Bind(const ExtenderBindingArgs& args,
                           std::function<void(const ExtenderBindingResult&)> done) {
  ledger_.Bind(
      PodBinding{args.pod_name, args.pod_namespace, args.pod_uid, args.node},
      [done = std::move(done)](const std::string& error) { done(ExtenderBindingResult{error}); });
}

ExtenderPreemptionResult ExtenderService::Preempt(const ExtenderPreemptionArgs& args) {
  ExtenderPreemptionResult out;
  if (auto preemptor = ParsePod(args.pod, ledger_.options().gpu_resource); preemptor.ok()) {
    std::vector<std::string> candidates;
    candidates.reserve(args.victims.size());
    for (const auto& [node, v] : args.victims) candidates.push_back(node);
    // A gang member: topogang preempts whole gangs for the whole gang; kube-scheduler, which
    // would evict for this one pod on one node, gets no candidates.
    if (ledger_.PreemptForGang(*preemptor, candidates)) return out;
  }
  for (const auto& [node, victims] : args.victims) {
    bool protect = false;
    for (size_t i = 0; i < victims.uids.size() && !protect; ++i) {
      protect = ledger_.InMultiPodGang(victims.uids[i]);
      if (!protect && i < victims.pods.size()) {
        // Full form: the victim's own labels say whether it belongs to a gang.
        auto info = ParsePod(victims.pods[i], ledger_.options().gpu_resource);
        if (info.ok()) {
          GangResolution m = ledger_.Resolve(*info);
          protect = m.kind == GangResolution::Kind::kGang && m.gang.size > 1;
        }
      }
    }
    if (protect) continue;  // evicting one member would break a running gang: drop the node
    Victims v;
    v.uids = victims.uids;
    v.num_pdb_violations = victims.num_pdb_violations;
    out.victims[node] = std::move(v);
  }
  return out;
}

}  // namespace topogang
