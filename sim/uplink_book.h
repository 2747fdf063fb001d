// Which running jobs use which switch uplinks, for `--uplink-contention`: the load a job's
// all-reduce is priced against, and, after jobs start or end, which running jobs share an
// uplink whose load changed and so must be re-priced (see docs/network-model.md).
#pragma once

#include <cstddef>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "sim/network_model.h"

namespace topogang::sim {

class UplinkBook {
 public:
  explicit UplinkBook(size_t jobs) : use_(jobs) {}

  // A job starts running with this use of the uplinks (PreparedAllReduce::uplink_use).
  void Add(int job, const UplinkLoad& use);
  // It stops (ends, fails, is preempted or moved); nothing when it holds no uplinks.
  void Remove(int job);

  // GPUs of running jobs whose rings leave each shared domain.
  const UplinkLoad& load() const { return load_; }

  // The running jobs that use a domain whose load changed since the last call, in job order
  // (so that re-pricing them in this order is deterministic).
  std::vector<int> TakeAffected();

 private:
  UplinkLoad load_;
  std::vector<UplinkLoad> use_;                               // per job; empty when it holds none
  absl::flat_hash_map<int, absl::flat_hash_set<int>> users_;  // domain -> jobs
  absl::flat_hash_set<int> changed_;
};

}  // namespace topogang::sim
