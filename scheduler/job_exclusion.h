// Per-job node exclusion: the nodes one gang must not be planned on, as opposed to cordons and
// taints, which keep every job off a node. A node can be fine for a 1-GPU notebook and ruin a
// 512-GPU all-reduce, and a node a job just crashed on is the last place to restart it.
//
// A gang avoids:
//  - slow nodes (NodeSlowness above its threshold), when it has at least large_gang_gpus GPUs;
//  - the nodes it names (the daemon maps an annotation to AvoidNodes);
//  - the nodes its earlier attempts failed on (RecordFailure), until Forget.
// Applied through the queue's NodeExclusion hook (ForQueue), which masks the nodes while the gang
// is planned, so the planner itself stays unaware of it.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "scheduler/gang.h"
#include "scheduler/node_slowness.h"
#include "scheduler/queue_policy.h"

namespace topogang {

struct ExclusionOptions {
  // Gangs of at least this many GPUs avoid slow nodes; smaller ones use them.
  long large_gang_gpus = 64;
};

class JobExclusion {
 public:
  // `slowness` must outlive this object.
  JobExclusion(const NodeSlowness& slowness, ExclusionOptions options = {})
      : slowness_(slowness), options_(options) {}

  void AvoidNodes(absl::string_view gang, const std::vector<int>& nodes);
  void RecordFailure(absl::string_view gang, int node);
  // The gang is done (finished or deleted): drop what it named and where it failed.
  void Forget(absl::string_view gang) { per_gang_.erase(gang); }

  // Nodes `gang` must avoid now, ascending.
  std::vector<int> Excluded(const GangSpec& gang, absl::Time now) const;
  // The same, with why ("slow (score 1.50)", "named by the gang", "earlier attempt failed here"),
  // for `topogang explain`.
  std::vector<std::pair<int, std::string>> Explain(const GangSpec& gang, absl::Time now) const;
  // A NodeExclusion for GangQueue::Schedule evaluated at `now`; valid while this object lives.
  GangQueue::NodeExclusion ForQueue(absl::Time now) const;

  bool IsLarge(const GangSpec& gang) const { return gang.total_gpus() >= options_.large_gang_gpus; }

 private:
  struct PerGang {
    std::set<int> named, failed;
  };
  const NodeSlowness& slowness_;
  ExclusionOptions options_;
  absl::flat_hash_map<std::string, PerGang> per_gang_;
};

}  // namespace topogang
