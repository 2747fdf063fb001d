#include "kube/group_objects_watch.h"

#include <iostream>

#include "absl/strings/str_cat.h"

namespace topogang {
namespace {

std::string ObjectKey(const std::string& ns, const std::string& name) { return ns + "/" + name; }

}  // namespace

GroupObjectsWatch::GroupObjectsWatch(std::shared_ptr<KubeClient> client,
                                     GroupObjectsWatchOptions options)
    : client_(std::move(client)), options_(std::move(options)) {}

GroupObjectsWatch::~GroupObjectsWatch() { Stop(); }

void GroupObjectsWatch::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  threads_.emplace_back([this] { DiscoveryLoop(); });
}

void GroupObjectsWatch::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && threads_.empty()) return;
    stop_ = true;
    cv_.notify_all();
  }
  client_->Cancel();
  // The discovery thread (first) is the only one that adds threads; join it before the rest.
  for (size_t i = 0;; ++i) {
    std::thread t;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (i >= threads_.size()) break;
      t = std::move(threads_[i]);
    }
    if (t.joinable()) t.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  threads_.clear();
}

bool GroupObjectsWatch::SleepFor(absl::Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, absl::ToChronoNanoseconds(d), [this] { return stop_ || rediscover_now_; });
  rediscover_now_ = false;
  return !stop_;
}

void GroupObjectsWatch::UnservedLocked(GroupKind kind, const std::string& why) {
  const GroupKindInfo& info = KindInfo(kind);
  KindState& s = kinds_[static_cast<int>(kind)];
  std::cerr << "topogangd: " << info.title << " " << info.group << "/" << s.version
            << " is no longer served (" << why << "); discovering it again" << std::endl;
  s = KindState{};  // not discovered: lookups wait (kMissing) until discovery answers
  rediscover_now_ = true;
  cv_.notify_all();
}

bool GroupObjectsWatch::WaitSynced(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [this] {
    for (const KindState& k : kinds_) {
      if (!k.discovered) return false;
      if (!k.version.empty() && !k.listed && k.forbidden.empty()) return false;
    }
    return true;
  });
}

std::string GroupObjectsWatch::ServedVersion(GroupKind kind) const {
  std::lock_guard<std::mutex> lock(mu_);
  return kinds_[static_cast<int>(kind)].version;
}

std::string GroupObjectsWatch::Base(GroupKind kind, const std::string& version) const {
  const GroupKindInfo& info = KindInfo(kind);
  return absl::StrCat("/apis/", info.group, "/", version, "/", info.resource);
}

absl::StatusOr<std::string> GroupObjectsWatch::Discover(GroupKind kind) {
  const GroupKindInfo& info = KindInfo(kind);
  for (const char* version : info.versions) {
    const std::string path = absl::StrCat("/apis/", info.group, "/", version);
    auto r = client_->Get(path);
    if (!r.ok()) return r.status();
    if (r->status == 404) continue;  // group or version not served: normal
    if (r->status == 401 || r->status == 403) {
      return absl::PermissionDeniedError(absl::StrCat(
          "topogang may not read API discovery ", path, " (HTTP ", r->status,
          "); discovery is open to every authenticated user by default (system:discovery)"));
    }
    if (r->status != 200) {
      return absl::UnavailableError(absl::StrCat("GET ", path, ": HTTP ", r->status));
    }
    auto j = ParseJson(r->body);
    if (!j.ok()) return j.status();
    auto resources = JsonArray(*j, "resources", "APIResourceList.resources");
    if (!resources.ok()) return resources.status();
    if (*resources == nullptr) continue;
    for (const Json& res : **resources) {
      auto name = JsonString(res, "name", "APIResourceList.resources[].name");
      if (name.ok() && *name == info.resource) return std::string(version);
    }
  }
  return std::string();
}

void GroupObjectsWatch::DiscoveryLoop() {
  absl::Duration backoff = options_.backoff_initial;
  for (;;) {
    bool failed = false;
    for (const GroupKindInfo& info : AllGroupKinds()) {
      const int k = static_cast<int>(info.kind);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return;
        if (kinds_[k].running) continue;
      }
      auto v = Discover(info.kind);
      if (!v.ok()) {
        if (v.status().code() == absl::StatusCode::kCancelled) return;
        std::cerr << "topogangd: discovering " << info.title << ": " << v.status() << std::endl;
        failed = true;
        if (absl::IsPermissionDenied(v.status())) {
          // Pods naming this kind get the reason instead of waiting for ever.
          std::lock_guard<std::mutex> lock(mu_);
          kinds_[k].forbidden = std::string(v.status().message());
          cv_.notify_all();
        }
        continue;
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      KindState& s = kinds_[k];
      s.discovered = true;
      s.version = *v;
      s.forbidden.clear();
      if (!v->empty()) {
        std::cerr << "topogangd: watching " << info.title << " " << info.group << "/" << *v
                  << " for gang sizes" << std::endl;
        s.running = true;
        threads_.emplace_back([this, kind = info.kind] { KindLoop(kind); });
      }
      cv_.notify_all();
    }
    if (!SleepFor(failed ? backoff : options_.rediscover)) return;
    backoff = failed ? std::min(backoff * 2, options_.backoff_max) : options_.backoff_initial;
  }
}

absl::Status GroupObjectsWatch::ListKind(GroupKind kind, const std::string& base) {
  const GroupKindInfo& info = KindInfo(kind);
  std::map<std::string, GroupObject> objects;
  std::string cont, rv;
  for (int page = 0; page < 100000; ++page) {
    const std::string url = absl::StrCat(base, "?limit=", options_.list_page_size,
                                         cont.empty() ? "" : "&continue=", cont);
    auto r = client_->Get(url);
    if (!r.ok()) return r.status();
    if (r->status == 403) {
      std::lock_guard<std::mutex> lock(mu_);
      kinds_[static_cast<int>(kind)].forbidden = absl::StrCat(
          "topogang may not list ", info.resource, ".", info.group,
          " (HTTP 403); grant its service account get/list/watch on it (deploy/rbac.yaml)");
      cv_.notify_all();
      return absl::PermissionDeniedError(absl::StrCat("GET ", url, ": HTTP 403"));
    }
    if (r->status == 404) return absl::NotFoundError(absl::StrCat("GET ", url, ": HTTP 404"));
    if (r->status != 200) {
      return absl::UnavailableError(
          absl::StrCat("GET ", url, ": HTTP ", r->status, ": ", r->body.substr(0, 200)));
    }
    auto j = ParseJson(r->body);
    if (!j.ok()) return j.status();
    const Json* meta = GoField(*j, "metadata");
    auto v = meta ? JsonString(*meta, "resourceVersion", "metadata.resourceVersion")
                  : absl::StatusOr<std::string>(std::string());
    auto c = meta ? JsonString(*meta, "continue", "metadata.continue")
                  : absl::StatusOr<std::string>(std::string());
    auto items = JsonArray(*j, "items", "items");
    for (const absl::Status& s : {v.status(), c.status(), items.status()}) {
      if (!s.ok()) return s;
    }
    rv = *v;
    cont = *c;
    if (*items) {
      for (const Json& item : **items) {
        auto g = ParseGroupObject(kind, item, options_.gpu_resource);
        if (!g.ok()) {
          std::cerr << "topogangd: skipping " << info.title << ": " << g.status() << std::endl;
          continue;
        }
        objects[g->Key()] = std::move(*g);
      }
    }
    if (cont.empty()) break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  KindState& s = kinds_[static_cast<int>(kind)];
  s.objects = std::move(objects);
  s.rv = rv;
  s.listed = true;
  s.forbidden.clear();
  cv_.notify_all();
  return absl::OkStatus();
}

bool GroupObjectsWatch::HandleLine(GroupKind kind, absl::string_view line) {
  auto j = ParseJson(line);
  if (!j.ok() || !j->is_object()) return true;  // a cut stream: the watch reconnects
  auto type = JsonString(*j, "type", "type");
  const Json* obj = GoField(*j, "object");
  if (!type.ok() || obj == nullptr) return true;
  if (*type == "ERROR") {
    auto code = JsonInt(*obj, "code", "object.code");
    return !(code.ok() && *code == 410);
  }
  std::string rv;
  if (const Json* meta = GoField(*obj, "metadata")) {
    auto v = JsonString(*meta, "resourceVersion", "metadata.resourceVersion");
    if (v.ok()) rv = *v;
  }
  std::lock_guard<std::mutex> lock(mu_);
  KindState& s = kinds_[static_cast<int>(kind)];
  if (!rv.empty()) s.rv = rv;
  if (*type != "ADDED" && *type != "MODIFIED" && *type != "DELETED") return true;
  auto g = ParseGroupObject(kind, *obj, options_.gpu_resource);
  if (!g.ok()) {
    // An object we can no longer read must not keep sizing gangs with its old values: drop it
    // (its pods wait for a valid one), whatever the event.
    std::cerr << "topogangd: dropping " << KindInfo(kind).title << " after a " << *type
              << " event: " << g.status() << std::endl;
    if (const Json* meta = GoField(*obj, "metadata"); meta && meta->is_object()) {
      auto ns = JsonString(*meta, "namespace", "metadata.namespace");
      auto name = JsonString(*meta, "name", "metadata.name");
      if (ns.ok() && name.ok()) s.objects.erase(ObjectKey(*ns, *name));
    }
    return true;
  }
  if (*type == "DELETED") {
    s.objects.erase(g->Key());
  } else {
    s.objects[g->Key()] = std::move(*g);
  }
  return true;
}

void GroupObjectsWatch::KindLoop(GroupKind kind) {
  std::string version;
  {
    std::lock_guard<std::mutex> lock(mu_);
    version = kinds_[static_cast<int>(kind)].version;
  }
  const std::string base = Base(kind, version);
  absl::Duration backoff = options_.backoff_initial;
  bool relist = true;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    if (relist) {
      absl::Status s = ListKind(kind, base);
      if (absl::IsNotFound(s)) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!stop_) UnservedLocked(kind, std::string(s.message()));
        return;
      }
      if (!s.ok()) {
        if (s.code() == absl::StatusCode::kCancelled) return;
        std::cerr << "topogangd: list " << base << ": " << s << std::endl;
        if (!SleepFor(backoff)) return;
        backoff = std::min(backoff * 2, options_.backoff_max);
        continue;
      }
      relist = false;
      backoff = options_.backoff_initial;
    }
    std::string rv;
    {
      std::lock_guard<std::mutex> lock(mu_);
      rv = kinds_[static_cast<int>(kind)].rv;
    }
    const std::string path = absl::StrCat(
        base, "?watch=1&allowWatchBookmarks=true&timeoutSeconds=", options_.watch_timeout_seconds,
        rv.empty() ? "" : "&resourceVersion=", rv);
    auto r = client_->Watch(path, [&](absl::string_view line) {
      if (HandleLine(kind, line)) return true;
      relist = true;
      return false;
    });
    if (r.ok() && *r == 410) relist = true;
    if (r.ok() && *r == 404) relist = true;  // the list tells: unserved, or a blip
    if (relist || (r.ok() && *r == 200)) continue;
    if (!r.ok() && r.status().code() == absl::StatusCode::kCancelled) return;
    std::cerr << "topogangd: watch " << base << ": "
              << (r.ok() ? absl::StrCat("HTTP ", *r) : r.status().ToString()) << std::endl;
    if (!SleepFor(backoff)) return;
    backoff = std::min(backoff * 2, options_.backoff_max);
    relist = r.ok() && *r == 403;
  }
}

GroupObjectLookup::Result GroupObjectsWatch::Find(GroupKind kind, const std::string& ns,
                                                  const std::string& name) const {
  const GroupKindInfo& info = KindInfo(kind);
  Result r;
  std::lock_guard<std::mutex> lock(mu_);
  const KindState& s = kinds_[static_cast<int>(kind)];
  if (!s.forbidden.empty()) {
    r.state = State::kUnavailable;
    r.why = s.forbidden;
    return r;
  }
  if (!s.discovered) return r;  // kMissing: discovery has not answered yet
  if (s.version.empty()) {
    r.state = State::kUnavailable;
    r.why = absl::StrCat("the cluster does not serve ", info.resource, ".", info.group, " (",
                         info.title, ")");
    return r;
  }
  if (!s.listed) return r;
  auto it = s.objects.find(ObjectKey(ns, name));
  if (it == s.objects.end()) return r;
  r.state = State::kFound;
  r.object = it->second;
  return r;
}

}  // namespace topogang
