// One loop that handles pods one after another at a fixed rate, first come first served: how
// the simulator prices the control plane's own time for a Kubernetes scheduler's gangs.
// - Binding: kube-scheduler schedules one pod per cycle, so a started gang runs only once its
//   last pod is bound, behind the pods of gangs started before it
//   (`--bind-pods-per-s`, `--bind-retry-s`).
// - Creation: the workload controller creates a job's pods through the controller manager's
//   client, which kube-controller-manager rate-limits for all controllers together
//   (--kube-api-qps, 20 by default), so a queue sees a gang only once its last pod exists
//   (`--pods-created-per-s`).
// Off by default (every table before 2026-11-29 assumed neither); docs/placement-quality.md,
// "The control plane's own time".
#pragma once

#include <map>

namespace topogang::sim {

class PodLine {
 public:
  // `pods_per_s` <= 0: off.
  explicit PodLine(double pods_per_s) : pods_per_s_(pods_per_s) {}

  bool enabled() const { return pods_per_s_ > 0; }

  // Seconds from `now` until the last of `pods` pods handed over now is done (0 when off). They
  // join the line `lag_s` after now: for binding, the pods of a gang that had to wait sit out
  // their backoff first (at most podMaxBackoffSeconds, 10 s by default:
  // pkg/scheduler/backend/queue/scheduling_queue.go, DefaultPodMaxBackoffDuration), while a
  // gang that starts as its pods first ask is bound on that first attempt, with no lag.
  // Pods still in backoff are not in kube-scheduler's active queue, so pods handed over later
  // that join sooner use the idle time before them; time already promised to a batch is never
  // taken back, so every delay returned stays true. Calls must come in time order.
  double Delay(double now, int pods, double lag_s = 0);

 private:
  double pods_per_s_;
  double last_now_ = 0;
  std::map<double, double> busy_;  // start -> end of the time promised, disjoint, merged
};

}  // namespace topogang::sim
