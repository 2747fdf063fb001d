#include "tests/kubesched/informer.h"

#include <cpprest/http_client.h>

#include "absl/strings/str_cat.h"

namespace topogang::kubesched {

using web::http::http_response;
using web::http::methods;
using web::http::client::http_client;
using web::http::client::http_client_config;

namespace {

const Json* Member(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string StringAt(const Json& obj, const char* a, const char* b) {
  const Json* m = Member(obj, a);
  const Json* v = m ? Member(*m, b) : nullptr;
  return v && v->is_string() ? v->get<std::string>() : "";
}

std::string KeyOf(const Json& obj) {
  std::string ns = StringAt(obj, "metadata", "namespace");
  std::string name = StringAt(obj, "metadata", "name");
  return ns.empty() ? name : ns + "/" + name;
}

std::string RvOf(const Json& obj) { return StringAt(obj, "metadata", "resourceVersion"); }

}  // namespace

Informer::Informer(std::string server_url, std::string path, Handlers handlers,
                   std::function<bool(const Json&)> keep, absl::Duration retry_pause)
    : server_url_(std::move(server_url)),
      path_(std::move(path)),
      handlers_(std::move(handlers)),
      keep_(std::move(keep)),
      retry_pause_(retry_pause),
      cancel_(std::make_unique<pplx::cancellation_token_source>()) {}

Informer::~Informer() { Stop(); }

void Informer::Start() {
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
}

void Informer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cancel_->cancel();
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void Informer::PauseBeforeRetry() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, absl::ToChronoMilliseconds(retry_pause_), [&] { return stopping_.load(); });
}

void Informer::Run() {
  while (!stopping_) {
    if (!ListAndSync()) {
      PauseBeforeRetry();
      continue;
    }
    while (!stopping_ && WatchOnce()) {
    }
    if (!stopping_) PauseBeforeRetry();
  }
}

bool Informer::ListAndSync() {
  http_client_config cfg;
  cfg.set_timeout(std::chrono::seconds(60));
  std::map<std::string, Json> listed;
  std::string rv, cont;
  try {
    http_client client(server_url_, cfg);
    do {
      std::string uri = path_ + "?limit=500";
      if (!cont.empty()) uri += "&continue=" + web::uri::encode_data_string(cont);
      http_response resp = client.request(methods::GET, uri, cancel_->get_token()).get();
      if (resp.status_code() != 200) return false;
      Json list = Json::parse(resp.extract_utf8string(true).get(), nullptr, false);
      if (!list.is_object()) return false;
      ++lists_;
      if (list.contains("items") && list["items"].is_array()) {
        for (Json& item : list["items"]) {
          if (keep_ && !keep_(item)) continue;
          std::string key = KeyOf(item);
          listed[key] = std::move(item);
        }
      }
      rv = StringAt(list, "metadata", "resourceVersion");
      cont = StringAt(list, "metadata", "continue");
    } while (!cont.empty() && !stopping_);
  } catch (const std::exception&) {
    return false;
  }
  if (stopping_) return false;
  // Replace: deletions first, then additions and changes in list order.
  for (auto it = store_.begin(); it != store_.end();) {
    if (!listed.count(it->first)) {
      Json gone = std::move(it->second);
      it = store_.erase(it);
      if (handlers_.on_delete) handlers_.on_delete(gone);
    } else {
      ++it;
    }
  }
  for (auto& [key, obj] : listed) {
    auto it = store_.find(key);
    if (it == store_.end()) {
      store_[key] = obj;
      if (handlers_.on_add) handlers_.on_add(obj);
    } else if (RvOf(it->second) != RvOf(obj)) {
      Json old = std::move(it->second);
      it->second = obj;
      if (handlers_.on_update) handlers_.on_update(old, obj);
    }
  }
  resource_version_ = rv;
  synced_ = true;
  return true;
}

void Informer::Apply(const std::string& type, const Json& obj) {
  if (type == "BOOKMARK") return;
  const std::string key = KeyOf(obj);
  const bool present = type != "DELETED" && (!keep_ || keep_(obj));
  auto it = store_.find(key);
  if (!present) {
    if (it == store_.end()) return;
    Json gone = std::move(it->second);
    store_.erase(it);
    // Deleted: the final state; filtered out: the last state we kept.
    if (handlers_.on_delete) handlers_.on_delete(type == "DELETED" ? obj : gone);
    return;
  }
  if (it == store_.end()) {
    store_[key] = obj;
    if (handlers_.on_add) handlers_.on_add(obj);
    return;
  }
  Json old = std::move(it->second);
  it->second = obj;
  if (handlers_.on_update) handlers_.on_update(old, obj);
}

bool Informer::WatchOnce() {
  http_client_config cfg;
  cfg.set_timeout(std::chrono::hours(24));  // a watch is open-ended
  try {
    http_client client(server_url_, cfg);
    // client-go/tools/cache/reflector.go, watch: `timeoutSeconds :=
    // int64(r.minWatchTimeout.Seconds() * (rand.Float64() + 1.0))`.
    constexpr double kMinWatchTimeoutSeconds = 300;  // the reflector's default minWatchTimeout
    const int64_t timeout_seconds = static_cast<int64_t>(
        kMinWatchTimeoutSeconds * (1 + std::uniform_real_distribution<double>(0, 1)(timeout_rng_)));
    const std::string uri =
        absl::StrCat(path_, "?watch=1&allowWatchBookmarks=true&timeoutSeconds=", timeout_seconds,
                     "&resourceVersion=", resource_version_);
    http_response resp = client.request(methods::GET, uri, cancel_->get_token()).get();
    if (resp.status_code() != 200) {
      (void)resp.extract_utf8string(true).get();
      return false;  // 410 Gone or another failure: relist
    }
    ++watches_;
    auto buf = resp.body().streambuf();
    std::string pending;
    char chunk[65536];
    while (!stopping_) {
      size_t n = buf.getn(reinterpret_cast<uint8_t*>(chunk), 1).get();
      if (n == 0) return true;  // the server closed the watch: reopen it
      size_t avail = std::min(buf.in_avail(), sizeof(chunk) - 1);
      if (avail > 0) n += buf.getn(reinterpret_cast<uint8_t*>(chunk + 1), avail).get();
      pending.append(chunk, n);
      size_t start = 0;
      for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
        Json ev = Json::parse(pending.begin() + start, pending.begin() + nl, nullptr, false);
        if (!ev.is_object() || !ev.contains("type") || !ev["type"].is_string()) continue;
        const std::string type = ev["type"].get<std::string>();
        if (type == "ERROR") return false;  // e.g. 410 Expired: relist
        const Json* obj = Member(ev, "object");
        if (!obj || !obj->is_object()) continue;
        if (std::string rv = RvOf(*obj); !rv.empty()) resource_version_ = rv;
        Apply(type, *obj);
      }
      pending.erase(0, start);
    }
    return false;
  } catch (const std::exception&) {
    return false;  // cancelled, dropped or refused
  }
}

}  // namespace topogang::kubesched
