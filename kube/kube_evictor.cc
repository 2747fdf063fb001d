#include "kube/kube_evictor.h"

#include "absl/strings/str_cat.h"
#include "common/json_util.h"

namespace topogang {

absl::Status KubeEvictor::Evict(const PodBinding& pod, bool dry_run) {
  Json body = {{"apiVersion", "policy/v1"},
               {"kind", "Eviction"},
               {"metadata", {{"name", pod.pod_name}, {"namespace", pod.pod_namespace}}}};
  // Only the pod topogang chose: a replacement with the same name is not a victim.
  if (!pod.pod_uid.empty()) body["deleteOptions"] = {{"preconditions", {{"uid", pod.pod_uid}}}};
  const std::string path =
      absl::StrCat("/api/v1/namespaces/", PathEscape(pod.pod_namespace), "/pods/",
                   PathEscape(pod.pod_name), "/eviction", dry_run ? "?dryRun=All" : "");
  auto r = client_->Post(path, DumpJson(body));
  if (!r.ok()) return r.status();
  if (r->status == 200 || r->status == 201 || r->status == 404 || r->status == 409) {
    return absl::OkStatus();
  }
  std::string msg = r->body.substr(0, 300);
  if (auto j = ParseJson(r->body); j.ok()) {
    if (const Json* m = GoField(*j, "message"); m && m->is_string()) msg = m->get<std::string>();
  }
  if (r->status == 429) return absl::ResourceExhaustedError(msg);
  return absl::UnavailableError(absl::StrCat("HTTP ", r->status, ": ", msg));
}

}  // namespace topogang
