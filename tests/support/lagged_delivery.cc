#include "tests/support/lagged_delivery.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace topogang::testing {

LaggedDelivery::LaggedDelivery(absl::Duration lag, absl::Duration per_event)
    : lag_(lag), per_event_(per_event), thread_([this] { Run(); }) {}

LaggedDelivery::~LaggedDelivery() { Stop(); }

void LaggedDelivery::Post(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  // A backlog delays each callback by the cost of those before it (last_due_ + per_event_).
  last_due_ = std::max(absl::Now() + lag_, last_due_ + per_event_);
  queue_.emplace_back(last_due_, std::move(fn));
  ++posted_;
  cv_.notify_all();
}

uint64_t LaggedDelivery::posted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return posted_;
}

bool LaggedDelivery::Drain(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = posted_;
  return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                      [&] { return stopping_ || done_ >= target; });
}

void LaggedDelivery::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    queue_.clear();
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void LaggedDelivery::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const absl::Time due = queue_.front().first;
    if (absl::Now() < due) {
      cv_.wait_for(lock, absl::ToChronoNanoseconds(due - absl::Now()));
      continue;
    }
    std::function<void()> fn = std::move(queue_.front().second);
    queue_.pop_front();
    lock.unlock();
    fn();
    lock.lock();
    ++done_;
    cv_.notify_all();
  }
}

}  // namespace topogang::testing
