// Helpers shared by the GangQueue tests: gangs, queue options, and gangs already running.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/gang_scheduler.h"
#include "scheduler/queue_policy.h"

namespace topogang::queue_test {

inline GangSpec Gang(std::string name, int members, int gpus, int priority = 0) {
  GangSpec g;
  g.name = std::move(name);
  g.members = members;
  g.gpus_per_member = gpus;
  g.priority = priority;
  return g;
}

// Holds as soon as a gang cannot start (no starvation wait, no readiness condition).
inline QueueOptions HoldAtOnce() {
  QueueOptions opts;
  opts.starvation_threshold = absl::ZeroDuration();
  opts.hold_min_gpus = 1;
  opts.hold_ready_fraction = 0;
  opts.hold_max_shortfall_share = 1;
  return opts;
}

// A one-member gang already running on `count` GPUs of `node` from GPU `first`, with a run-time
// estimate (zero: none).
inline void RunOn(GangScheduler& s, const std::string& name, int node, int first, int count,
                  absl::Duration estimate = absl::ZeroDuration()) {
  GangSpec g = Gang(name, 1, count);
  g.runtime_estimate = estimate;
  Placement p;
  MemberPlacement m{node, {}};
  for (int i = 0; i < count; ++i) m.gpus.push_back(s.cluster().node(node).gpu_begin + first + i);
  p.members.push_back(m);
  ASSERT_TRUE(s.Adopt(g, p, GangState::kRunning, absl::UnixEpoch()).ok());
}

// The nodes of the GPUs the queue holds for `gang`.
inline std::vector<int> HeldNodes(const GangScheduler& s, const std::string& gang) {
  std::vector<int> nodes;
  if (const GangRecord* h = s.Find(GangQueue::HoldName(gang))) {
    for (const MemberPlacement& m : h->placement.members) nodes.push_back(m.node);
  }
  return nodes;
}

}  // namespace topogang::queue_test
