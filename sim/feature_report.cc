#include "sim/feature_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace topogang::sim {
namespace {

std::string Dur(double s) {
  if (s < 120) return absl::StrFormat("%.0fs", s);
  if (s < 7200) return absl::StrFormat("%.1fm", s / 60);
  return absl::StrFormat("%.1fh", s / 3600);
}

struct Stats {
  int n = 0;
  double mean_wait = 0, p95_wait = 0, mean_jct = 0, p95_jct = 0;
};

// Waits and JCTs of the schedulable jobs `keep` selects, as SummarizeJobs counts them.
template <typename Keep>
Stats StatsOf(const PolicyResult& r, Keep keep) {
  std::vector<double> waits, jcts;
  const double end = r.summary.makespan;
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const JobResult& j = r.jobs[i];
    if (j.unschedulable || !keep(i)) continue;
    const double start = j.start < 0 ? end : j.start;
    waits.push_back(std::max(0.0, start - j.arrival));
    jcts.push_back(std::max(0.0, (j.end < 0 ? end : j.end) - j.arrival));
  }
  Stats s;
  s.n = static_cast<int>(jcts.size());
  for (size_t i = 0; i < jcts.size(); ++i) {
    s.mean_wait += waits[i] / s.n;
    s.mean_jct += jcts[i] / s.n;
  }
  s.p95_wait = Percentile(waits, 0.95);
  s.p95_jct = Percentile(jcts, 0.95);
  return s;
}

std::string MeanP95(double mean, double p95) { return absl::StrCat(Dur(mean), " / ", Dur(p95)); }

// Left-aligned columns as wide as their widest cell.
std::string Render(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      absl::StrAppend(&line, row[c], std::string(width[c] - row[c].size() + 2, ' '));
    }
    line.erase(line.find_last_not_of(' ') + 1);
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace

std::string PriorityTable(const Trace& trace, const std::vector<PolicyResult>& results) {
  if (trace.jobs.empty()) return "";
  int hi = trace.jobs[0].priority, lo = hi;
  for (const TraceJob& j : trace.jobs) {
    hi = std::max(hi, j.priority);
    lo = std::min(lo, j.priority);
  }
  if (hi == lo) return "";
  std::vector<std::vector<std::string>> rows = {
      {"POLICY", absl::StrCat("PRIO ", hi, " WAIT mean/p95"), absl::StrCat("PRIO ", hi, " JCT"),
       "OTHERS WAIT", "OTHERS JCT", "PREEMPTED", "LOST GPU-h", "GOODPUT"}};
  for (const PolicyResult& r : results) {
    const Stats h = StatsOf(r, [&](size_t i) { return trace.jobs[i].priority == hi; });
    const Stats o = StatsOf(r, [&](size_t i) { return trace.jobs[i].priority != hi; });
    rows.push_back({r.policy, MeanP95(h.mean_wait, h.p95_wait), MeanP95(h.mean_jct, h.p95_jct),
                    MeanP95(o.mean_wait, o.p95_wait), MeanP95(o.mean_jct, o.p95_jct),
                    absl::StrCat(r.summary.preemptions),
                    absl::StrFormat("%.0f", r.summary.lost_gpu_hours),
                    absl::StrFormat("%.1f%%", 100 * r.summary.goodput)});
  }
  return absl::StrCat("Priority classes: jobs of priority ", hi,
                      " against the rest (mean / p95; unfinished jobs count to the end)\n",
                      Render(rows));
}

std::string ElasticTable(const Trace& trace, const std::vector<PolicyResult>& results) {
  int elastic = 0;
  for (const TraceJob& j : trace.jobs) elastic += j.elastic();
  if (elastic == 0) return "";
  std::vector<std::vector<std::string>> rows = {{"POLICY", "UTIL", "GOODPUT", "JCT mean/p95",
                                                 "ELASTIC JCT", "MEMBERS first/peak/max",
                                                 "GROWTHS"}};
  for (const PolicyResult& r : results) {
    const Stats e = StatsOf(r, [&](size_t i) { return trace.jobs[i].elastic(); });
    double first = 0, peak = 0, max = 0;
    for (size_t i = 0; i < r.jobs.size(); ++i) {
      if (!trace.jobs[i].elastic() || r.jobs[i].first_members == 0) continue;
      first += r.jobs[i].first_members;
      peak += r.jobs[i].peak_members;
      max += trace.jobs[i].members;
    }
    rows.push_back({r.policy, absl::StrFormat("%.1f%%", 100 * r.summary.utilization),
                    absl::StrFormat("%.1f%%", 100 * r.summary.goodput),
                    MeanP95(r.summary.mean_jct, r.summary.p95_jct), MeanP95(e.mean_jct, e.p95_jct),
                    absl::StrFormat("%.0f%% / %.0f%%", max > 0 ? 100 * first / max : 0,
                                    max > 0 ? 100 * peak / max : 0),
                    absl::StrCat(r.summary.growths)});
  }
  return absl::StrCat(elastic,
                      " elastic jobs (min_members < members); MEMBERS: of their maximum, summed "
                      "over the elastic jobs that started\n",
                      Render(rows));
}

std::string RecoveryTable(const std::vector<PolicyResult>& results) {
  bool any = false;
  for (const PolicyResult& r : results) any = any || r.summary.recoveries > 0;
  if (!any) return "";
  std::vector<std::vector<std::string>> rows = {{"POLICY", "HIT", "RECOVERY mean/p95/max",
                                                 "LOST GPU-h", "SPARE IDLE GPU-h", "JCT mean/p95",
                                                 "GOODPUT"}};
  for (const PolicyResult& r : results) {
    const Summary& s = r.summary;
    rows.push_back(
        {r.policy, absl::StrCat(s.recoveries),
         absl::StrCat(Dur(s.mean_recovery), " / ", Dur(s.p95_recovery), " / ", Dur(s.max_recovery)),
         absl::StrFormat("%.0f", s.lost_gpu_hours), absl::StrFormat("%.0f", s.spare_idle_gpu_hours),
         MeanP95(s.mean_jct, s.p95_jct), absl::StrFormat("%.1f%%", 100 * s.goodput)});
  }
  return absl::StrCat(
      "Failures: HIT = running jobs a node failure interrupted; RECOVERY = from the failure to "
      "running again (0 when repaired at once); LOST = work since the last checkpoint\n",
      Render(rows));
}

std::string SlowNodeTable(const Trace& trace, const std::vector<PolicyResult>& results,
                          long large_gpus) {
  int slow = 0;
  for (const NodeEvent& e : trace.events) slow += e.kind == NodeEvent::Kind::kSlow;
  if (slow == 0) return "";
  std::vector<std::vector<std::string>> rows = {
      {"POLICY", absl::StrCat(large_gpus, "+ GPU GANGS ON SLOW NODES"), "SMALLER ON SLOW NODES",
       absl::StrCat(large_gpus, "+ JCT mean/p95"), absl::StrCat(large_gpus, "+ STRETCH"),
       "JCT mean/p95", "GOODPUT"}};
  for (const PolicyResult& r : results) {
    int large = 0, small = 0, large_slowed = 0, small_slowed = 0, started = 0;
    double stretch = 0;
    for (const JobResult& j : r.jobs) {
      if (j.unschedulable) continue;
      const bool is_large = j.gpus >= large_gpus;
      (is_large ? large : small) += 1;
      (is_large ? large_slowed : small_slowed) += j.slowed;
      if (is_large && j.start >= 0) {
        stretch += j.stretch;
        ++started;
      }
    }
    const Stats l = StatsOf(r, [&](size_t i) { return trace.jobs[i].total_gpus() >= large_gpus; });
    rows.push_back({r.policy, absl::StrCat(large_slowed, " of ", large),
                    absl::StrCat(small_slowed, " of ", small), MeanP95(l.mean_jct, l.p95_jct),
                    absl::StrFormat("%.3f", started > 0 ? stretch / started : 0),
                    MeanP95(r.summary.mean_jct, r.summary.p95_jct),
                    absl::StrFormat("%.1f%%", 100 * r.summary.goodput)});
  }
  return absl::StrCat(slow,
                      " slow nodes (@slow); ON SLOW NODES: jobs that ran with a member on one; "
                      "STRETCH: mean of the final placement's\n",
                      Render(rows));
}

}  // namespace topogang::sim
