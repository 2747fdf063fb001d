// Synthetic traces whose shape follows what production GPU clusters report (docs/traces.md):
//  - most jobs are small, a heavy tail of large gangs dominates GPU-time: Microsoft Philly
//    (Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training
//    Workloads", USENIX ATC'19), Alibaba PAI (Weng et al., "MLaaS in the Wild", NSDI'22), and
//    for LLM development Shanghai AI Lab's Acme (Hu et al., "Characterization of Large Language
//    Model Development in the Datacenter", NSDI'24: evaluation jobs are the many, pretraining
//    jobs the few that hold most GPU-time);
//  - run times are heavy-tailed (log-normal here) and grow with job size (all three);
//  - arrivals are Poisson at the rate that offers the requested load to the cluster;
//  - users' run-time estimates are modal and over-estimate (Mu'alem & Feitelson, "Utilization,
//    predictability, workloads, and user runtime estimates in scheduling the IBM SP2 with
//    backfilling", IEEE TPDS 12(6), 2001: runtime/estimate spread almost uniformly over (0, 1];
//    Tsafrir, Etsion & Feitelson, "Modeling user runtime estimates", JSSPP 2005: most estimates
//    are one of a few round values, the maximum allowed among the most popular);
//  - failures hit single nodes, and some take a whole leaf or rack down at once (power, a leaf
//    switch, a cooling loop: the correlated failures of Meta's Llama 3 report, Dubey et al. 2024).
// The attributes added later (estimates, GPU models, correlated failures) come from their own
// random streams, so a seed still gives the same jobs, sizes and arrivals as before.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/rng.h"
#include "sim/trace.h"

namespace topogang::sim {

struct GeneratorOptions {
  int jobs = 1000;
  uint64_t seed = 1;
  // "mixed" (Philly/PAI-like), "llm" (Acme-like) or "nvl72" (LLM jobs on GB200 NVL72 racks:
  // gangs of whole 4-GPU trays, those that fit a rack ask for its NVLink domain).
  std::string profile = "mixed";
  long cluster_gpus = 16384;  // sizes the arrival rate
  double load = 0.9;          // offered GPU-time / capacity over the arrival window
  long max_job_gpus = 0;      // 0: cluster_gpus / 4
  int gpus_per_node = 8;
  std::string leaf_tier = "leaf", spine_tier = "spine";
  long spine_gpus = 0;  // jobs up to this size may require one spine; 0: none do
  // nvl72: the NVLink-domain tier and its size in GPUs.
  std::string nvlink_tier = "nvlink";
  long nvlink_gpus = 72;
  // GPU models (name, GPUs of that model in the cluster). With two or more, every job gets one
  // (the `sku` column), drawn in proportion to GPUs among the models with room for it.
  std::vector<std::pair<std::string, long>> skus;
  // Share of jobs that carry a run-time estimate (estimate_s); the rest give none.
  double estimate_share = 0.5;
  double max_estimate_s = 7 * 86400;  // the longest estimate allowed (and the longest run)
  // Node failures written as @fail rows (needs node_names).
  double failures_per_node_day = 0;
  double repair_s = 4 * 3600;
  std::vector<std::string> node_names;
  // Share of failure events that take a whole group down at once (all its nodes, same time,
  // same repair), e.g. the nodes of each leaf or rack; the rest take one node.
  double correlated_share = 0;
  std::vector<std::vector<std::string>> failure_groups;
};

absl::StatusOr<Trace> GenerateTrace(const GeneratorOptions& options);

// A user's estimate for a job that runs `duration_s`: the maximum with probability 1/5, else
// duration / a (a uniform in [0.1, 1]) rounded up to the next round value (15 m, 30 m, 1 h, 2 h,
// 4 h, 8 h, 12 h, 1 d, 2 d, 3 d, 7 d), never above `max_s` nor below the duration.
double UserEstimate(double duration_s, double max_s, Rng& rng);

}  // namespace topogang::sim
