// Writes topogang's annotations on Node objects, as JSON merge patches made by one background
// thread (the caller, a gRPC handler or the gang ledger under its lock, never waits on the API
// server), retried with backoff; only the latest value per node and key is written, and one patch
// carries every key pending for a node. Two uses:
// - `topogang drain` / `undrain` (topogang.io/drain), so a drain survives a restart and a
//   failover: the API server is the source of truth, and KubeSync reads the annotation back;
// - waking waiting pods (topogang.io/wake, GangLedger::SetWaker): a Node annotation change is a
//   cluster event to kube-scheduler, which moves every pod an extender refused out of its
//   unschedulable pool (the extender is registered for all events).
// Both need only `patch` on nodes, which topogangd has for drains; it never writes pods.
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

class NodeAnnotationWriter {
 public:
  explicit NodeAnnotationWriter(std::shared_ptr<KubeClient> client,
                                absl::Duration retry = absl::Seconds(1), int attempts = 10);
  ~NodeAnnotationWriter();  // gives up on writes not done yet

  // Sets annotation `key` on `node` to `value`, or removes it (nullopt).
  void Record(const std::string& node, const std::string& key,
              const std::optional<std::string>& value);
  // topogang.io/drain set to `reason` ("drained" when empty), or removed.
  void RecordDrain(const std::string& node, bool drained, const std::string& reason);
  // topogang.io/wake set to "<now, RFC 3339> <gang>" (a new value every time: the change wakes).
  void RecordWake(const std::string& node, const std::string& gang);
  // For tests: blocks until nothing is left to write (or the timeout passes).
  bool WaitIdle(absl::Duration timeout);
  // Patches that reached the API server (2xx), for tests and metrics.
  int64_t written() const;

 private:
  void Run();

  std::shared_ptr<KubeClient> client_;
  absl::Duration retry_;
  int attempts_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // node -> key -> value (nullopt: remove)
  std::map<std::string, std::map<std::string, std::optional<std::string>>> pending_;
  bool busy_ = false;
  bool stop_ = false;
  int64_t written_ = 0;
  std::thread thread_;
};

}  // namespace topogang
