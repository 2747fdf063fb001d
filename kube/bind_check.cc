#include "kube/bind_check.h"

#include "absl/strings/str_cat.h"

namespace topogang {

absl::StatusOr<BindCheck> CheckBindable(const Json& live, const PodBinding& b) {
  const std::string who = absl::StrCat("pod ", b.pod_namespace, "/", b.pod_name);
  auto refuse = [&](const std::string& why) {
    return absl::FailedPreconditionError(
        absl::StrCat("topogang refuses to bind ", who, " to ", b.node, ": ", why));
  };
  if (!live.is_object()) return refuse("the API server returned no Pod object");
  const Json* meta = GoField(live, "metadata");
  const Json* spec = GoField(live, "spec");
  if (!meta || !meta->is_object() || !spec || !spec->is_object()) {
    return refuse("the API server's Pod has no metadata or spec");
  }
  auto uid = JsonString(*meta, "uid", "Pod.metadata.uid");
  auto node = JsonString(*spec, "nodeName", "Pod.spec.nodeName");
  auto sched = JsonString(*spec, "schedulerName", "Pod.spec.schedulerName");
  for (const auto* s : {&uid, &node, &sched}) {
    if (!s->ok()) return refuse(std::string(s->status().message()));
  }
  if (!b.pod_uid.empty() && *uid != b.pod_uid) {
    // The pod that was filtered is gone (NotFound, as when the name is free): its slot is given
    // back, whether or not topogangd's watch still has a deletion to deliver for it.
    return absl::NotFoundError(absl::StrCat("topogang refuses to bind ", who, " to ", b.node,
                                            ": its UID is ", *uid, ", not ", b.pod_uid,
                                            " (the pod was replaced since it was filtered)"));
  }
  if (!node->empty()) {
    if (*node == b.node) return BindCheck::kAlreadyBoundHere;
    return absl::AlreadyExistsError(absl::StrCat("topogang refuses to bind ", who, " to ", b.node,
                                                 ": it is already assigned to node \"", *node,
                                                 "\""));
  }
  if (const Json* del = GoField(*meta, "deletionTimestamp"); del && !del->is_null()) {
    return refuse("it is being deleted");
  }
  const std::string live_sched = sched->empty() ? "default-scheduler" : *sched;
  if (!b.scheduler_name.empty() && live_sched != b.scheduler_name) {
    return refuse(absl::StrCat("the API server shows it for scheduler \"", live_sched,
                               "\", but it was filtered as \"", b.scheduler_name, "\""));
  }
  return BindCheck::kBind;
}

}  // namespace topogang
