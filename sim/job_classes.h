// Results per job class. About 9% of jobs are multi-pod gangs of at most 8 GPUs, and the
// NVLink/NIC gap makes them move the mean JCT more than their share: a single mean hides which
// class a policy wins or loses on (issue #12).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "sim/metrics.h"
#include "topology/cluster.h"

namespace topogang::sim {

// By shape, against the largest node and leaf of the cluster.
enum class JobClass { kSinglePod = 0, kWithinNode = 1, kWithinLeaf = 2, kLarger = 3 };
inline constexpr int kNumJobClasses = 4;

const char* JobClassName(JobClass c);
JobClass ClassOf(const Cluster& cluster, int members, long gpus);

struct ClassStats {
  int jobs = 0;
  int unfinished = 0;       // never finished by the end of the run
  double mean_jct = 0;      // unfinished jobs count with end = the run's end
  double mean_stretch = 0;  // of jobs that started
};

// Schedulable jobs only; `run_end` stands in for the end of jobs that never finished.
std::array<ClassStats, kNumJobClasses> StatsByClass(const Cluster& cluster,
                                                    const std::vector<JobResult>& jobs,
                                                    double run_end);

// A text table: one row per policy, per class "mean JCT (mean stretch)" and the job count.
std::string JobClassTable(const Cluster& cluster, const std::vector<PolicyResult>& results);

}  // namespace topogang::sim
