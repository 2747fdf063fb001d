#include "daemon/eviction_queue.h"

#include "absl/strings/str_cat.h"

namespace topogang {

EvictionQueue::EvictionQueue(Evictor& evictor) : evictor_(evictor), thread_([this] { Loop(); }) {}

EvictionQueue::~EvictionQueue() {
  std::deque<Job> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    left.swap(jobs_);
  }
  cv_.notify_all();
  thread_.join();
  for (Job& j : left) j.done(absl::CancelledError("topogang is shutting down"));
}

void EvictionQueue::Submit(std::vector<PodBinding> pods, std::function<void(absl::Status)> done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_) {
      jobs_.push_back({std::move(pods), std::move(done)});
      cv_.notify_all();
      return;
    }
  }
  done(absl::CancelledError("topogang is shutting down"));
}

void EvictionQueue::Loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job.done(Run(job.pods));
  }
}

absl::Status EvictionQueue::Run(const std::vector<PodBinding>& pods) {
  for (const PodBinding& p : pods) {
    absl::Status s = evictor_.Evict(p, /*dry_run=*/true);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("pod ", p.pod_namespace, "/", p.pod_name,
                                                 " may not be evicted: ", s.message()));
    }
  }
  for (const PodBinding& p : pods) {
    absl::Status s = evictor_.Evict(p, /*dry_run=*/false);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("evicting pod ", p.pod_namespace, "/", p.pod_name,
                                                 ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace topogang
