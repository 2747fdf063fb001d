// What a gang queue remembers of a waiting gang across a restart or a failover (the daemon keeps
// it in a ConfigMap: kube/queue_journal.h). Its arrival sets its place in line and how long it has
// starved; its patience starts say how long it has already declined a slower placement, or one
// with a thin side: a new leader that started them again would make such a gang wait up to the
// whole locality patience (30 minutes) or thin-side patience (6 hours) once more.
#pragma once

#include <map>
#include <string>

#include "absl/time/time.h"

namespace topogang {

struct QueueSeniority {
  absl::Time arrival;
  absl::Time could_start = absl::InfiniteFuture();  // GangQueue::Entry::could_start
  absl::Time thin_since = absl::InfiniteFuture();   // GangQueue::Entry::thin_since
  bool operator==(const QueueSeniority&) const = default;
};

// All a queue hands to its next leader: every waiting gang's seniority, and the last pass that
// found the large gangs overloading the cluster (QueueOptions::large_in_order_overload_backlog).
// Without the second, a new leader would start "not overloaded" and, until its first pass, stop
// mid-size gangs behind a starved one that the share rule would let run.
struct QueueMemory {
  std::map<std::string, QueueSeniority> arrivals;
  absl::Time large_overload_seen = absl::InfinitePast();  // InfinitePast: none remembered
  bool operator==(const QueueMemory&) const = default;
};

}  // namespace topogang
