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

}  // namespace topogang
