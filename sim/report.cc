#include "sim/report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace topogang::sim {

std::string SummaryCsv(const std::vector<PolicyResult>& results) {
  std::string out =
      "policy,jobs,completed,unschedulable,mean_wait_s,p95_wait_s,mean_jct_s,p95_jct_s,"
      "utilization,goodput,share_one_leaf,share_one_spine,mean_bandwidth_gbps,idle_held_gpu_hours,"
      "frag_gpus,frag_share,max_wait_256_s,never_started_256,restarts,makespan_s,unfinished\n";
  for (const PolicyResult& r : results) {
    const Summary& s = r.summary;
    absl::StrAppendFormat(&out,
                          "%s,%d,%d,%d,%.1f,%.1f,%.1f,%.1f,%.4f,%.4f,%.4f,%.4f,%.1f,%.1f,%.1f,%.4f,"
                          "%.1f,%d,%d,%.1f,%d\n",
                          r.policy, s.jobs, s.completed, s.unschedulable, s.mean_wait, s.p95_wait,
                          s.mean_jct, s.p95_jct, s.utilization, s.goodput, s.share_one_leaf,
                          s.share_one_spine, s.mean_bandwidth, s.partial_gpu_hours, s.frag_gpus,
                          s.frag_share, s.max_wait_256, s.never_started_256, s.restarts, s.makespan,
                          s.unfinished);
  }
  return out;
}

std::string JobsCsv(const PolicyResult& r, const Cluster& c) {
  std::string out =
      "id,arrival_s,start_s,end_s,gpus,members,span_level,bandwidth_gbps,ideal_bandwidth_gbps,"
      "stretch,restarts\n";
  for (const JobResult& j : r.jobs) {
    absl::StrAppendFormat(&out, "%s,%.1f,%.1f,%.1f,%d,%d,%s,%.1f,%.1f,%.4f,%d\n", j.id, j.arrival,
                          j.start, j.end, j.gpus, j.members,
                          j.level >= 0 ? c.LevelName(j.level) : std::string("-"), j.bandwidth,
                          j.ideal_bandwidth, j.stretch, j.restarts);
  }
  return out;
}

}  // namespace topogang::sim
