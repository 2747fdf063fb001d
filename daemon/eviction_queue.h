// Evicts the pods of preempted gangs on its own thread, a whole set at a time: every pod is first
// asked with a dry run, and only when all of them may go is any of them evicted. A gang is never
// evicted in part because a PodDisruptionBudget protects one of its members (the dry runs and the
// evictions are not atomic: a budget that changes in between can still stop a later eviction,
// which is reported like any failure).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "daemon/evictor.h"

namespace topogang {

class EvictionQueue {
 public:
  explicit EvictionQueue(Evictor& evictor);
  ~EvictionQueue();  // finishes the set in progress; queued sets are answered Cancelled
  EvictionQueue(const EvictionQueue&) = delete;
  EvictionQueue& operator=(const EvictionQueue&) = delete;

  // `done` runs on the queue's thread with OK (every pod evicted) or the first refusal.
  void Submit(std::vector<PodBinding> pods, std::function<void(absl::Status)> done);

 private:
  struct Job {
    std::vector<PodBinding> pods;
    std::function<void(absl::Status)> done;
  };
  void Loop();
  absl::Status Run(const std::vector<PodBinding>& pods);

  Evictor& evictor_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace topogang
