// Who evicts a preempted gang's pods: the API server's Eviction subresource in a cluster (which
// honours PodDisruptionBudgets), nothing in standalone mode (preemption is then off). Called from
// the eviction queue's own thread, never under the ledger lock.
#pragma once

#include "absl/status/status.h"
#include "daemon/binder.h"

namespace topogang {

class Evictor {
 public:
  virtual ~Evictor() = default;
  // Evicts one pod (`pod.node` is unused). dry_run: only asks whether the eviction would be
  // allowed, changing nothing. ResourceExhausted: a PodDisruptionBudget forbids it now (the API
  // server's 429); OK also when the pod is already gone.
  virtual absl::Status Evict(const PodBinding& pod, bool dry_run) = 0;
};

}  // namespace topogang
