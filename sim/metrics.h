// What one simulated policy produced, per job and in summary (definitions: docs/placement-
// quality.md#metrics).
#pragma once

#include <string>
#include <vector>

#include "topology/cluster.h"

namespace topogang::sim {

struct JobResult {
  std::string id;
  double arrival = 0;
  double start = -1;  // last (re)start; -1: never started
  double end = -1;
  long gpus = 0;
  int members = 0;
  int level = -1;        // lowest common level of the final placement
  double bandwidth = 0;  // of the final placement (Gb/s per GPU)
  double ideal_bandwidth = 0;
  // Of the final placement; time-weighted over its run when its speed changed there (a node
  // turned slow or back, its uplinks' share under contention).
  double stretch = 1;
  int restarts = 0;            // killed by failures and requeued
  int preemptions = 0;         // evicted for a higher-priority gang and requeued
  int growths = 0;             // elastic: times it grew
  int first_members = 0;       // members it first started with (elastic: its minimum)
  int peak_members = 0;        // most members it ever ran with
  bool slowed = false;         // ran with a member on a slow node
  bool unschedulable = false;  // larger than the cluster (or its required tier) even when empty
};

struct Summary {
  int jobs = 0, completed = 0, unschedulable = 0;
  int unfinished = 0;  // schedulable jobs that had not finished when the run ended
  double mean_wait = 0, p95_wait = 0;
  double mean_jct = 0, p95_jct = 0;
  double utilization = 0;  // GPU-time of running jobs / capacity, over the arrival window
  // The same with each job's GPU-time divided by its stretch: the work done, at ideal speed.
  // A slow placement burns GPU-time (utilization) without doing more work (goodput).
  double goodput = 0;
  double share_one_leaf = 0;  // of gangs that fit in a leaf, the share placed in one
  double share_one_spine = 0;
  double mean_bandwidth = 0;  // over gangs with more than one member
  // GPU-time held idle by gangs not running yet: pods of partially placed gangs (`default`),
  // GPUs the topogang queue holds for a starved gang.
  double partial_gpu_hours = 0;
  double frag_gpus = 0;     // time-averaged free GPUs unusable by a 64-GPU gang
  double frag_share = 0;    // ... as a share of free GPUs
  double max_wait_256 = 0;  // longest wait of a gang of >= 256 GPUs that started
  int never_started_256 = 0;
  double makespan = 0;
  int restarts = 0;
  int preemptions = 0;
  int growths = 0;
  // Failures: a running job hit by a node failure is "recovering" until it runs again on a full
  // set of members (0 when repaired in place at once; a job still waiting at the end counts
  // until then). Lost work: GPU-time since the last checkpoint, at ideal speed.
  int recoveries = 0;
  double mean_recovery = 0, p95_recovery = 0, max_recovery = 0;
  double lost_gpu_hours = 0;
  double spare_idle_gpu_hours = 0;  // GPU-time of hot spares left idle, over the whole run
};

struct PolicyResult {
  std::string policy;
  std::vector<JobResult> jobs;
  Summary summary;
  double snapshot_time = 0;
  std::vector<int> snapshot_leaves;            // domain ids
  std::vector<double> snapshot_used_fraction;  // per leaf
};

// Level used as "leaf" and "spine" in the metrics: tiers named so, else the one above the
// node and the one above that.
int LeafLevel(const Cluster& c);
int SpineLevel(const Cluster& c);

// Fills the job-derived fields of `s` (waits, JCTs, locality, bandwidth, 256+ waits). A job that
// never finished counts as finishing at `run_end` (and one that never started as starting
// there) in the waits and JCTs: leaving it out would reward a policy for starving it.
void SummarizeJobs(const Cluster& c, const std::vector<JobResult>& jobs, double run_end,
                   Summary* s);

// Free healthy GPUs that no 64-GPU gang (8 members x 8 GPUs, or 64/g members of the largest
// node size g <= 8) could use: free minus 64 x the number of such gangs that fit within leaves.
long UnusableFreeGpus(const Cluster& c);

double Percentile(std::vector<double> v, double p);

}  // namespace topogang::sim
