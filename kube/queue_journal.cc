#include "kube/queue_journal.h"

#include <iostream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/json_util.h"

namespace topogang {
namespace {

constexpr const char* kDataKey = "arrivals";

absl::Status HttpError(const char* what, const HttpResult& r) {
  return absl::UnavailableError(
      absl::StrCat("queue journal: ", what, ": HTTP ", r.status, " ", r.body.substr(0, 200)));
}

// metadata.resourceVersion of a ConfigMap as the API server returned it.
absl::StatusOr<std::string> ResourceVersion(const Json& obj) {
  auto meta = JsonObject(obj, "metadata", "ConfigMap.metadata");
  if (!meta.ok()) return meta.status();
  auto rv = *meta ? JsonString(**meta, "resourceVersion", "ConfigMap.metadata.resourceVersion")
                  : absl::StatusOr<std::string>("");
  if (rv.ok() && rv->empty()) {
    return absl::InvalidArgumentError("queue journal: the ConfigMap has no resourceVersion");
  }
  return rv;
}

}  // namespace

QueueJournal::QueueJournal(std::shared_ptr<KubeClient> client, QueueJournalOptions options,
                           Snapshot snapshot)
    : client_(std::move(client)), options_(std::move(options)), snapshot_(std::move(snapshot)) {}

QueueJournal::~QueueJournal() { Abandon(); }

std::string QueueJournal::Path(bool with_name) const {
  std::string p =
      absl::StrCat("/api/v1/namespaces/", PathEscape(options_.name_space), "/configmaps");
  if (with_name) absl::StrAppend(&p, "/", PathEscape(options_.name));
  return p;
}

std::string QueueJournal::ObjectJson(const std::string& text) const {
  Json obj = {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata",
               {{"name", options_.name},
                {"namespace", options_.name_space},
                {"labels",
                 {{"app.kubernetes.io/name", "topogang"},
                  {"app.kubernetes.io/component", "queue-journal"}}}}},
              {"data", {{kDataKey, text}}}};
  if (exists_) obj["metadata"]["resourceVersion"] = resource_version_;
  return DumpJson(obj);
}

absl::StatusOr<Json> QueueJournal::ReadLocked() {
  exists_known_ = false;
  auto r = client_->Get(Path(true));
  if (!r.ok()) return r.status();
  if (r->status == 404) {
    exists_known_ = true;
    exists_ = false;
    return Json();
  }
  if (r->status != 200) return HttpError("read", *r);
  auto obj = ParseJson(r->body);
  if (!obj.ok()) return obj.status();
  auto rv = ResourceVersion(*obj);
  if (!rv.ok()) return rv.status();
  exists_known_ = exists_ = true;
  resource_version_ = *rv;
  return *std::move(obj);
}

absl::StatusOr<QueueMemory> QueueJournal::Load() {
  std::lock_guard<std::mutex> lock(write_mu_);
  auto obj = ReadLocked();
  if (!obj.ok()) return obj.status();
  if (obj->is_null()) return QueueMemory{};
  auto data = JsonObject(*obj, "data", "ConfigMap.data");
  if (!data.ok()) return data.status();
  auto text = *data ? JsonString(**data, kDataKey, "ConfigMap.data.arrivals")
                    : absl::StatusOr<std::string>("");
  if (!text.ok()) return text.status();
  if (text->empty()) return QueueMemory{};
  std::vector<std::string> warnings;
  auto memory = ParseQueueJournal(*text, &warnings, options_.max_entries);
  for (const std::string& w : warnings) std::cerr << "topogangd: " << w << std::endl;
  if (memory.ok()) written_ = *text;
  return memory;
}

absl::Status QueueJournal::Flush() {
  const std::string text = EncodeQueueJournal(snapshot_(), options_.max_entries);
  std::lock_guard<std::mutex> lock(write_mu_);
  if (exists_known_ && text == written_) return absl::OkStatus();
  if (!exists_known_) {
    if (auto obj = ReadLocked(); !obj.ok()) return obj.status();
  }
  auto r = exists_ ? client_->Put(Path(true), ObjectJson(text))
                   : client_->Post(Path(false), ObjectJson(text));
  if (!r.ok()) return r.status();
  if (r->status == 409 || r->status == 404) {
    exists_known_ = false;  // written by someone else, or deleted: read it again next time
    return HttpError(exists_ ? "update" : "create", *r);
  }
  if (r->status != 200 && r->status != 201) return HttpError(exists_ ? "update" : "create", *r);
  auto obj = ParseJson(r->body);
  auto rv = obj.ok() ? ResourceVersion(*obj) : obj.status();
  if (rv.ok()) {
    exists_ = true;
    resource_version_ = *rv;
  } else {
    exists_known_ = false;  // no version to update against: read it next time
  }
  written_ = text;
  return absl::OkStatus();
}

void QueueJournal::Log(const absl::Status& s) {
  std::lock_guard<std::mutex> lock(write_mu_);
  const std::string msg = s.ok() ? "" : std::string(s.message());
  if (msg == last_error_) return;
  if (!msg.empty()) {
    std::cerr << "topogangd: " << msg << " (retrying every " << options_.period << ")" << std::endl;
  } else {
    std::cerr << "topogangd: queue journal: written again" << std::endl;
  }
  last_error_ = msg;
}

void QueueJournal::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_ || stop_) return;
  running_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void QueueJournal::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (cv_.wait_for(lock, absl::ToChronoMilliseconds(options_.period), [&] { return stop_; })) {
      break;
    }
    lock.unlock();
    Log(Flush());
    lock.lock();
  }
}

void QueueJournal::EndLoop() {
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    t = std::move(thread_);
  }
  cv_.notify_all();
  if (t.joinable()) t.join();
}

void QueueJournal::Stop() {
  bool was_running;
  {
    std::lock_guard<std::mutex> lock(mu_);
    was_running = running_ && !stop_;
  }
  EndLoop();
  if (was_running) Log(Flush());
}

void QueueJournal::Abandon() { EndLoop(); }

}  // namespace topogang
