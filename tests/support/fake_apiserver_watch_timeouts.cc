// FakeApiServer::SetWatchTimeouts: watches that end by themselves, as a real API server's do.
#include <algorithm>
#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "tests/support/fake_apiserver.h"
#include "tests/support/fake_apiserver_watch.h"

namespace topogang::testing {

void FakeApiServer::SetWatchTimeouts(double time_scale, absl::Duration min_request_timeout,
                                     uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (time_scale <= 0) time_scale = 1;
  watch_time_scale_ = time_scale;
  min_request_timeout_ = min_request_timeout;
  timeout_rng_.seed(seed);
  if (!reaper_.joinable()) reaper_ = std::thread([this] { EndTimedOutWatches(); });
}

int FakeApiServer::timed_out_watches() {
  std::lock_guard<std::mutex> lock(mu_);
  return timed_out_watches_;
}

absl::Time FakeApiServer::WatchDeadlineLocked(const std::string& timeout_seconds) {
  if (watch_time_scale_ <= 0) return absl::InfiniteFuture();
  // get.go: `timeout := time.Duration(float64(minRequestTimeout) * (rand.Float64() + 1.0))`,
  // replaced by the client's timeoutSeconds when it gives one.
  absl::Duration timeout =
      min_request_timeout_ * (1 + std::uniform_real_distribution<double>(0, 1)(timeout_rng_));
  int64_t seconds = 0;
  if (absl::SimpleAtoi(timeout_seconds, &seconds) && seconds > 0) timeout = absl::Seconds(seconds);
  return absl::Now() + timeout / watch_time_scale_;
}

void FakeApiServer::EndTimedOutWatches() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!reaper_stop_) {
    const absl::Time now = absl::Now();
    absl::Time next = absl::InfiniteFuture();
    // Under the lock that every event is written under, so each end falls between two events.
    auto due = std::stable_partition(watches_.begin(), watches_.end(),
                                     [&](const auto& w) { return w->deadline > now; });
    for (auto it = due; it != watches_.end(); ++it) {
      (*it)->Close();
      ++timed_out_watches_;
    }
    if (due != watches_.end()) cv_.notify_all();
    watches_.erase(due, watches_.end());
    for (const auto& w : watches_) next = std::min(next, w->deadline);
    if (next == absl::InfiniteFuture()) {
      reaper_cv_.wait(lock);
    } else {
      reaper_cv_.wait_for(lock, absl::ToChronoNanoseconds(next - now));
    }
  }
}

void FakeApiServer::StopWatchTimeouts() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    reaper_stop_ = true;
  }
  reaper_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
}

}  // namespace topogang::testing
