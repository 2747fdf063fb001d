// kube-scheduler's notion of time, scaled so tests stay fast.
//
// Every duration kube-scheduler uses (pod backoff, httpTimeout, the 1 s and 30 s flush periods,
// the 5 min unschedulable limit) is a *virtual* duration here. A ScaledClock runs virtual time
// `time_scale` times faster than the wall clock: with time_scale 10 a 1 s backoff takes 100 ms
// of real time. The queue and the emulator only ever read Now() and convert the virtual waits
// they need into real ones with ToReal(), so a FakeClock can drive the queue in unit tests
// without any sleeping at all.
//
// Thread-safety: both clocks are safe to use from any thread.
#pragma once

#include <atomic>
#include <mutex>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace topogang::kubesched {

class Clock {
 public:
  virtual ~Clock() = default;
  // The current virtual (kube-scheduler) time.
  virtual absl::Time Now() const = 0;
  // How long a virtual duration lasts on the wall clock.
  virtual absl::Duration ToReal(absl::Duration virtual_duration) const = 0;
};

// Virtual time starts at the wall-clock time of construction and then runs `time_scale` times
// faster than it (time_scale 1 is real time).
class ScaledClock : public Clock {
 public:
  explicit ScaledClock(double time_scale);
  absl::Time Now() const override;
  absl::Duration ToReal(absl::Duration virtual_duration) const override;
  double time_scale() const { return scale_; }

 private:
  double scale_;
  absl::Time start_;
};

// Time moves only when a test says so.
class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1800000000)) : now_(start) {}
  absl::Time Now() const override;
  absl::Duration ToReal(absl::Duration) const override { return absl::ZeroDuration(); }
  void Advance(absl::Duration d);

 private:
  mutable std::mutex mu_;
  absl::Time now_;
};

}  // namespace topogang::kubesched
