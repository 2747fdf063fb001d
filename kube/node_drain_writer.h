// Persists `topogang drain` / `undrain` on the Node object (the topogang.io/drain annotation), so
// a drain survives a restart and a failover: the API server is the source of truth, and KubeSync
// reads the annotation back. Writes are JSON merge patches made by one background thread (the
// gRPC handler that drained the node never waits on the API server), retried with backoff; only
// the latest wish per node is written.
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "kube/kube_client.h"

namespace topogang {

class NodeDrainWriter {
 public:
  explicit NodeDrainWriter(std::shared_ptr<KubeClient> client,
                           absl::Duration retry = absl::Seconds(1), int attempts = 10);
  ~NodeDrainWriter();  // gives up on writes not done yet

  // drained: sets the annotation to `reason`; otherwise removes it.
  void Record(const std::string& node, bool drained, const std::string& reason);
  // For tests: blocks until nothing is left to write (or the timeout passes).
  bool WaitIdle(absl::Duration timeout);

 private:
  void Run();

  std::shared_ptr<KubeClient> client_;
  absl::Duration retry_;
  int attempts_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::optional<std::string>> pending_;  // node -> reason, nullopt = undrain
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace topogang
