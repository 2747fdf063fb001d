// The fake API server's ConfigMaps (/api/v1/namespaces/{ns}/configmaps[/{name}]), with the
// optimistic concurrency of the real one (k8s.io/apiserver pkg/registry/generic/registry
// store.go): GET 404 when absent; POST 201, or 409 AlreadyExists; PUT 404 when absent, 409
// Conflict when metadata.resourceVersion is stale, else 200 with a new resourceVersion.
#include "absl/strings/str_cat.h"
#include "tests/support/fake_apiserver.h"

namespace topogang::testing {
namespace {

std::string NameOf(const Json& obj) {
  if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object()) return "";
  const Json& n = obj["metadata"].value("name", Json());
  return n.is_string() ? n.get<std::string>() : "";
}

std::string VersionOf(const Json& obj) {
  if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object()) return "";
  const Json& v = obj["metadata"].value("resourceVersion", Json());
  return v.is_string() ? v.get<std::string>() : "";
}

}  // namespace

Json FakeApiServer::GetConfigMap(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = configmaps_.find(ns + "/" + name);
  return it == configmaps_.end() ? Json() : it->second;
}

void FakeApiServer::SetConfigMap(Json cm) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string ns = cm["metadata"].value("namespace", "default");
  cm["metadata"]["namespace"] = ns;
  cm["metadata"]["resourceVersion"] = std::to_string(++rv_);
  configmaps_[ns + "/" + NameOf(cm)] = cm;
  cv_.notify_all();
}

void FakeApiServer::SetConfigMapOutage(bool down) {
  std::lock_guard<std::mutex> lock(mu_);
  configmap_outage_ = down;
}

int FakeApiServer::configmap_requests(const std::string& method) {
  std::lock_guard<std::mutex> lock(mu_);
  return configmap_requests_[method];
}

void FakeApiServer::HandleConfigMap(const std::shared_ptr<HttpExchange>& request,
                                    const std::string& method,
                                    const std::vector<std::string>& parts,
                                    const std::string& body) {
  const std::string ns = parts[3];
  std::lock_guard<std::mutex> lock(mu_);
  ++configmap_requests_[method];
  cv_.notify_all();
  if (configmap_outage_) {
    return Reply(request, 503, StatusBody(503, "ServiceUnavailable", "etcd is unavailable"));
  }
  if (parts.size() == 5 && method == "POST") {
    Json obj = Json::parse(body, nullptr, false);
    const std::string name = NameOf(obj);
    if (name.empty()) {
      return Reply(request, 400,
                   StatusBody(400, "BadRequest", "ConfigMap: metadata.name required"));
    }
    if (configmaps_.count(ns + "/" + name)) {
      return Reply(request, 409,
                   StatusBody(409, "AlreadyExists",
                              absl::StrCat("configmaps \"", name, "\" already exists")));
    }
    obj["metadata"]["namespace"] = ns;
    obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
    configmaps_[ns + "/" + name] = obj;
    return Reply(request, 201, obj);
  }
  if (parts.size() != 6) {
    return Reply(request, 400, StatusBody(400, "BadRequest", "unsupported configmap request"));
  }
  const std::string name = parts[5];
  auto it = configmaps_.find(ns + "/" + name);
  if (it == configmaps_.end()) {
    return Reply(request, 404,
                 StatusBody(404, "NotFound", absl::StrCat("configmaps \"", name, "\" not found")));
  }
  if (method == "GET") return Reply(request, 200, it->second);
  if (method == "PUT") {
    Json obj = Json::parse(body, nullptr, false);
    if (NameOf(obj) != name) {
      return Reply(request, 400,
                   StatusBody(400, "BadRequest", "ConfigMap: metadata.name must match the URL"));
    }
    const std::string rv = VersionOf(obj);
    if (!rv.empty() && rv != VersionOf(it->second)) {
      return Reply(request, 409,
                   StatusBody(409, "Conflict",
                              absl::StrCat("Operation cannot be fulfilled on configmaps \"", name,
                                           "\": the object has been modified; please apply your "
                                           "changes to the latest version and try again")));
    }
    obj["metadata"]["namespace"] = ns;
    obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
    it->second = obj;
    return Reply(request, 200, obj);
  }
  Reply(request, 405, StatusBody(405, "MethodNotAllowed", "method not allowed"));
}

}  // namespace topogang::testing
