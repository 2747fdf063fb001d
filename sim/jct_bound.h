// A lower bound on the mean JCT that no scheduler can beat on a trace: an absolute yardstick for
// issue #12, where every other figure compares topogang with baselines that could all be far
// from what is possible.
//
// Relaxation (each step only gives a scheduler more freedom, so the bound stays below any real
// schedule's mean JCT): every job runs at its ideal-placement duration (the simulator never runs
// one faster: stretch >= 1); the cluster is one pool of `capacity` GPUs with no topology,
// fragmentation or failures; and a job's work (GPUs x duration) may be spread over any GPUs at any
// time, preempted at will. The number of jobs finished by time t is then at most
//   min(SRPT's count on the pool,  #{jobs with arrival + duration <= t})
// since shortest-remaining-work-first finishes the most jobs by every t on one machine (Schrage
// 1968; D. R. Smith, "A new proof of the optimality of the shortest remaining processing time
// discipline", Operations Research 26(1), 1978), and no job ends before its own duration. The sum
// of JCTs is the integral of the jobs arrived but not finished.
//
// With a promise that every gang of >= large_gpus GPUs starts within large_max_wait_s of its
// arrival (the longest-256+-wait metric), those gangs have done at least
// U(t) = sum g * clamp(t - arrival - W, 0, duration) GPU-seconds by any t, so the smaller jobs
// have at most capacity * t - U(t) GPU-seconds of the pool by t (and by any later time too); a
// second SRPT count for them under that allowance bounds what the promise costs them.
#pragma once

#include <limits>
#include <vector>

#include "absl/status/statusor.h"

namespace topogang::sim {

struct BoundJob {
  double arrival_s = 0;
  long gpus = 1;
  double duration_s = 0;  // on an ideal placement
};

struct JctBoundOptions {
  // Time grid of the fluid schedule. Coarser is faster and looser, never wrong: jobs are taken as
  // arrived and finished at the start of their step. Raised where the trace would need more than
  // kMaxBoundSteps steps.
  double step_s = 10;
  double large_max_wait_s = std::numeric_limits<double>::infinity();  // inf: no promise
  long large_gpus = 256;
};

inline constexpr long kMaxBoundSteps = 4'000'000;

// InvalidArgument for a job that cannot fit `capacity_gpus`, a negative or non-finite arrival or
// duration, a non-positive step; FailedPrecondition when the large gangs' promise cannot be kept
// even with the pool to themselves. 0 for no jobs.
absl::StatusOr<double> MeanJctLowerBound(std::vector<BoundJob> jobs, long capacity_gpus,
                                         const JctBoundOptions& options = {});

}  // namespace topogang::sim
