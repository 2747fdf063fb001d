// Synthetic traces whose shape follows what production GPU clusters report (docs/traces.md):
//  - most jobs are small, a heavy tail of large gangs dominates GPU-time: Microsoft Philly
//    (Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training
//    Workloads", USENIX ATC'19), Alibaba PAI (Weng et al., "MLaaS in the Wild", NSDI'22), and
//    for LLM development Shanghai AI Lab's Acme (Hu et al., "Characterization of Large Language
//    Model Development in the Datacenter", NSDI'24: evaluation jobs are the many, pretraining
//    jobs the few that hold most GPU-time);
//  - run times are heavy-tailed (log-normal here) and grow with job size (all three);
//  - arrivals are Poisson at the rate that offers the requested load to the cluster.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/trace.h"

namespace topogang::sim {

struct GeneratorOptions {
  int jobs = 1000;
  uint64_t seed = 1;
  std::string profile = "mixed";  // "mixed" (Philly/PAI-like) or "llm" (Acme-like)
  long cluster_gpus = 16384;      // sizes the arrival rate
  double load = 0.9;              // offered GPU-time / capacity over the arrival window
  long max_job_gpus = 0;          // 0: cluster_gpus / 4
  int gpus_per_node = 8;
  std::string leaf_tier = "leaf", spine_tier = "spine";
  long spine_gpus = 0;  // jobs up to this size may require one spine; 0: none do
  // Node failures written as @fail rows (needs node_names).
  double failures_per_node_day = 0;
  double repair_s = 4 * 3600;
  std::vector<std::string> node_names;
};

absl::StatusOr<Trace> GenerateTrace(const GeneratorOptions& options);

}  // namespace topogang::sim
