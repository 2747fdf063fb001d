#include "sim/metrics.h"

#include <algorithm>
#include <cmath>

namespace topogang::sim {

int LeafLevel(const Cluster& c) {
  int l = c.LevelByName("leaf");
  return l > 0 ? l : std::max(0, c.node_level() - 1);
}

int SpineLevel(const Cluster& c) {
  int l = c.LevelByName("spine");
  return l > 0 ? l : std::max(0, LeafLevel(c) - 1);
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest rank.
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

void SummarizeJobs(const Cluster& c, const std::vector<JobResult>& jobs, double run_end,
                   Summary* s) {
  const int leaf = LeafLevel(c), spine = SpineLevel(c);
  const long leaf_gpus = c.MaxDomainGpus(leaf), spine_gpus = c.MaxDomainGpus(spine);
  std::vector<double> waits, jcts;
  double bw_sum = 0;
  int bw_n = 0, leaf_fit = 0, leaf_in = 0, spine_fit = 0, spine_in = 0;
  s->jobs = 0;
  s->unschedulable = 0;
  s->completed = 0;
  s->unfinished = 0;
  s->max_wait_256 = 0;
  s->never_started_256 = 0;
  s->restarts = 0;
  for (const JobResult& j : jobs) {
    if (j.unschedulable) {
      ++s->unschedulable;
      continue;
    }
    ++s->jobs;
    s->restarts += j.restarts;
    if (j.start < 0 || j.end < 0) {
      // Never finished: it counts until the end of the run.
      ++s->unfinished;
      if (j.start < 0 && j.gpus >= 256) ++s->never_started_256;
      waits.push_back(std::max(0.0, (j.start < 0 ? run_end : j.start) - j.arrival));
      jcts.push_back(std::max(0.0, run_end - j.arrival));
      if (j.start >= 0 && j.gpus >= 256) {
        s->max_wait_256 = std::max(s->max_wait_256, j.start - j.arrival);
      }
      continue;
    }
    const double wait = j.start - j.arrival;
    if (j.gpus >= 256) s->max_wait_256 = std::max(s->max_wait_256, wait);
    ++s->completed;
    waits.push_back(wait);
    jcts.push_back(j.end - j.arrival);
    if (j.members > 1) bw_sum += j.bandwidth, ++bw_n;
    if (j.gpus <= leaf_gpus) ++leaf_fit, leaf_in += j.level >= leaf;
    if (j.gpus <= spine_gpus) ++spine_fit, spine_in += j.level >= spine;
  }
  auto mean = [](const std::vector<double>& v) {
    double t = 0;
    for (double x : v) t += x;
    return v.empty() ? 0 : t / static_cast<double>(v.size());
  };
  s->mean_wait = mean(waits);
  s->p95_wait = Percentile(waits, 0.95);
  s->mean_jct = mean(jcts);
  s->p95_jct = Percentile(jcts, 0.95);
  s->mean_bandwidth = bw_n ? bw_sum / bw_n : 0;
  s->share_one_leaf = leaf_fit ? static_cast<double>(leaf_in) / leaf_fit : 0;
  s->share_one_spine = spine_fit ? static_cast<double>(spine_in) / spine_fit : 0;
}

long UnusableFreeGpus(const Cluster& c) {
  const int g = std::min(8, c.max_gpus_per_node());
  const int m = std::max(1, 64 / std::max(1, g));
  const int leaf = LeafLevel(c);
  long blocks = 0;
  for (int d = c.LevelBegin(leaf); d < c.LevelEnd(leaf); ++d) {
    blocks += c.MemberCapacity(d, kAnySku, g) / m;
  }
  return std::max(0L, static_cast<long>(c.FreeHealthy(0)) - blocks * m * g);
}

}  // namespace topogang::sim
