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
  // GB200 NVL72: whole trays (4 GPUs), many jobs within one 72-GPU rack, a tail over racks.
  static const auto* nvl72 = new std::vector<SizeBin>{
      {1, .15},  {4, .20},   {8, .12},   {16, .10},  {32, .08},   {64, .06},
      {72, .08}, {144, .08}, {288, .06}, {576, .04}, {1152, .02}, {2304, .01}};
  if (profile == "nvl72") return *nvl72;
  return profile == "llm" ? *llm : *mixed;
}

}  // namespace

double UserEstimate(double duration_s, double max_s, Rng& rng) {
  static constexpr double kRound[] = {900,   1800,  3600,   7200,   14400, 28800,
                                      43200, 86400, 172800, 259200, 604800};
  if (rng.Uniform() < 0.2) return std::max(max_s, duration_s);
  const double a = 0.1 + 0.9 * rng.Uniform();
  const double want = duration_s / a;
  double e = max_s;
  for (double r : kRound) {
    if (r >= want) {
      e = r;
      break;
    }
  }
  return std::max(duration_s, std::min(e, max_s));
}

namespace {

// The model of a job: drawn by GPUs among the models with room for four such jobs.
std::string PickSku(const GeneratorOptions& o, long gpus, Rng& rng) {
  double total = 0;
  for (const auto& [name, n] : o.skus) total += n >= 4 * gpus ? n : 0;
  if (total <= 0) return o.skus.front().first;
  double u = rng.Uniform() * total;
  for (const auto& [name, n] : o.skus) {
    if (n < 4 * gpus) continue;
    if ((u -= n) < 0) return name;
  }
  return o.skus.back().first;
}

}  // namespace

absl::StatusOr<Trace> GenerateTrace(const GeneratorOptions& o) {
  if (o.jobs <= 0 || o.jobs > kMaxTraceJobs) {
    return absl::InvalidArgumentError(absl::StrCat("jobs must be in [1, ", kMaxTraceJobs, "]"));
  }
  if (o.profile != "mixed" && o.profile != "llm" && o.profile != "nvl72") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown profile '", o.profile, "' (known: mixed, llm, nvl72)"));
  }
  if (!(o.estimate_share >= 0 && o.estimate_share <= 1) ||
      !(o.correlated_share >= 0 && o.correlated_share <= 1)) {
    return absl::InvalidArgumentError("estimate_share and correlated_share must be in [0, 1]");
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
  Rng extra(o.seed ^ 0x65737469u);  // estimates and models: their own stream (see generator.h)
  const bool nvl = o.profile == "nvl72";
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
    if (nvl && gpus > 1) {
      // Pods of whole trays (or of the job, below a tray).
      j.gpus_per_member = static_cast<int>(std::min<long>(gpus, node));
      j.members = static_cast<int>(gpus / j.gpus_per_member);
    } else if (gpus <= node) {
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
    if (nvl && j.members > 1) {
      // Tensor/expert-parallel jobs: more communication, and those that fit a rack ask for its
      // NVLink domain (70 % require it, as Slurm's --segment or Kueue's required topology would;
      // 30 % prefer it); larger ones prefer one leaf.
      j.comm_fraction = std::round((0.3 + 0.4 * rng.Uniform()) * 100) / 100;
      const double r = rng.Uniform();
      if (gpus <= o.nvlink_gpus) {
        (r < 0.7 ? j.required_tier : j.preferred_tier) = o.nvlink_tier;
      } else {
        j.preferred_tier = o.leaf_tier;
      }
    } else if (j.members > 1) {
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
    if (extra.Uniform() < o.estimate_share) {
      j.estimate_s = UserEstimate(j.duration_s, o.max_estimate_s, extra);
    }
    if (o.skus.size() > 1) j.sku = PickSku(o, gpus, extra);
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
    Rng groups(o.seed ^ 0x67726f75u);
    auto fail = [&](double x, const std::string& node) {
      NodeEvent e;
      e.kind = NodeEvent::Kind::kFail;
      e.time_s = std::round(x);
      e.node = node;
      e.duration_s = o.repair_s;
      t.events.push_back(std::move(e));
    };
    for (double x = rng.Exponential(1 / rate); x < span; x += rng.Exponential(1 / rate)) {
      const std::string& node = o.node_names[rng.Below(o.node_names.size())];
      if (o.correlated_share > 0 && !o.failure_groups.empty() &&
          groups.Uniform() < o.correlated_share) {
        for (const std::string& n : o.failure_groups[groups.Below(o.failure_groups.size())]) {
          fail(x, n);
        }
      } else {
        fail(x, node);
      }
    }
  }
  return t;
}

}  // namespace topogang::sim
