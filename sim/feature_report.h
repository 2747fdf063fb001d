// Text tables for the policies of issue #13, one per question docs/placement-quality.md asks:
// what preemption buys high-priority gangs (and costs the others), what elastic gangs buy in
// goodput, how fast failed gangs run again with and without hot spares. Each is empty when the
// trace has nothing it could show (one priority, no elastic job, no failure hit a job).
#pragma once

#include <string>
#include <vector>

#include "sim/metrics.h"
#include "sim/trace.h"

namespace topogang::sim {

// Jobs of the trace's highest priority against the rest (unfinished jobs count to the run's end).
std::string PriorityTable(const Trace& trace, const std::vector<PolicyResult>& results);
// Goodput and JCT, and the elastic jobs' sizes: members they started with and peaked at.
std::string ElasticTable(const Trace& trace, const std::vector<PolicyResult>& results);
// Time from a failure to running again, work lost, and what the spares idled.
std::string RecoveryTable(const std::vector<PolicyResult>& results);
// Gangs of `large_gpus`+ GPUs against smaller jobs: how many ran on a slow node (@slow events),
// and the large gangs' JCT and stretch.
std::string SlowNodeTable(const Trace& trace, const std::vector<PolicyResult>& results,
                          long large_gpus = 64);

}  // namespace topogang::sim
