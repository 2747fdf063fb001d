// Time is injected so the core stays deterministic: tests and the simulator drive a FakeClock,
// the daemon a SystemClock.
#pragma once

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
