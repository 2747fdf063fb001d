// Runs callbacks in the order they were posted, each no earlier than `lag` after its post, and
// no earlier than `per_event` after the one before: a watch whose events arrive late.
// kube-scheduler's watch and topogangd's are two streams from one API server, and under load (a
// 4,096-pod gang created at once, a busy apiserver, a slow handler) one can trail the other by
// seconds; client-go's processorListener (k8s.io/client-go/tools/cache/shared_informer.go) buffers
// events per handler without bound, so a slow consumer sees every event, in order, late. `lag`
// alone is a constant delay; `per_event` is a consumer that takes that long per event, so the delay
// grows with a burst (a gang's 1,024 pods created at once) and drains after it, as a slow handler's
// backlog does. The kube-scheduler emulator delivers its informers' callbacks through one
// (EmulatorOptions::watch_lag); the fake API server writes the watch streams of a chosen client
// through one (FakeApiServer::SetWatchLag).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/time/time.h"

namespace topogang::testing {

class LaggedDelivery {
 public:
  // Real time.
  explicit LaggedDelivery(absl::Duration lag, absl::Duration per_event = absl::ZeroDuration());
  ~LaggedDelivery();
  LaggedDelivery(const LaggedDelivery&) = delete;
  LaggedDelivery& operator=(const LaggedDelivery&) = delete;

  void Post(std::function<void()> fn);
  // Callbacks posted so far.
  uint64_t posted() const;
  // Blocks until everything posted before the call has run (later posts do not hold it up), or
  // Stop, or `timeout` (real time) passes. False on a timeout.
  bool Drain(absl::Duration timeout);
  // Drops what has not run yet and joins the thread; no callback runs after it returns.
  void Stop();

 private:
  void Run();

  const absl::Duration lag_, per_event_;
  absl::Time last_due_ = absl::InfinitePast();  // when the last posted callback is due
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<absl::Time, std::function<void()>>> queue_;
  bool stopping_ = false;
  uint64_t posted_ = 0, done_ = 0;  // callbacks posted and run so far
  std::thread thread_;
};

}  // namespace topogang::testing
