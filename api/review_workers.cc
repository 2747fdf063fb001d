#include "api/review_workers.h"

namespace topogang {

ReviewWorkers::ReviewWorkers(int threads, size_t max_queued) : max_queued_(max_queued) {
  for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { Loop(); });
}

bool ReviewWorkers::Post(std::function<void(bool)> job) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) {
      lock.unlock();
      job(true);
      return true;
    }
    if (jobs_.size() >= max_queued_) return false;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

void ReviewWorkers::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && threads_.empty()) return;
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void ReviewWorkers::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping and drained
    std::function<void(bool)> job = std::move(jobs_.front());
    jobs_.pop_front();
    const bool stopping = stop_;
    lock.unlock();
    job(stopping);
    lock.lock();
  }
}

}  // namespace topogang
