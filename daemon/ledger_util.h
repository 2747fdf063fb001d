// Small helpers shared by the GangLedger's implementation files (not part of its interface).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "daemon/gang_ledger.h"

namespace topogang {

// Held binds to answer once the ledger lock is released: callbacks never run under mu_.
using FailList = std::vector<std::pair<BindCallback, std::string>>;

inline void RunFails(FailList& fails) {
  for (auto& [cb, why] : fails) {
    if (cb) cb(why);
  }
  fails.clear();
}

// Nodes of the model that kube-scheduler did not offer for a pod: its own filters rejected them
// (selectors, affinity, taints it does not tolerate, other resources). O(nodes + offered), paid
// once per gang reservation or growth, not per member.
std::vector<int> NodesNotOffered(const Cluster& c, const std::vector<std::string>& offered);

}  // namespace topogang
