// A fixed set of threads that run bindings (API server calls), so a 4,096-member gang binds
// `threads` at a time instead of one after another, and reservation expiry (the ledger's worker)
// never waits behind a slow API server. Closing the pool (leadership lost, shutdown) makes every
// job that has not started yet report `closed_why` instead of binding: nothing binds after
// leadership is lost.
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "daemon/binder.h"

namespace topogang {

class BindPool {
 public:
  BindPool(Binder& binder, int threads);
  ~BindPool();  // runs the queued jobs as closed, then joins
  BindPool(const BindPool&) = delete;
  BindPool& operator=(const BindPool&) = delete;

  // Binds `b` on a pool thread and calls done(result) there.
  void Submit(PodBinding b, std::function<void(absl::Status)> done);
  // While closed, jobs are answered with Unavailable(why) and never reach the binder.
  void SetOpen(bool open, const std::string& why = "");

 private:
  struct Job {
    PodBinding binding;
    std::function<void(absl::Status)> done;
  };
  void Run();

  Binder& binder_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  bool open_ = true;
  std::string closed_why_;
  std::vector<std::thread> threads_;
};

}  // namespace topogang
