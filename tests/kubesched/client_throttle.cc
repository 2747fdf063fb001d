#include "tests/kubesched/client_throttle.h"

#include <algorithm>

namespace topogang::kubesched {

ClientThrottle::ClientThrottle(const Clock& clock, double qps, int burst)
    : clock_(clock), qps_(qps), burst_(std::max(1, burst)), tokens_(burst_), last_(clock.Now()) {
  if (qps_ > 0) thread_ = std::thread([this] { Run(); });
}

ClientThrottle::~ClientThrottle() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

absl::Duration ClientThrottle::Reserve() {
  if (qps_ <= 0) return absl::ZeroDuration();
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = std::max(clock_.Now(), last_);
  tokens_ = std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
  last_ = now;
  tokens_ -= 1;
  if (tokens_ >= 0) return absl::ZeroDuration();
  const absl::Duration wait = absl::Seconds(-tokens_ / qps_);
  ++throttled_;
  waited_ += wait;
  return wait;
}

void ClientThrottle::Call(std::function<void()> call) {
  const absl::Duration wait = Reserve();
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Behind the calls still queued or running on the throttle's thread even when this one's
    // token is already here: their tokens came first. (Run in the caller, it could overtake
    // them on a loaded machine.) Tokens come in order, so the queue stays sorted by due time.
    if (!stopping_ && (wait > absl::ZeroDuration() || !pending_.empty() || running_)) {
      pending_.emplace_back(absl::Now() + clock_.ToReal(wait), std::move(call));
      cv_.notify_all();
      return;
    }
  }
  call();
}

bool ClientThrottle::Wait() {
  const absl::Duration wait = Reserve();
  if (wait <= absl::ZeroDuration()) return true;
  const absl::Time due = absl::Now() + clock_.ToReal(wait);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, absl::ToChronoNanoseconds(clock_.ToReal(wait)),
               [&] { return stopping_ || absl::Now() >= due; });
  return !stopping_;
}

void ClientThrottle::Stop() {
  std::deque<std::pair<absl::Time, std::function<void()>>> now;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    now.swap(pending_);
    cv_.notify_all();
  }
  for (auto& [due, call] : now) call();
}

void ClientThrottle::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (pending_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const absl::Time due = pending_.front().first;
    if (absl::Now() < due) {
      cv_.wait_for(lock, absl::ToChronoNanoseconds(due - absl::Now()));
      continue;
    }
    std::function<void()> call = std::move(pending_.front().second);
    pending_.pop_front();
    running_ = true;
    lock.unlock();
    call();
    lock.lock();
    running_ = false;
  }
}

int64_t ClientThrottle::throttled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return throttled_;
}

absl::Duration ClientThrottle::waited() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waited_;
}

}  // namespace topogang::kubesched
