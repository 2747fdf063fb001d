// A GangLedger + ExtenderService over a FakeClock, driven without HTTP: the fixture of the
// service-level suites (verbs, barrier, gang lifecycle).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <set>
#include <string>
#include <vector>

#include "daemon/gang_ledger.h"
#include "extender/extender_service.h"
#include "tests/support/service_util.h"
#include "tests/support/test_util.h"

namespace topogang::testing {

// Every input node exactly once across passing/failed lists, and nothing else.
// Nothing invented, nothing twice; when no node passes, every input node is answered (its reason
// feeds kube-scheduler's FitError message). A steered reply names only the passing node.
void ExpectCovers(const ExtenderArgs& args, const ExtenderFilterResult& r) {
  std::multiset<std::string> seen;
  for (const auto& n : r.node_names) seen.insert(n);
  for (const auto& [n, _] : r.failed) seen.insert(n);
  for (const auto& [n, _] : r.failed_unresolvable) seen.insert(n);
  std::multiset<std::string> want(args.names.begin(), args.names.end());
  if (r.node_names.empty()) {
    EXPECT_EQ(seen, want);
  } else {
    for (const std::string& n : seen) EXPECT_EQ(seen.count(n), want.count(n)) << n;
    if (r.node_names.size() == 1) {
      EXPECT_EQ(seen.size(), 1u) << "a steered reply is one name";
    }
  }
}

// Queue options for tests of holds through the daemon: a gang of `min_gpus` GPUs or more is
// starved after a minute of waiting and then holds GPUs at once (no readiness condition).
inline QueueOptions StarvedGangsHoldAtOnce(int min_gpus) {
  QueueOptions q;
  q.starvation_threshold = absl::Minutes(1);
  q.hold_min_gpus = min_gpus;
  q.hold_ready_fraction = 0;
  q.hold_max_shortfall_share = 1;
  return q;
}

struct ServiceFixture {
  explicit ServiceFixture(int nodes = 100, absl::Duration window = absl::Seconds(10),
                          QueueOptions queue = {}, Binder* bind_with = nullptr)
      : state(GangScheduler(TestCluster(nodes)), clock),
        ledger(state, bind_with ? *bind_with : binder, Options(window, queue)),
        service(ledger),
        names(NodeNames(nodes)) {}
  ServiceFixture(int nodes, GangLedgerOptions options)
      : state(GangScheduler(TestCluster(nodes)), clock),
        ledger(state, binder, std::move(options)),
        service(ledger),
        names(NodeNames(nodes)) {}
  static GangLedgerOptions Options(absl::Duration window, QueueOptions queue) {
    GangLedgerOptions o;
    o.bind_window = window;
    o.tick = absl::Milliseconds(20);
    o.sweep = absl::Milliseconds(20);
    o.queue = queue;
    return o;
  }
  // Filter, expecting exactly one passing node; returns it.
  std::string FilterOne(const Json& pod) {
    ExtenderArgs args = MakeArgs(pod, names);
    ExtenderFilterResult r = service.Filter(args);
    ExpectCovers(args, r);
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.node_names.size(), 1u)
        << (r.failed_unresolvable.empty() ? r.error : r.failed_unresolvable[0].second);
    return r.node_names.empty() ? "" : r.node_names[0];
  }
  std::future<std::string> Bind(const Json& pod, const std::string& node) {
    return BindPod(service, pod, node);
  }
  int UsedGpus() { return testing::UsedGpus(state); }
  // Filter with only `offered` passing kube-scheduler's own filters.
  ExtenderFilterResult FilterOffered(const Json& pod, const std::vector<std::string>& offered) {
    return service.Filter(MakeArgs(pod, offered));
  }

  FakeClock clock;
  DaemonState state;
  MemoryBinder binder;
  GangLedger ledger;
  ExtenderService service;
  std::vector<std::string> names;
};

// The nodes GPUs are reserved (or held) on for `gang` in the model, sorted; none when it has no
// record.
inline std::vector<std::string> ReservedNodes(ServiceFixture& f, const std::string& gang) {
  return f.state.With([&](GangScheduler& s) {
    std::vector<std::string> out;
    if (const GangRecord* r = s.Find(gang)) {
      for (const MemberPlacement& m : r->placement.members) {
        out.push_back(s.cluster().node(m.node).name);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  });
}

}  // namespace topogang::testing
