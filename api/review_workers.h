// A few threads that run the blocking part of authenticating a gRPC caller (a TokenReview round
// trip to the API server) off gRPC's callback threads: a callback thread that waits on the
// network stalls every stream it would otherwise serve, and 12,500 agents reconnecting at once
// after a daemon restart would wait on each other. Jobs run in order; Stop() runs what is queued
// with `stopping` = true (so every pending RPC is still answered) and joins; a job posted after
// that runs at once, inline, with `stopping` = true.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace topogang {

class ReviewWorkers {
 public:
  // threads >= 1; at most max_queued jobs wait (Post refuses more).
  ReviewWorkers(int threads, size_t max_queued);
  ~ReviewWorkers() { Stop(); }
  // False when the queue is full: the caller answers the RPC itself (RESOURCE_EXHAUSTED) instead
  // of waiting.
  bool Post(std::function<void(bool stopping)> job);
  void Stop();

 private:
  void Loop();
  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void(bool)>> jobs_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace topogang
