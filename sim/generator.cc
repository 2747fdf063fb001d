#include "sim/generator.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "sim/rng.h"

namespace topogang::sim {
namespace {

struct SizeBin {
  long gpus;
  double p;
};

// Job sizes (GPUs) and their probabilities. "mixed": half the jobs use one GPU and ~1 % use
// 256 or more, as in the Philly/PAI characterisations; "llm": fewer single-GPU jobs, more
// 8-GPU evaluation jobs and a tail to thousands of GPUs for pretraining, as in Acme.
const std::vector<SizeBin>& Bins(const std::string& profile) {
  static const auto* mixed = new std::vector<SizeBin>{
      {1, .50},   {2, .08},    {4, .10},    {8, .18},    {16, .05},    {32, .035},
      {64, .025}, {128, .015}, {256, .008}, {512, .004}, {1024, .002}, {2048, .001}};
  static const auto* llm = new std::vector<SizeBin>{
      {1, .30},   {2, .05},   {4, .10},   {8, .25},    {16, .08},    {32, .06},    {64, .05},
      {128, .04}, {256, .03}, {512, .02}, {1024, .01}, {2048, .006}, {4096, .003}, {8192, .001}};
  return profile == "llm" ? *llm : *mixed;
}

}  // namespace

absl::StatusOr<Trace> GenerateTrace(const GeneratorOptions& o) {
  if (o.jobs <= 0 || o.jobs > kMaxTraceJobs) {
    return absl::InvalidArgumentError(absl::StrCat("jobs must be in [1, ", kMaxTraceJobs, "]"));
  }
  if (o.profile != "mixed" && o.profile != "llm") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown profile '", o.profile, "' (known: mixed, llm)"));
  }
  if (!(o.load > 0 && o.load <= 10)) return absl::InvalidArgumentError("load must be in (0, 10]");
  if (o.cluster_gpus <= 0 || o.gpus_per_node <= 0) {
    return absl::InvalidArgumentError("cluster_gpus and gpus_per_node must be positive");
  }
  const long max_gpus = o.max_job_gpus > 0 ? o.max_job_gpus : std::max(1L, o.cluster_gpus / 4);
  std::vector<SizeBin> bins;
  for (const SizeBin& b : Bins(o.profile)) {
    if (b.gpus <= max_gpus) bins.push_back(b);
  }
  double psum = 0;
  for (const SizeBin& b : bins) psum += b.p;

  Rng rng(o.seed);
  Trace t;
  double work = 0;  // GPU-seconds
  for (int i = 0; i < o.jobs; ++i) {
    double u = rng.Uniform() * psum;
    long gpus = bins.back().gpus;
    for (const SizeBin& b : bins) {
      if ((u -= b.p) < 0) {
        gpus = b.gpus;
        break;
      }
    }
    TraceJob j;
    j.id = absl::StrCat("j", i);
    const int node = o.gpus_per_node;
    if (gpus <= node) {
      if (gpus > 1 && rng.Uniform() < 0.25) {
        // One pod per GPU group (e.g. DDP launched per GPU): members of 1, 2 or 4 GPUs.
        int g = 1 << rng.Below(static_cast<uint64_t>(std::log2(static_cast<double>(gpus))));
        j.gpus_per_member = g;
        j.members = static_cast<int>(gpus / g);
      } else {
        j.gpus_per_member = static_cast<int>(gpus);
        j.members = 1;
      }
    } else {
      j.gpus_per_member = (rng.Uniform() < 0.9 || node < 8) ? node : node / 2;
      j.members = static_cast<int>(gpus / j.gpus_per_member);
    }
    // Log-normal run time, median growing with size: 15 min for 1 GPU, ~2 h for 1024.
    const double median = 900.0 * std::pow(static_cast<double>(gpus), 0.3);
    j.duration_s = std::round(std::clamp(rng.LogNormal(median, 1.5), 60.0, 7 * 86400.0));
    if (j.members > 1) {
      j.comm_fraction = std::round((0.2 + 0.4 * rng.Uniform()) * 100) / 100;
      double r = rng.Uniform();
      if (r < 0.15 && o.spine_gpus > 0 && gpus <= o.spine_gpus) {
        j.required_tier = o.spine_tier;
      } else if (r < 0.85) {
        j.preferred_tier = o.leaf_tier;
      }
    } else {
      j.comm_fraction = std::round((0.1 + 0.2 * rng.Uniform()) * 100) / 100;
    }
    work += static_cast<double>(gpus) * j.duration_s;
    t.jobs.push_back(std::move(j));
  }
  const double span = work / (o.load * static_cast<double>(o.cluster_gpus));
  const double mean_gap = span / o.jobs;
  double now = 0;
  for (TraceJob& j : t.jobs) {
    j.arrival_s = std::round(now);
    now += rng.Exponential(mean_gap);
  }
  if (o.failures_per_node_day > 0 && !o.node_names.empty()) {
    const double rate = o.failures_per_node_day * static_cast<double>(o.node_names.size()) / 86400;
    for (double x = rng.Exponential(1 / rate); x < span; x += rng.Exponential(1 / rate)) {
      NodeEvent e;
      e.kind = NodeEvent::Kind::kFail;
      e.time_s = std::round(x);
      e.node = o.node_names[rng.Below(o.node_names.size())];
      e.duration_s = o.repair_s;
      t.events.push_back(std::move(e));
    }
  }
  return t;
}

}  // namespace topogang::sim
