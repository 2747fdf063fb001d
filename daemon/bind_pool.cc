#include "daemon/bind_pool.h"

#include <algorithm>

namespace topogang {

BindPool::BindPool(Binder& binder, int threads) : binder_(binder) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Run(); });
}

BindPool::~BindPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    open_ = false;
    closed_why_ = "topogang is shutting down";
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void BindPool::Submit(PodBinding b, std::function<void(absl::Status)> done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(Job{std::move(b), std::move(done)});
  }
  cv_.notify_one();
}

void BindPool::SetOpen(bool open, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  open_ = open;
  closed_why_ = why;
}

void BindPool::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, nothing left to answer
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    const bool open = open_;
    const std::string why = closed_why_;
    lock.unlock();
    job.done(open ? binder_.Bind(job.binding) : absl::UnavailableError(why));
    lock.lock();
  }
}

}  // namespace topogang
