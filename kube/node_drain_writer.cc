#include "kube/node_drain_writer.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/json_util.h"
#include "k8s/node_info.h"

namespace topogang {

NodeDrainWriter::NodeDrainWriter(std::shared_ptr<KubeClient> client, absl::Duration retry,
                                 int attempts)
    : client_(std::move(client)), retry_(retry), attempts_(attempts) {
  thread_ = std::thread([this] { Run(); });
}

NodeDrainWriter::~NodeDrainWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void NodeDrainWriter::Record(const std::string& node, bool drained, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_[node] =
        drained ? std::optional<std::string>(reason.empty() ? "drained" : reason) : std::nullopt;
  }
  cv_.notify_all();
}

bool NodeDrainWriter::WaitIdle(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                      [&] { return pending_.empty() && !busy_; });
}

void NodeDrainWriter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
    if (stop_) return;
    auto first = pending_.begin();
    const std::string node = first->first;
    const std::optional<std::string> reason = first->second;
    pending_.erase(first);
    busy_ = true;
    lock.unlock();
    Json patch;
    patch["metadata"]["annotations"][kDrainAnnotation] = reason ? Json(*reason) : Json(nullptr);
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
      } else {
        last_error = r.ok() ? absl::StrCat("HTTP ", r->status, ": ", r->body.substr(0, 200))
                            : std::string(r.status().message());
        std::unique_lock<std::mutex> wait(mu_);
        if (cv_.wait_for(wait, absl::ToChronoNanoseconds(retry_), [&] { return stop_; })) break;
      }
    }
    if (!done) {
      std::cerr << "topogangd: could not record the drain of node " << node
                << " on the API server (it holds until this replica restarts): " << last_error
                << std::endl;
    }
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace topogang
