#include "sim/job_classes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace topogang::sim {

const char* JobClassName(JobClass c) {
  switch (c) {
    case JobClass::kSinglePod:
      return "single pod";
    case JobClass::kWithinNode:
      return "multi-pod, fits a node";
    case JobClass::kWithinLeaf:
      return "fits a leaf";
    case JobClass::kLarger:
      return "larger";
  }
  return "?";
}

JobClass ClassOf(const Cluster& c, int members, long gpus) {
  if (members <= 1) return JobClass::kSinglePod;
  if (gpus <= c.max_gpus_per_node()) return JobClass::kWithinNode;
  if (gpus <= c.MaxDomainGpus(LeafLevel(c))) return JobClass::kWithinLeaf;
  return JobClass::kLarger;
}

std::array<ClassStats, kNumJobClasses> StatsByClass(const Cluster& c,
                                                    const std::vector<JobResult>& jobs,
                                                    double run_end) {
  std::array<ClassStats, kNumJobClasses> out{};
  std::array<int, kNumJobClasses> started{};
  for (const JobResult& j : jobs) {
    if (j.unschedulable) continue;
    ClassStats& s = out[static_cast<int>(ClassOf(c, j.members, j.gpus))];
    ++s.jobs;
    const bool done = j.end >= 0;
    s.unfinished += !done;
    s.mean_jct += (done ? j.end : std::max(run_end, j.arrival)) - j.arrival;
    if (j.start >= 0) {
      s.mean_stretch += j.stretch;
      ++started[static_cast<int>(ClassOf(c, j.members, j.gpus))];
    }
  }
  for (int k = 0; k < kNumJobClasses; ++k) {
    if (out[k].jobs > 0) out[k].mean_jct /= out[k].jobs;
    if (started[k] > 0) out[k].mean_stretch /= started[k];
  }
  return out;
}

static std::string Minutes(double s) { return absl::StrFormat("%.1f m", s / 60); }

std::string JobClassTable(const Cluster& c, const std::vector<PolicyResult>& results) {
  std::string out = "JCT mean (stretch mean) by job class; unfinished jobs count to the end\n";
  absl::StrAppend(&out, absl::StrFormat("%-18s", "POLICY"));
  std::array<int, kNumJobClasses> counts{};
  if (!results.empty()) {
    const auto s = StatsByClass(c, results[0].jobs, results[0].summary.makespan);
    for (int k = 0; k < kNumJobClasses; ++k) counts[k] = s[k].jobs;
  }
  for (int k = 0; k < kNumJobClasses; ++k) {
    absl::StrAppend(
        &out, absl::StrFormat("  %-30s", absl::StrCat(JobClassName(static_cast<JobClass>(k)), " (",
                                                      counts[k], ")")));
  }
  absl::StrAppend(&out, "\n");
  for (const PolicyResult& r : results) {
    absl::StrAppend(&out, absl::StrFormat("%-18s", r.policy));
    const auto s = StatsByClass(c, r.jobs, r.summary.makespan);
    for (int k = 0; k < kNumJobClasses; ++k) {
      std::string cell = absl::StrFormat("%s (%.2f)", Minutes(s[k].mean_jct), s[k].mean_stretch);
      if (s[k].unfinished > 0) absl::StrAppend(&cell, " ", s[k].unfinished, " unfinished");
      absl::StrAppend(&out, absl::StrFormat("  %-30s", cell));
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace topogang::sim
