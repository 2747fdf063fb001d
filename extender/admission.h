// The step between "a gang asks for GPUs" and "its GPUs are reserved". Direct admission reserves
// whenever the gang fits now; a queue policy (scheduler/queue_policy.h) can instead hold GPUs for
// large gangs that have waited too long, so a stream of small gangs cannot starve them. The
// service only talks to this interface, so the policy can be swapped without touching the verbs.
#pragma once

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/gang_scheduler.h"

namespace topogang {

class Admission {
 public:
  virtual ~Admission() = default;
  // Called under the DaemonState lock. Reserves every GPU of the gang or nothing; the error says
  // why it cannot start now.
  virtual absl::StatusOr<const GangRecord*> Admit(GangScheduler& sched, const GangSpec& gang,
                                                  absl::Time now) = 0;
  // The gang's reservation is gone (bound, expired, released); lets a queue forget it.
  virtual void Forget(const std::string& /*gang*/) {}
};

class DirectAdmission : public Admission {
 public:
  absl::StatusOr<const GangRecord*> Admit(GangScheduler& sched, const GangSpec& gang,
                                          absl::Time now) override {
    return sched.Reserve(gang, now);
  }
};

}  // namespace topogang
