// kube-scheduler's client-side rate limit on its API calls. Every request of its clientset waits
// for a token first (k8s.io/client-go/rest/request.go, tryThrottle), from a token bucket of
// clientConnection.qps tokens per second holding at most clientConnection.burst
// (k8s.io/client-go/util/flowcontrol/throttle.go, NewTokenBucketRateLimiter over golang.org/x/
// time/rate; defaults 50 and 100, pkg/scheduler/apis/config/v1/defaults.go). rate.Limiter hands
// tokens out in the order they are asked for and lets the bucket go into debt, so a burst of calls
// reserves the next seconds and a call made after it waits behind all of them.
//
// What waits where, as in kube-scheduler: the scheduling loop itself waits for the token of the
// PodScheduled write after a failed scheduling cycle (Wait: handleSchedulingFailure -> updatePod
// runs in the loop); a binding goroutine's calls (its failure's write, a pods/binding POST) wait
// without holding the loop (Call: run here once the token comes).
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/time/time.h"
#include "tests/kubesched/clock.h"

namespace topogang::kubesched {

class ClientThrottle {
 public:
  // qps <= 0: no limit, every call at once.
  ClientThrottle(const Clock& clock, double qps, int burst);
  ~ClientThrottle();

  // Takes the next token: how long (virtual time) its call waits.
  absl::Duration Reserve();
  // Takes a token and runs `call` when it comes: at once if the bucket has one, else later on
  // the throttle's thread, in the order of the tokens.
  void Call(std::function<void()> call);
  // Takes a token and waits for it in the caller; false when stopped meanwhile.
  bool Wait();
  // Runs every call still waiting, at once, and wakes the waiters.
  void Stop();

  int64_t throttled() const;      // calls that had to wait
  absl::Duration waited() const;  // virtual time they waited, in all

 private:
  void Run();

  const Clock& clock_;
  const double qps_, burst_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  double tokens_;  // below 0: reserved ahead
  absl::Time last_;
  bool stopping_ = false;
  bool running_ = false;  // Run is executing a call (lock released)
  int64_t throttled_ = 0;
  absl::Duration waited_;
  std::deque<std::pair<absl::Time, std::function<void()>>> pending_;  // real due time
  std::thread thread_;
};

}  // namespace topogang::kubesched
