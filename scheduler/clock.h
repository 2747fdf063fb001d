// Time is injected so the core stays deterministic: tests and the simulator drive a FakeClock,
// the daemon a SystemClock (its times are compared with wall-clock stamps from outside: token
// expiry, other replicas' records), leader election a SteadyClock.
#pragma once

#include <chrono>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace topogang {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

class SystemClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

// A reading of std::chrono::steady_clock as an absl::Time (its epoch is arbitrary): for intervals
// in real time that must not jump when the wall clock is stepped (NTP, an operator).
inline absl::Time SteadyNow() {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

// Wall time at construction advanced by std::chrono::steady_clock: never jumps (NTP steps,
// manual changes), like Go's monotonic time.Now() in client-go: deadlines measured by it neither
// stall for the length of a backward step nor all expire at a forward one. It drifts from wall
// time by every step since it was made, so it is not for comparing with stamps from outside.
class SteadyClock : public Clock {
 public:
  SteadyClock() : wall_start_(absl::Now()), steady_start_(SteadyNow()) {}
  absl::Time Now() const override { return wall_start_ + (SteadyNow() - steady_start_); }

 private:
  absl::Time wall_start_;
  absl::Time steady_start_;
};

class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::UnixEpoch()) : now_(start) {}
  absl::Time Now() const override { return now_; }
  void Advance(absl::Duration d) { now_ += d; }
  void Set(absl::Time t) { now_ = t; }

 private:
  absl::Time now_;
};

}  // namespace topogang
