// kube-scheduler's one scheduling loop, for the simulator's starts: a gang a policy starts runs
// only once kube-scheduler has cycled and bound every member pod, one pod per cycle, in the
// order the gangs started (pods of gangs started together wait for each other). Off by default
// (every policy starts at once, as every table before 2026-11-29 assumed); on, it is the price
// the real control plane puts on a Kubernetes scheduler's starts (docs/placement-quality.md,
// "kube-scheduler's own time").
#pragma once

namespace topogang::sim {

class BindLine {
 public:
  // `pods_per_s` <= 0: off. `retry_s`: seconds before the first pod of a started gang is tried
  // again (its backoff, at most podMaxBackoffSeconds: 10 s by default in kube-scheduler,
  // pkg/scheduler/backend/queue/scheduling_queue.go, DefaultPodMaxBackoffDuration).
  BindLine(double pods_per_s, double retry_s) : pods_per_s_(pods_per_s), retry_s_(retry_s) {}

  bool on() const { return pods_per_s_ > 0; }

  // Seconds from `now` until the last of `pods` pods started now is bound (0 when off). The
  // loop serves one pod at a time, so this queues behind the pods of earlier starts.
  double Delay(double now, int pods);

 private:
  double pods_per_s_;
  double retry_s_;
  double busy_until_ = 0;  // when the loop has bound every pod queued so far
};

}  // namespace topogang::sim
