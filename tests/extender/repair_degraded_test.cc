// A running gang whose lost member can only be replaced where it slows the whole gang (a tray
// alone in another NVLink domain) is repaired, and the daemon says so: a decision event, a
// Warning event on a running member's pod and the topogang_gangs_degraded gauge
// (scheduler/repair_quality.h). A repair that keeps the gang as fast says nothing; a later one that
// puts it back as fast as before clears the mark.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "daemon/metrics.h"
#include "extender/extender_service.h"
#include "tests/support/service_util.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

using testing::GangPod;
using testing::MakeArgs;
using testing::MakePod;

// 12 nodes of 8 GPUs in 3 racks of 4 that are NVLink domains (labelled with the GPU operator's
// clique, as GB200 racks are), all under one switch.
Cluster Racks() {
  ClusterSpec spec;
  spec.name = "racks";
  for (int i = 0; i < 12; ++i) {
    NodeSpec n;
    n.name = absl::StrFormat("gpu-node-%03d", i);
    n.gpus = 8;
    n.sku = "GB200";
    n.labels["topology.example.com/switch"] = "switch-00";
    n.labels["nvidia.com/gpu.clique"] = absl::StrFormat("clique-%d", i / 4);
    spec.nodes.push_back(n);
  }
  TopologyConfig t;
  t.preset = "test";
  t.tiers = {{"switch", "topology.example.com/switch", 400, 1, false},
             {"nvlink", "nvidia.com/gpu.clique", 7200, 1, false}};
  return *Cluster::Build(spec, t);
}

std::vector<std::string> Names(const std::vector<int>& nodes) {
  std::vector<std::string> out;
  for (int n : nodes) out.push_back(absl::StrFormat("gpu-node-%03d", n));
  return out;
}

PodInfo Running(int size, int index, int node) {
  PodInfo p;
  p.name = absl::StrCat("train-", index);
  p.namespace_ = "default";
  p.uid = "uid-" + p.name;
  p.node_name = Names({node})[0];
  p.phase = "Running";
  p.labels["topogang.io/gang"] = "train";
  p.annotations["topogang.io/gang-size"] = std::to_string(size);
  p.gpus = 8;
  p.mentions_resource = true;
  return p;
}

struct Fixture {
  Fixture() : state(GangScheduler(Racks()), clock), ledger(state, binder, {}), service(ledger) {
    ledger.SetNotify([this](const GangNotice& n) {
      std::lock_guard<std::mutex> lock(mu);
      notices.push_back(n);
    });
  }
  // Gang train of one member per node of `nodes` runs; member `lost` goes with its node.
  std::string LoseAndReplace(const std::vector<int>& nodes, int lost) {
    const int size = static_cast<int>(nodes.size());
    for (int i = 0; i < size; ++i) ledger.ObservePod(Running(size, i, nodes[i]));
    EXPECT_TRUE(
        state.SetNodeHealth(Names({nodes[lost]})[0], HealthSource::kKubeNotReady, true, "test")
            .ok());
    ledger.PodDeleted(Running(size, lost, nodes[lost]));
    testing::PodOpts o = GangPod("train", size, lost, 8);
    o.name += "-again";
    o.uid = "uid-" + o.name;
    std::vector<int> offered;  // kube-scheduler's own filters drop the NotReady node
    for (int n = 0; n < 12; ++n) {
      if (n != nodes[lost]) offered.push_back(n);
    }
    ExtenderFilterResult r = service.Filter(MakeArgs(MakePod(o), Names(offered)));
    EXPECT_EQ(r.node_names.size(), 1u) << r.error;
    return r.node_names.empty() ? "" : r.node_names[0];
  }
  // The replacement `pod` (member `index` of a gang of `size`) binds on `node` and runs there;
  // then that node fails too, `back` is healthy again, and the next replacement is placed.
  std::string LoseReplacementToo(int size, int index, const std::string& pod, int node, int back) {
    testing::PodOpts o = GangPod("train", size, index, 8);
    o.name = pod;
    o.uid = "uid-" + pod;
    EXPECT_EQ(testing::BindPod(service, MakePod(o), Names({node})[0]).get(), "");
    PodInfo running = Running(size, index, node);
    running.name = pod;
    running.uid = o.uid;
    ledger.ObservePod(running);
    EXPECT_TRUE(
        state.SetNodeHealth(Names({node})[0], HealthSource::kKubeNotReady, true, "test").ok());
    EXPECT_TRUE(
        state.SetNodeHealth(Names({back})[0], HealthSource::kKubeNotReady, false, "test").ok());
    ledger.PodDeleted(running);
    o.name = pod + "-again";
    o.uid = "uid-" + o.name;
    std::vector<int> offered;
    for (int n = 0; n < 12; ++n) {
      if (n != node) offered.push_back(n);
    }
    ExtenderFilterResult r = service.Filter(MakeArgs(MakePod(o), Names(offered)));
    EXPECT_EQ(r.node_names.size(), 1u) << r.error;
    return r.node_names.empty() ? "" : r.node_names[0];
  }
  std::vector<DecisionEvent> Events(const std::string& kind) {
    std::vector<DecisionEvent> out;
    for (const DecisionEvent& e : state.WaitEvents(0, absl::Now(), 10000)) {
      if (e.kind == kind) out.push_back(e);
    }
    return out;
  }
  std::vector<GangNotice> Notices(const std::string& reason) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<GangNotice> out;
    for (const GangNotice& n : notices) {
      if (n.reason == reason) out.push_back(n);
    }
    return out;
  }

  FakeClock clock;
  DaemonState state;
  MemoryBinder binder;
  GangLedger ledger;
  ExtenderService service;
  std::mutex mu;
  std::vector<GangNotice> notices;
};

TEST(RepairDegraded, AReplacementAloneInAnotherRackIsReported) {
  Fixture f;
  DaemonMetrics metrics(&f.state);
  metrics.AttachLedger(&f.ledger);
  // Racks 0 and 1 full (32 + 32 GPUs); node 3 fails and rack 2 is the only room: 8 GPUs there
  // against 32 in each rack before, so that tray's NICs now carry the ring for all eight.
  EXPECT_EQ(f.LoseAndReplace({0, 1, 2, 3, 4, 5, 6, 7}, 3).substr(0, 12), "gpu-node-008");
  const std::vector<DecisionEvent> ev = f.Events("repair-degraded");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].gang, "default/train");
  EXPECT_NE(ev[0].detail.find("only 8 of the gang's GPUs in its nvlink (the fewest in one was 32)"),
            std::string::npos)
      << ev[0].detail;
  const std::vector<GangNotice> warn = f.Notices("RepairDegraded");
  ASSERT_EQ(warn.size(), 1u);
  EXPECT_EQ(warn[0].type, "Warning");
  ASSERT_EQ(warn[0].pods.size(), 1u);
  EXPECT_NE(warn[0].pods[0].pod_name, "train-3") << "on a running member, not the lost one";
  EXPECT_EQ(f.ledger.GetStats().degraded_gangs, 1);
  // The core's record carries why (topogang gangs shows it).
  EXPECT_EQ(
      f.state.With([](GangScheduler& s) { return s.Find("default/train")->slower_since_repair; }),
      ev[0].detail.substr(ev[0].detail.find(": ") + 2,
                          ev[0].detail.find(". Restarting") - ev[0].detail.find(": ") - 2));
  EXPECT_NE(metrics.Render().find("topogang_gangs_degraded 1"), std::string::npos);
  // The gang ends: nothing is left degraded.
  for (int i = 0; i < 8; ++i) {
    if (i != 3) f.ledger.PodDeleted(Running(8, i, i));
  }
  EXPECT_EQ(f.ledger.GetStats().degraded_gangs, 0);
}

TEST(RepairDegraded, ALaterRepairThatPutsItBackClearsTheMark) {
  Fixture f;
  DaemonMetrics metrics(&f.state);
  metrics.AttachLedger(&f.ledger);
  // As above: node 3 fails and member 3 goes alone to rack 2.
  EXPECT_EQ(f.LoseAndReplace({0, 1, 2, 3, 4, 5, 6, 7}, 3), "gpu-node-008");
  EXPECT_EQ(f.ledger.GetStats().degraded_gangs, 1);
  // Then its tray fails as well, and node 3 is back: the replacement goes home to rack 0 (32 +
  // 32 GPUs again), and the gang is no longer marked.
  EXPECT_EQ(f.LoseReplacementToo(8, 3, "train-3-again", 8, 3), "gpu-node-003");
  ASSERT_EQ(f.Events("repair-restored").size(), 1u);
  const std::vector<GangNotice> restored = f.Notices("RepairRestored");
  ASSERT_EQ(restored.size(), 1u);
  EXPECT_EQ(restored[0].type, "Normal");
  EXPECT_EQ(f.ledger.GetStats().degraded_gangs, 0);
  EXPECT_EQ(
      f.state.With([](GangScheduler& s) { return s.Find("default/train")->slower_since_repair; }),
      "");
  EXPECT_NE(metrics.Render().find("topogang_gangs_degraded 0"), std::string::npos);
  EXPECT_NE(metrics.Render().find(R"(topogang_gang_events_total{event="repair_restored"} 1)"),
            std::string::npos);
}

TEST(RepairDegraded, ALaterRepairThatStaysAwayKeepsTheMark) {
  Fixture f;
  EXPECT_EQ(f.LoseAndReplace({0, 1, 2, 3, 4, 5, 6, 7}, 3), "gpu-node-008");
  const std::string why =
      f.state.With([](GangScheduler& s) { return s.Find("default/train")->slower_since_repair; });
  ASSERT_FALSE(why.empty());
  // Its tray fails, node 3 stays down: the next replacement is again alone in rack 2 (node 9).
  // Judged against where the gang ran before the first repair it is still slower: the mark
  // stays, with nothing new to report (no worse than just before this repair).
  EXPECT_EQ(f.LoseReplacementToo(8, 3, "train-3-again", 8, 8), "gpu-node-009");
  EXPECT_TRUE(f.Events("repair-restored").empty());
  EXPECT_EQ(f.ledger.GetStats().degraded_gangs, 1);
  EXPECT_EQ(
      f.state.With([](GangScheduler& s) { return s.Find("default/train")->slower_since_repair; }),
      why);
}

TEST(RepairDegraded, AReplacementInTheSameRackIsNot) {
  Fixture f;
  // Rack 0 keeps node 3 free: member 2's replacement goes there, still 24 + 32.
  EXPECT_EQ(f.LoseAndReplace({0, 1, 2, 4, 5, 6, 7}, 2), "gpu-node-003");
  EXPECT_TRUE(f.Events("repair-degraded").empty());
  EXPECT_TRUE(f.Notices("RepairDegraded").empty());
  EXPECT_EQ(f.ledger.GetStats().degraded_gangs, 0);
}

}  // namespace
}  // namespace topogang
