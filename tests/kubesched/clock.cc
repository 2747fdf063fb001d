#include "tests/kubesched/clock.h"

namespace topogang::kubesched {

ScaledClock::ScaledClock(double time_scale)
    : scale_(time_scale > 0 ? time_scale : 1.0), start_(absl::Now()) {}

absl::Time ScaledClock::Now() const { return start_ + (absl::Now() - start_) * scale_; }

absl::Duration ScaledClock::ToReal(absl::Duration virtual_duration) const {
  return virtual_duration / scale_;
}

absl::Time FakeClock::Now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return now_;
}

void FakeClock::Advance(absl::Duration d) {
  std::lock_guard<std::mutex> lock(mu_);
  now_ += d;
}

}  // namespace topogang::kubesched
