// What a gang queue remembers of a waiting gang across a restart or a failover (the daemon keeps
// it in a ConfigMap: kube/queue_journal.h). Its arrival sets its place in line and how long it has
// starved; its patience starts say how long it has already declined a slower placement, or one
// with a thin side: a new leader that started them again would make such a gang wait up to the
// whole locality patience (30 minutes) or thin-side patience (6 hours) once more.
#pragma once

#include "absl/time/time.h"

namespace topogang {

struct QueueSeniority {
  absl::Time arrival;
  absl::Time could_start = absl::InfiniteFuture();  // GangQueue::Entry::could_start
  absl::Time thin_since = absl::InfiniteFuture();   // GangQueue::Entry::thin_since
  bool operator==(const QueueSeniority&) const = default;
};

}  // namespace topogang
