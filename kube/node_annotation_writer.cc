#include "kube/node_annotation_writer.h"

#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/json_util.h"
#include "k8s/node_info.h"

namespace topogang {

NodeAnnotationWriter::NodeAnnotationWriter(std::shared_ptr<KubeClient> client, absl::Duration retry,
                                           int attempts)
    : client_(std::move(client)), retry_(retry), attempts_(attempts) {
  thread_ = std::thread([this] { Run(); });
}

NodeAnnotationWriter::~NodeAnnotationWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void NodeAnnotationWriter::Record(const std::string& node, const std::string& key,
                                  const std::optional<std::string>& value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_[node][key] = value;
  }
  cv_.notify_all();
}

void NodeAnnotationWriter::RecordDrain(const std::string& node, bool drained,
                                       const std::string& reason) {
  Record(node, kDrainAnnotation,
         drained ? std::optional<std::string>(reason.empty() ? "drained" : reason) : std::nullopt);
}

void NodeAnnotationWriter::RecordWake(const std::string& node, const std::string& gang) {
  Record(node, kWakeAnnotation,
         absl::StrCat(absl::FormatTime(absl::RFC3339_full, absl::Now(), absl::UTCTimeZone()), " ",
                      gang));
}

bool NodeAnnotationWriter::WaitIdle(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                      [&] { return pending_.empty() && !busy_; });
}

int64_t NodeAnnotationWriter::written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return written_;
}

void NodeAnnotationWriter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
    if (stop_) return;
    auto first = pending_.begin();
    const std::string node = first->first;
    const std::map<std::string, std::optional<std::string>> values = std::move(first->second);
    pending_.erase(first);
    busy_ = true;
    lock.unlock();
    Json patch;
    for (const auto& [key, value] : values) {
      patch["metadata"]["annotations"][key] = value ? Json(*value) : Json(nullptr);
    }
    const std::string body = DumpJson(patch);
    std::string last_error;
    bool done = false;
    for (int attempt = 0; attempt < attempts_ && !done; ++attempt) {
      auto r = client_->MergePatch(absl::StrCat("/api/v1/nodes/", node), body);
      if (r.ok() && r->status / 100 == 2) {
        done = true;
      } else if (r.ok() && r->status == 404) {
        last_error = "the node no longer exists";
        break;
      } else if (r.ok() && r->status / 100 == 4 && r->status != 409 && r->status != 429) {
        // Refused for good (RBAC, an admission webhook that denies Node updates, a bad
        // request): retrying would only hold up the writes queued behind this one.
        last_error = absl::StrCat("HTTP ", r->status, " (not retried): ", r->body.substr(0, 200));
        break;
      } else {
        last_error = r.ok() ? absl::StrCat("HTTP ", r->status, ": ", r->body.substr(0, 200))
                            : std::string(r.status().message());
        std::unique_lock<std::mutex> wait(mu_);
        if (cv_.wait_for(wait, absl::ToChronoNanoseconds(retry_), [&] { return stop_; })) break;
      }
    }
    if (!done) {
      std::vector<std::string> keys;
      for (const auto& [key, value] : values) keys.push_back(key);
      std::cerr << "topogangd: could not write " << absl::StrJoin(keys, ", ") << " on node " << node
                << " (a drain holds until this replica restarts; a wake waits for the "
                << "next cluster event): " << last_error << std::endl;
    }
    lock.lock();
    written_ += done ? 1 : 0;
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace topogang
