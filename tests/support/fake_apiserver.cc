// Over 500 lines: one fake API server (nodes, pods, watches, bindings, events, leases) that
// tests reach over HTTP; its handlers share one lock and one history of changes.
#include "tests/support/fake_apiserver.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <stdexcept>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/support/fake_apiserver_watch.h"
#include "tests/support/loopback_http_server.h"

namespace topogang::testing {

Json MakeNode(const std::string& name, int gpus, const std::map<std::string, std::string>& labels) {
  Json n = Json::parse(R"({"metadata":{"creationTimestamp":"2026-11-22T12:23:58Z"},"spec":{},
    "status":{"capacity":{"cpu":"192","memory":"2063554392Ki"},"allocatable":{"cpu":"191450m"},
    "conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}],
    "daemonEndpoints":{"kubeletEndpoint":{"Port":10250}}}})");
  n["metadata"]["name"] = name;
  n["metadata"]["labels"] = labels;
  n["metadata"]["labels"]["kubernetes.io/hostname"] = name;
  n["status"]["capacity"]["nvidia.com/gpu"] = std::to_string(gpus);
  n["status"]["allocatable"]["nvidia.com/gpu"] = std::to_string(gpus);
  return n;
}

namespace {

// A client that hung up meanwhile is no error here.
void ReplyJson(const std::shared_ptr<HttpExchange>& req, int code, const Json& body) {
  req->Reply(code, DumpJson(body));
}

Json StatusJson(int code, const std::string& reason, const std::string& msg) {
  return Json{{"kind", "Status"},
              {"apiVersion", "v1"},
              {"metadata", Json::object()},
              {"status", code < 300 ? "Success" : "Failure"},
              {"message", msg},
              {"reason", reason},
              {"code", code}};
}

// A query parameter's value, or "" when absent.
std::string QueryValue(const std::map<std::string, std::string>& query, const std::string& key) {
  auto it = query.find(key);
  return it == query.end() ? "" : it->second;
}

bool IsWatch(const std::map<std::string, std::string>& query) {
  const std::string w = QueryValue(query, "watch");
  return w == "1" || w == "true";
}

std::string PodKey(const Json& pod) {
  return pod["metadata"].value("namespace", "default") + "/" +
         pod["metadata"]["name"].get<std::string>();
}

}  // namespace

FakeApiServer::FakeApiServer()
    : server_(std::make_unique<LoopbackHttpServer>(
          [this](std::shared_ptr<HttpExchange> ex) { Handle(ex); })) {
  url_ = server_->url();
  // A hunt across every suite: each fake times its watches out at this scale (README, "Watches the
  // API server ends").
  if (const char* s = std::getenv("TOPOGANG_FAKE_WATCH_TIMEOUT_SCALE")) {
    double scale = 0;
    if (absl::SimpleAtod(s, &scale) && scale > 0) {
      SetWatchTimeouts(scale);
    } else {
      std::cerr << "FakeApiServer: TOPOGANG_FAKE_WATCH_TIMEOUT_SCALE=" << s
                << " is not a positive number; watches do not time out\n";
    }
  }
}

FakeApiServer::~FakeApiServer() {
  StopWatchTimeouts();
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutting_down_ = true;  // no new watch: nothing would close it
    ReleaseHungLocked();
    for (auto& w : watches_) w->Close();
    watches_.clear();
  }
  // Lagged closes are still due: run them (and the writes before them) first.
  if (watch_lag_) watch_lag_->Drain(watch_lag_duration_ + absl::Seconds(5));
  server_->Stop();
}

void FakeApiServer::Emit(const std::string& kind, const std::string& type, const Json& obj) {
  history_.push_back({rv_, kind, type, obj});
  std::string line = DumpJson(Json{{"type", type}, {"object", obj}}) + "\n";
  for (auto& w : watches_) {
    if (w->kind == kind) w->Write(line);
  }
  cv_.notify_all();
}

void FakeApiServer::PutNode(Json node) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string name = node["metadata"]["name"];
  node["metadata"]["resourceVersion"] = std::to_string(++rv_);
  bool existed = nodes_.count(name) > 0;
  nodes_[name] = node;
  Emit("nodes", existed ? "MODIFIED" : "ADDED", node);
}

void FakeApiServer::DeleteNode(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return;
  Json n = it->second;
  nodes_.erase(it);
  n["metadata"]["resourceVersion"] = std::to_string(++rv_);
  Emit("nodes", "DELETED", n);
}

void FakeApiServer::PutPod(Json pod) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!pod["metadata"].contains("namespace")) pod["metadata"]["namespace"] = "default";
  std::string key = PodKey(pod);
  pod["metadata"]["resourceVersion"] = std::to_string(++rv_);
  bool existed = pods_.count(key) > 0;
  pods_[key] = pod;
  Emit("pods", existed ? "MODIFIED" : "ADDED", pod);
}

void FakeApiServer::DeletePod(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) return;
  Json p = it->second;
  pods_.erase(it);
  p["metadata"]["resourceVersion"] = std::to_string(++rv_);
  Emit("pods", "DELETED", p);
}

Json FakeApiServer::GetPod(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(ns + "/" + name);
  return it == pods_.end() ? Json() : it->second;
}

std::vector<Json> FakeApiServer::Pods() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Json> out;
  out.reserve(pods_.size());
  for (const auto& [key, pod] : pods_) out.push_back(pod);
  return out;
}

Json FakeApiServer::GetNode(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(name);
  return it == nodes_.end() ? Json() : it->second;
}

int FakeApiServer::pod_status_patches() {
  std::lock_guard<std::mutex> lock(mu_);
  return pod_status_patches_;
}

// The part of a strategic merge patch a pod's status takes from kube-scheduler: status.conditions
// merge by "type" (the list's patchMergeKey), "$..." directives are dropped, every other status
// field is replaced, null deletes.
void FakeApiServer::MergePodStatusPatch(Json* pod, const Json& patch) {
  const auto st = patch.find("status");
  if (st == patch.end() || !st->is_object()) return;
  Json& status = (*pod)["status"];
  if (!status.is_object()) status = Json::object();
  for (const auto& [k, v] : st->items()) {
    if (!k.empty() && k[0] == '$') continue;
    if (v.is_null()) {
      status.erase(k);
    } else if (k == "conditions" && v.is_array()) {
      Json& conds = status["conditions"];
      if (!conds.is_array()) conds = Json::array();
      for (const Json& c : v) {
        if (!c.is_object() || !c.contains("type")) continue;
        auto same = std::find_if(conds.begin(), conds.end(), [&](const Json& o) {
          return o.is_object() && o.value("type", Json()) == c["type"];
        });
        if (same == conds.end()) {
          conds.push_back(c);
        } else {
          for (const auto& [ck, cv] : c.items()) (*same)[ck] = cv;
        }
      }
    } else {
      status[k] = v;
    }
  }
}

int FakeApiServer::node_patches() {
  std::lock_guard<std::mutex> lock(mu_);
  return node_patches_;
}

void FakeApiServer::SendBookmark() {
  std::lock_guard<std::mutex> lock(mu_);
  ++rv_;
  for (auto& w : watches_) {
    Json obj = {{"kind", w->kind == "nodes" ? "Node" : "Pod"},
                {"apiVersion", "v1"},
                {"metadata", {{"resourceVersion", std::to_string(rv_)}}}};
    w->Write(DumpJson(Json{{"type", "BOOKMARK"}, {"object", obj}}) + "\n");
  }
}

void FakeApiServer::Compact() {
  std::lock_guard<std::mutex> lock(mu_);
  compacted_rv_ = rv_;
  history_.clear();
  Json err = StatusJson(410, "Expired", "too old resource version");
  for (auto& w : watches_) {
    w->Write(DumpJson(Json{{"type", "ERROR"}, {"object", err}}) + "\n");
    w->Close();
  }
  watches_.clear();
}

void FakeApiServer::SetWatchLag(const std::string& user_agent_prefix, absl::Duration lag,
                                absl::Duration per_event) {
  std::lock_guard<std::mutex> lock(mu_);
  // One per server, kept until it goes: watches opened earlier keep a pointer to it.
  if (watch_lag_ && (lag != watch_lag_duration_ || per_event != watch_lag_per_event_)) {
    throw std::logic_error("FakeApiServer::SetWatchLag: the lag is set once per server");
  }
  if (!watch_lag_) {
    watch_lag_duration_ = lag;
    watch_lag_per_event_ = per_event;
    watch_lag_ = std::make_unique<LaggedDelivery>(lag, per_event);
  }
  watch_lag_agent_ = user_agent_prefix;
}

uint64_t FakeApiServer::LaggedWatchWrites() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watch_lag_ ? watch_lag_->posted() : 0;
}

void FakeApiServer::DropWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& w : watches_) {
    w->Write(R"({"type":"MODIFIED","object":{"metadata":{"na)");  // cut mid-event
    w->Close();
  }
  watches_.clear();
}

int FakeApiServer::lists(const std::string& kind) {
  std::lock_guard<std::mutex> lock(mu_);
  return lists_[kind];
}
int FakeApiServer::watches(const std::string& kind) {
  std::lock_guard<std::mutex> lock(mu_);
  return watch_count_[kind];
}
int FakeApiServer::open_watches() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(watches_.size());
}
std::vector<Json> FakeApiServer::bindings() {
  std::lock_guard<std::mutex> lock(mu_);
  return bindings_;
}
std::vector<Json> FakeApiServer::events() {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

bool FakeApiServer::WaitFor(const std::function<bool()>& pred, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(10));  // woken early by any change
  }
  return true;
}

namespace {

std::string LeaseKey(const std::string& ns, const std::string& name) { return ns + "/" + name; }

// obj[a][b] when it is a string, else "" (never throws on odd bodies).
std::string StrAt(const Json& obj, const char* a, const char* b) {
  if (!obj.is_object() || !obj.contains(a) || !obj[a].is_object() || !obj[a].contains(b)) return "";
  const Json& v = obj[a][b];
  return v.is_string() ? v.get<std::string>() : "";
}

std::string LeaseConflict(const std::string& name) {
  return "Operation cannot be fulfilled on leases.coordination.k8s.io \"" + name +
         "\": the object has been modified; please apply your changes to the latest version and "
         "try again";
}

}  // namespace

Json FakeApiServer::GetLease(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(LeaseKey(ns, name));
  return it == leases_.end() || !it->second.raw.empty() ? Json() : it->second.obj;
}

void FakeApiServer::SetLease(Json lease) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string ns = lease["metadata"].value("namespace", "default");
  lease["metadata"]["namespace"] = ns;
  lease["metadata"]["resourceVersion"] = std::to_string(++rv_);
  leases_[LeaseKey(ns, lease["metadata"]["name"].get<std::string>())] = {lease, ""};
  cv_.notify_all();
}

void FakeApiServer::SetLeaseRaw(const std::string& ns, const std::string& name,
                                const std::string& body) {
  std::lock_guard<std::mutex> lock(mu_);
  leases_[LeaseKey(ns, name)] = {Json(), body};
  cv_.notify_all();
}

void FakeApiServer::SetLeaseOutage(Outage mode, const std::string& bearer_token) {
  std::lock_guard<std::mutex> lock(mu_);
  lease_outage_ = mode;
  outage_token_ = bearer_token;
  if (mode != Outage::kHang) ReleaseHungLocked();
}

void FakeApiServer::ReleaseHungLocked() {
  for (auto& h : hung_) {
    ReplyJson(h, 503, StatusJson(503, "ServiceUnavailable", "the server is shutting down"));
  }
  hung_.clear();
}

void FakeApiServer::ThrottleBindings(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  bindings_to_throttle_ = n;
}

int FakeApiServer::throttled_bindings() {
  std::lock_guard<std::mutex> lock(mu_);
  return throttled_bindings_;
}

void FakeApiServer::SetBindingHook(
    std::function<void(const std::string& ns, const std::string& name)> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  binding_hook_ = std::move(hook);
}

void FakeApiServer::SetListHook(std::function<void(const std::string& kind)> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  list_hook_ = std::move(hook);
}

void FakeApiServer::SetLeaseHook(std::function<void(const std::string&)> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  lease_hook_ = std::move(hook);
}

int FakeApiServer::lease_requests(const std::string& method) {
  std::lock_guard<std::mutex> lock(mu_);
  return lease_requests_[method];
}

std::vector<std::string> FakeApiServer::lease_holders() {
  std::lock_guard<std::mutex> lock(mu_);
  return lease_holders_;
}

// A watch from `resource_version` on: history replayed, then live events (Emit); 410 when the
// version was compacted away. Called with mu_ held through `lock`.
void FakeApiServer::ServeWatchLocked(const std::shared_ptr<HttpExchange>& req,
                                     const std::string& kind,
                                     const std::map<std::string, std::string>& query,
                                     std::unique_lock<std::mutex>& lock) {
  const std::string resource_version = QueryValue(query, "resourceVersion");
  ++watch_count_[kind];
  int64_t from = 0;
  if (!resource_version.empty()) (void)absl::SimpleAtoi(resource_version, &from);
  if (from < compacted_rv_) {
    lock.unlock();
    return ReplyJson(req, 410, StatusJson(410, "Expired", "too old resource version"));
  }
  if (shutting_down_) {
    lock.unlock();
    return ReplyJson(req, 503, StatusJson(503, "ServiceUnavailable", "shutting down"));
  }
  auto w = std::make_shared<Watch>();
  w->kind = kind;
  if (watch_lag_ && !req->request().Header("User-Agent").empty() &&
      absl::StartsWith(req->request().Header("User-Agent"), watch_lag_agent_)) {
    w->lag = watch_lag_.get();
  }
  w->stream = req->Stream(200);
  for (const Change& c : history_) {
    if (c.kind == kind && c.rv > from) {
      w->Write(DumpJson(Json{{"type", c.type}, {"object", c.obj}}) + "\n");
    }
  }
  w->deadline = WatchDeadlineLocked(QueryValue(query, "timeoutSeconds"));
  watches_.push_back(w);
  cv_.notify_all();
  if (w->deadline != absl::InfiniteFuture()) reaper_cv_.notify_all();
}

// /apis/coordination.k8s.io/v1/namespaces/{ns}/leases[/{name}]
void FakeApiServer::HandleLease(const std::shared_ptr<HttpExchange>& req,
                                const std::vector<std::string>& parts,
                                const std::string& request_body) {
  const std::string method = req->request().method;
  const std::string ns = parts[4];
  std::function<void(const std::string&)> hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hook = lease_hook_;
  }
  if (hook) hook(method);
  std::string body;
  if (method == "POST" || method == "PUT") body = request_body;
  std::lock_guard<std::mutex> lock(mu_);
  ++lease_requests_[method];
  cv_.notify_all();
  if (lease_outage_ != Outage::kNone) {
    const std::string auth = req->request().Header("Authorization");
    if (outage_token_.empty() || auth == "Bearer " + outage_token_) {
      if (lease_outage_ == Outage::kHang) {
        hung_.push_back(req);
        return;
      }
      return ReplyJson(req, 503, StatusJson(503, "ServiceUnavailable", "etcd is unavailable"));
    }
  }
  auto bad = [&](const std::string& msg) {
    return ReplyJson(req, 400, StatusJson(400, "BadRequest", msg));
  };
  if (parts.size() == 6 && method == "POST") {
    Json obj = Json::parse(body, nullptr, false);
    const std::string name = StrAt(obj, "metadata", "name");
    if (name.empty()) return bad("Lease: metadata.name required");
    const std::string key = LeaseKey(ns, name);
    if (leases_.count(key)) {
      return ReplyJson(req, 409,
                       StatusJson(409, "AlreadyExists",
                                  "leases.coordination.k8s.io \"" + name + "\" already exists"));
    }
    obj["metadata"]["namespace"] = ns;
    obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
    obj["metadata"]["uid"] = "lease-uid-" + std::to_string(rv_);
    leases_[key] = {obj, ""};
    lease_holders_.push_back(StrAt(obj, "spec", "holderIdentity"));
    return ReplyJson(req, 201, obj);
  }
  if (parts.size() != 7) return bad("unsupported lease request");
  const std::string name = parts[6];
  const std::string key = LeaseKey(ns, name);
  auto it = leases_.find(key);
  if (it == leases_.end()) {
    return ReplyJson(
        req, 404,
        StatusJson(404, "NotFound", "leases.coordination.k8s.io \"" + name + "\" not found"));
  }
  if (method == "GET") {
    if (!it->second.raw.empty()) {
      return req->Reply(200, it->second.raw);
    }
    return ReplyJson(req, 200, it->second.obj);
  }
  if (method == "PUT") {
    Json obj = Json::parse(body, nullptr, false);
    if (StrAt(obj, "metadata", "name") != name) {
      return bad("Lease: metadata.name must match the URL");
    }
    if (!it->second.raw.empty())
      return ReplyJson(req, 409, StatusJson(409, "Conflict", LeaseConflict(name)));
    const std::string rv = StrAt(obj, "metadata", "resourceVersion");
    if (!rv.empty() && rv != StrAt(it->second.obj, "metadata", "resourceVersion")) {
      return ReplyJson(req, 409, StatusJson(409, "Conflict", LeaseConflict(name)));
    }
    obj["metadata"]["namespace"] = ns;
    obj["metadata"]["uid"] = StrAt(it->second.obj, "metadata", "uid");
    obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
    it->second.obj = obj;
    lease_holders_.push_back(StrAt(obj, "spec", "holderIdentity"));
    return ReplyJson(req, 200, obj);
  }
  ReplyJson(req, 405, StatusJson(405, "MethodNotAllowed", "method not allowed"));
}

void FakeApiServer::ServeResource(const std::string& group, const std::string& version,
                                  const std::string& resource) {
  std::lock_guard<std::mutex> lock(mu_);
  custom_[group + "/" + version + "/" + resource];
}

void FakeApiServer::ForbidResource(const std::string& group, const std::string& resource,
                                   bool forbidden) {
  std::lock_guard<std::mutex> lock(mu_);
  if (forbidden) {
    forbidden_.insert(group + "/" + resource);
  } else {
    forbidden_.erase(group + "/" + resource);
  }
}

void FakeApiServer::PutObject(const std::string& group, const std::string& version,
                              const std::string& resource, Json obj) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string kind = group + "/" + version + "/" + resource;
  if (!obj["metadata"].contains("namespace")) obj["metadata"]["namespace"] = "default";
  obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
  const std::string key = PodKey(obj);
  auto& store = custom_[kind];
  const bool existed = store.count(key) > 0;
  store[key] = obj;
  Emit(kind, existed ? "MODIFIED" : "ADDED", obj);
}

void FakeApiServer::DeleteObject(const std::string& group, const std::string& version,
                                 const std::string& resource, const std::string& ns,
                                 const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string kind = group + "/" + version + "/" + resource;
  auto& store = custom_[kind];
  auto it = store.find(ns + "/" + name);
  if (it == store.end()) return;
  Json obj = it->second;
  store.erase(it);
  obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
  Emit(kind, "DELETED", obj);
}

int FakeApiServer::discovery_requests() {
  std::lock_guard<std::mutex> lock(mu_);
  return discovery_requests_;
}

// /apis/<group>/<version> (discovery) and /apis/<group>/<version>/<resource> (list, watch).
void FakeApiServer::HandleCustom(const std::shared_ptr<HttpExchange>& req,
                                 const std::vector<std::string>& parts) {
  const auto& query = req->request().query;
  const std::string gv = parts[1] + "/" + parts[2];
  std::unique_lock<std::mutex> lock(mu_);
  if (parts.size() == 3) {
    ++discovery_requests_;
    cv_.notify_all();
    Json resources = Json::array();
    for (const auto& [kind, objects] : custom_) {
      if (kind.rfind(gv + "/", 0) == 0) {
        resources.push_back({{"name", kind.substr(gv.size() + 1)}, {"namespaced", true}});
      }
    }
    if (resources.empty()) {
      return ReplyJson(req, 404,
                       StatusJson(404, "NotFound",
                                  "the server could not find the "
                                  "requested resource"));
    }
    return ReplyJson(req, 200,
                     {{"kind", "APIResourceList"}, {"groupVersion", gv}, {"resources", resources}});
  }
  const std::string kind = gv + "/" + parts[3];
  auto store = custom_.find(kind);
  if (store == custom_.end()) {
    return ReplyJson(req, 404,
                     StatusJson(404, "NotFound",
                                "the server could not find the "
                                "requested resource"));
  }
  if (forbidden_.count(parts[1] + "/" + parts[3])) {
    return ReplyJson(req, 403,
                     StatusJson(403, "Forbidden",
                                parts[3] + "." + parts[1] + " is forbidden: User cannot list"));
  }
  if (IsWatch(query)) {
    return ServeWatchLocked(req, kind, query, lock);
  }
  ++lists_[kind];
  Json items = Json::array();
  for (const auto& [k, v] : store->second) items.push_back(v);
  Json list = {{"apiVersion", gv},
               {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
               {"items", items}};
  cv_.notify_all();
  lock.unlock();
  ReplyJson(req, 200, list);
}

void FakeApiServer::Reply(const std::shared_ptr<HttpExchange>& request, int code,
                          const Json& body) {
  ReplyJson(request, code, body);
}

Json FakeApiServer::StatusBody(int code, const std::string& reason, const std::string& message) {
  return StatusJson(code, reason, message);
}

void FakeApiServer::RequireToken(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  required_token_ = token;
}

std::vector<std::string> FakeApiServer::authorizations() {
  std::lock_guard<std::mutex> lock(mu_);
  return authorizations_;
}

void FakeApiServer::Handle(const std::shared_ptr<HttpExchange>& req) {
  const std::string& path = req->request().path;
  const std::string& body = req->request().body;
  const auto& query = req->request().query;
  std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  {
    const std::string auth = req->request().Header("Authorization");
    std::lock_guard<std::mutex> lock(mu_);
    authorizations_.push_back(auth);
    if (!required_token_.empty() && auth != "Bearer " + required_token_) {
      return ReplyJson(req, 401, StatusJson(401, "Unauthorized", "Unauthorized"));
    }
  }
  if (req->request().method == "POST" && parts.size() == 4 && parts[0] == "apis" &&
      parts[2] == "v1" && parts[1] == "authentication.k8s.io" && parts[3] == "tokenreviews") {
    return HandleTokenReview(req, body);
  }
  if (req->request().method == "POST" && parts.size() == 4 && parts[0] == "apis" &&
      parts[2] == "v1" && parts[1] == "authorization.k8s.io" &&
      parts[3] == "subjectaccessreviews") {
    return HandleAccessReview(req, body);
  }
  if (parts.size() >= 6 && parts[0] == "apis" && parts[1] == "coordination.k8s.io" &&
      parts[2] == "v1" && parts[3] == "namespaces" && parts[5] == "leases") {
    return HandleLease(req, parts, body);
  }
  if (req->request().method == "GET" && (parts.size() == 3 || parts.size() == 4) &&
      parts[0] == "apis") {
    return HandleCustom(req, parts);
  }
  // /api/v1/nodes, /api/v1/pods
  if (req->request().method == "GET" && parts.size() == 3 && parts[0] == "api" &&
      (parts[2] == "nodes" || parts[2] == "pods")) {
    const std::string kind = parts[2];
    const bool watch = IsWatch(query);
    if (!watch) {
      std::function<void(const std::string&)> hook;
      {
        std::lock_guard<std::mutex> lock(mu_);
        hook = list_hook_;
      }
      if (hook) hook(kind);
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (watch) return ServeWatchLocked(req, kind, query, lock);
    ++lists_[kind];
    Json items = Json::array();
    for (const auto& [k, v] : kind == "nodes" ? nodes_ : pods_) items.push_back(v);
    Json list = {{"kind", kind == "nodes" ? "NodeList" : "PodList"},
                 {"apiVersion", "v1"},
                 {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                 {"items", items}};
    cv_.notify_all();
    lock.unlock();
    return ReplyJson(req, 200, list);
  }
  // PATCH /api/v1/nodes/{name} (application/merge-patch+json), as topogangd records drains.
  if (req->request().method == "PATCH" && parts.size() == 4 && parts[0] == "api" &&
      parts[2] == "nodes") {
    const std::string type = req->request().Header("Content-Type");
    Json patch = Json::parse(body, nullptr, false);
    if (type.rfind("application/merge-patch+json", 0) != 0 || patch.is_discarded()) {
      return ReplyJson(req, 415, StatusJson(415, "UnsupportedMediaType", "not a merge patch"));
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto it = nodes_.find(parts[3]);
    if (it == nodes_.end()) {
      return ReplyJson(req, 404,
                       StatusJson(404, "NotFound", "nodes \"" + parts[3] + "\" not found"));
    }
    it->second.merge_patch(patch);
    it->second["metadata"]["resourceVersion"] = std::to_string(++rv_);
    ++node_patches_;
    Emit("nodes", "MODIFIED", it->second);
    cv_.notify_all();
    return ReplyJson(req, 200, it->second);
  }
  // /api/v1/namespaces/{ns}/pods/{name}[/binding], /api/v1/namespaces/{ns}/events
  if (parts.size() >= 5 && parts[0] == "api" && parts[2] == "namespaces") {
    const std::string ns = parts[3];
    if (parts[4] == "configmaps") return HandleConfigMap(req, req->request().method, parts, body);
    if (parts[4] == "events" && req->request().method == "POST") {
      Json ev = Json::parse(body, nullptr, false);
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(ev);
      cv_.notify_all();
      return ReplyJson(req, 201, ev);
    }
    if (parts[4] == "pods" && parts.size() >= 6) {
      const std::string key = ns + "/" + parts[5];
      if (parts.size() == 6 && req->request().method == "GET") {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = pods_.find(key);
        if (it == pods_.end()) return ReplyJson(req, 404, StatusJson(404, "NotFound", "not found"));
        return ReplyJson(req, 200, it->second);
      }
      // PATCH .../pods/{name}/status: kube-scheduler's PodScheduled condition
      // (pkg/scheduler/util/utils.go PatchPodStatus: a strategic merge patch of the status).
      if (parts.size() == 7 && parts[6] == "status" && req->request().method == "PATCH") {
        Json patch = Json::parse(body, nullptr, false);
        if (patch.is_discarded() || !patch.is_object()) {
          return ReplyJson(req, 400, StatusJson(400, "BadRequest", "not a JSON object"));
        }
        std::lock_guard<std::mutex> lock(mu_);
        auto it = pods_.find(key);
        if (it == pods_.end()) {
          return ReplyJson(req, 404,
                           StatusJson(404, "NotFound", "pods \"" + parts[5] + "\" not found"));
        }
        MergePodStatusPatch(&it->second, patch);
        it->second["metadata"]["resourceVersion"] = std::to_string(++rv_);
        ++pod_status_patches_;
        Emit("pods", "MODIFIED", it->second);
        cv_.notify_all();
        return ReplyJson(req, 200, it->second);
      }
      if (parts.size() == 7 && parts[6] == "eviction" && req->request().method == "POST") {
        auto dry = query.find("dryRun");
        return HandleEviction(req, ns, parts[5], body, dry != query.end() && dry->second == "All");
      }
      if (parts.size() == 7 && parts[6] == "binding" && req->request().method == "POST") {
        Json b = Json::parse(body, nullptr, false);
        std::function<void(const std::string&, const std::string&)> hook;
        bool throttled = false;
        {
          std::lock_guard<std::mutex> lock(mu_);
          hook = binding_hook_;
          if (bindings_to_throttle_ > 0) {
            --bindings_to_throttle_;
            ++throttled_bindings_;
            throttled = true;
          }
        }
        if (throttled) {
          return req->Reply(429, "Too many requests, please try again later.\n",
                            "text/plain; charset=utf-8", {{"Retry-After", "1"}});
        }
        if (hook) hook(ns, parts[5]);
        std::lock_guard<std::mutex> lock(mu_);
        auto it = pods_.find(key);
        if (it == pods_.end()) {
          return ReplyJson(req, 404,
                           StatusJson(404, "NotFound", "pods \"" + parts[5] + "\" not found"));
        }
        Json& pod = it->second;
        // The binding's metadata.uid is a precondition (pkg/registry/core/pod/storage/storage.go,
        // assignPod: storage.Preconditions{UID}); a mismatch fails in etcd3's checkPreconditions
        // (staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go) as an invalid-object storage
        // error, which the registry answers as 409 Conflict.
        auto Text = [](const Json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); };
        if (b.is_object() && b.contains("metadata") && b["metadata"].contains("uid") &&
            b["metadata"]["uid"] != pod["metadata"]["uid"]) {
          return ReplyJson(
              req, 409,
              StatusJson(409, "Conflict",
                         "Operation cannot be fulfilled on pods/binding \"" + parts[5] +
                             "\": StorageError: invalid object, Code: 4, Key: /registry/pods/" +
                             key +
                             ", ResourceVersion: 0, AdditionalErrorMsg: Precondition "
                             "failed: UID in precondition: " +
                             Text(b["metadata"]["uid"]) +
                             ", UID in object meta: " + Text(pod["metadata"]["uid"])));
        }
        if (pod["spec"].contains("nodeName") &&
            !pod["spec"]["nodeName"].get<std::string>().empty()) {
          return ReplyJson(
              req, 409,
              StatusJson(409, "Conflict",
                         "Operation cannot be fulfilled on pods/binding \"" + parts[5] +
                             "\": pod " + parts[5] + " is already assigned to node \"" +
                             pod["spec"]["nodeName"].get<std::string>() + "\""));
        }
        bindings_.push_back(b);
        pod["spec"]["nodeName"] = b["target"]["name"];
        // The binding's annotations land on the pod (pkg/registry/core/pod/storage/storage.go,
        // setPodHostAndAnnotations).
        if (b.contains("metadata") && b["metadata"].contains("annotations") &&
            b["metadata"]["annotations"].is_object()) {
          for (auto& [k, v] : b["metadata"]["annotations"].items()) {
            pod["metadata"]["annotations"][k] = v;
          }
        }
        pod["metadata"]["resourceVersion"] = std::to_string(++rv_);
        Emit("pods", "MODIFIED", pod);
        return ReplyJson(req, 201, StatusJson(201, "", ""));
      }
    }
  }
  ReplyJson(req, 404,
            StatusJson(404, "NotFound", "the server could not find the requested resource"));
}

}  // namespace topogang::testing
