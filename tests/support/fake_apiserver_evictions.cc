// The fake API server's Eviction subresource, as k8s.io/kubernetes
// pkg/registry/core/pod/storage/eviction.go answers it: 404 for a missing pod, 409 when the
// UID precondition does not match, no budget check for a pod that is not running (terminal or
// never bound), 429 when a matching PodDisruptionBudget allows no more disruptions, 500 when
// several budgets match, else 201 and (unless a dry run) the pod deleted. The pod goes at once,
// as if its kubelet finished terminating it (the fake has no kubelets).
#include "absl/strings/str_cat.h"
#include "tests/support/fake_apiserver.h"

namespace topogang::testing {

void FakeApiServer::AddDisruptionBudget(const std::string& ns,
                                        std::map<std::string, std::string> selector, int allowed) {
  std::lock_guard<std::mutex> lock(mu_);
  budgets_.push_back({ns, std::move(selector), allowed});
}

std::vector<std::string> FakeApiServer::evictions() {
  std::lock_guard<std::mutex> lock(mu_);
  return evictions_;
}

int FakeApiServer::eviction_dry_runs() {
  std::lock_guard<std::mutex> lock(mu_);
  return eviction_dry_runs_;
}

void FakeApiServer::HandleEviction(const std::shared_ptr<HttpExchange>& request,
                                   const std::string& ns, const std::string& name,
                                   const std::string& body, bool dry_run) {
  Json eviction = Json::parse(body, nullptr, false);
  if (!eviction.is_object() || eviction.value("kind", "") != "Eviction") {
    return Reply(request, 400, StatusBody(400, "BadRequest", "not an Eviction"));
  }
  std::unique_lock<std::mutex> lock(mu_);
  auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) {
    return Reply(request, 404,
                 StatusBody(404, "NotFound", absl::StrCat("pods \"", name, "\" not found")));
  }
  Json& pod = it->second;
  const Json uid =
      eviction.contains("deleteOptions") && eviction["deleteOptions"].contains("preconditions")
          ? eviction["deleteOptions"]["preconditions"].value("uid", Json())
          : Json();
  if (uid.is_string() && uid != pod["metadata"].value("uid", "")) {
    return Reply(
        request, 409,
        StatusBody(
            409, "Conflict",
            absl::StrCat("Precondition failed: UID in precondition: ", uid.get<std::string>(),
                         ", UID in object meta: ", pod["metadata"].value("uid", ""))));
  }
  const std::string phase = pod.contains("status") ? pod["status"].value("phase", "") : "";
  const bool bound = pod["spec"].contains("nodeName") && pod["spec"]["nodeName"].is_string() &&
                     !pod["spec"]["nodeName"].get<std::string>().empty();
  // canIgnorePDB: terminal pods, and pods not scheduled yet.
  const bool check_budgets = bound && phase != "Succeeded" && phase != "Failed";
  Budget* matching = nullptr;
  int matches = 0;
  if (check_budgets) {
    const Json labels = pod["metadata"].value("labels", Json::object());
    for (Budget& b : budgets_) {
      if (b.ns != ns) continue;
      bool all = true;
      for (const auto& [k, v] : b.selector) {
        all = all && labels.contains(k) && labels[k] == v;
      }
      if (all) {
        matching = &b;
        ++matches;
      }
    }
  }
  if (matches > 1) {
    return Reply(request, 500,
                 StatusBody(500, "InternalError",
                            "This pod has more than one PodDisruptionBudget, which the eviction "
                            "subresource does not support."));
  }
  if (matching && matching->allowed <= 0) {
    return Reply(request, 429,
                 StatusBody(429, "TooManyRequests",
                            "Cannot evict pod as it would violate the pod's disruption budget."));
  }
  if (dry_run) {
    ++eviction_dry_runs_;
    return Reply(request, 201, StatusBody(201, "", ""));
  }
  if (matching) --matching->allowed;
  evictions_.push_back(ns + "/" + name);
  Json gone = pod;
  pods_.erase(it);
  gone["metadata"]["resourceVersion"] = std::to_string(++rv_);
  Emit("pods", "DELETED", gone);
  lock.unlock();
  Reply(request, 201, StatusBody(201, "", ""));
}

}  // namespace topogang::testing
