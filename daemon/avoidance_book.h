// Why each gang avoids the nodes it avoids (#13 per-job exclusion), kept for `topogang explain`:
// the gang ledger records the list with its reasons each time it plans a gang; the gRPC placement
// service reads it. A gang that avoids nothing has no entry. Thread-safe, bounded.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace topogang {

class AvoidanceBook {
 public:
  struct Node {
    std::string name;
    std::string reason;  // "named in topogang.io/avoid-nodes; a member failed here"
  };

  // Replaces what `gang` avoids; an empty list forgets the gang.
  void Record(const std::string& gang, std::vector<Node> nodes);
  std::vector<Node> For(const std::string& gang) const;

  // Gangs of at least this many GPUs avoid slow nodes (GangLedger::Options::slow_node_gang_gpus;
  // 0 = none does), so that explain can say so for a gang it was only given the spec of.
  void set_slow_gang_gpus(long gpus);
  long slow_gang_gpus() const;

 private:
  static constexpr size_t kMaxGangs = 10000;  // a memory for explain, not a record
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, std::vector<Node>> gangs_;
  long slow_gang_gpus_ = 0;
};

// The reason a slow node is avoided, the same in the ledger's record and in explain.
std::string SlowNodeReason(const std::string& score, long slow_gang_gpus);

}  // namespace topogang
