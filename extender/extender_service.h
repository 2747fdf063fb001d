// The extender verbs: kube-scheduler's wire types in, the gang ledger's decisions out. Parsing
// and per-node verdicts happen here; every gang decision is the GangLedger's (daemon/). The HTTP
// routes, tests and the load tool drive this class.
//
// Thread-safe: it holds no state of its own besides the ledger reference.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "daemon/gang_ledger.h"
#include "extender/wire_types.h"

namespace topogang {

class ExtenderService {
 public:
  explicit ExtenderService(GangLedger& ledger) : ledger_(ledger) {}

  // One verdict per offered node (the server's hot path: no per-node strings).
  FilterVerdicts FilterNodes(const ExtenderArgs& args);
  // The same, as a struct by node name (tests, tools).
  ExtenderFilterResult Filter(const ExtenderArgs& args);
  absl::StatusOr<std::vector<HostPriority>> Prioritize(const ExtenderArgs& args);
  // `done` is called exactly once, from this thread or the ledger's worker.
  void Bind(const ExtenderBindingArgs& args,
            std::function<void(const ExtenderBindingResult&)> done);
  // Gang-aware: a node whose victims include a member of a multi-pod gang is dropped, so
  // preemption never breaks a running gang; for a preemptor that is itself a gang member,
  // topogang preempts whole gangs (GangLedger::PreemptForGang) and kube-scheduler gets none.
  ExtenderPreemptionResult Preempt(const ExtenderPreemptionArgs& args);

  GangLedger& ledger() { return ledger_; }
  const GangLedger& ledger() const { return ledger_; }

 private:
  GangLedger& ledger_;
};

}  // namespace topogang
