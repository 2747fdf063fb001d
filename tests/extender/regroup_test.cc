// Regrouping after a restart: bound pods of a multi-pod gang are adopted into ONE running gang
// (not N singletons); a gang caught mid-bind gets its missing members placed next to the bound
// ones and bound through a barrier that waits only for them; members free their GPUs as their
// pods go and the last one releases the gang; pods disagreeing with their gang stay singletons.
// Hot spares are chosen after the adoption, and a member lost later takes its rack's spare.
#include <gtest/gtest.h>

#include <future>
#include <set>

#include "extender/extender_service.h"
#include "tests/support/service_util.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

using testing::GangPod;
using testing::MakeArgs;
using testing::MakePod;
using testing::NodeNames;
using testing::TestCluster;

constexpr auto kWait = std::chrono::seconds(20);

struct Fixture {
  explicit Fixture(int nodes = 32, absl::Duration window = absl::Seconds(10))
      : state(GangScheduler(TestCluster(nodes)), clock),
        ledger(state, binder, Options(window)),
        service(ledger),
        names(NodeNames(nodes)) {}
  static GangLedgerOptions Options(absl::Duration window) {
    GangLedgerOptions o;
    o.bind_window = window;
    o.tick = absl::Milliseconds(20);
    o.sweep = absl::Milliseconds(20);
    return o;
  }
  ExtenderFilterResult Filter(const Json& pod) { return service.Filter(MakeArgs(pod, names)); }
  std::future<std::string> Bind(const Json& pod, const std::string& node) {
    return testing::BindPod(service, pod, node);
  }
  int UsedGpus() { return testing::UsedGpus(state); }
  absl::Status Invariants() {
    return state.With([](GangScheduler& s) { return s.CheckInvariants(); });
  }
  // Names of the gangs in the core, and the node count of one of them (-1 when absent).
  std::set<std::string> CoreGangs() {
    return state.With([](GangScheduler& s) {
      std::set<std::string> out;
      for (const auto& [name, rec] : s.gangs()) out.insert(name);
      return out;
    });
  }
  int Members(const std::string& gang, GangState* st = nullptr) {
    return state.With([&](GangScheduler& s) {
      const GangRecord* r = s.Find(gang);
      if (r == nullptr) return -1;
      if (st) *st = r->state;
      int n = 0;
      for (const MemberPlacement& m : r->placement.members) n += m.node >= 0 ? 1 : 0;
      return n;
    });
  }
  bool SawEvent(const std::string& kind, const std::string& gang) {
    for (const DecisionEvent& e : state.WaitEvents(0, absl::Now(), 10000)) {
      if (e.kind == kind && e.gang == gang) return true;
    }
    return false;
  }

  FakeClock clock;
  DaemonState state;
  MemoryBinder binder;
  GangLedger ledger;
  ExtenderService service;
  std::vector<std::string> names;
};

// Member `index` of gang `gang` (size members of gpus GPUs), bound to `node` ("" = pending).
PodInfo Member(const std::string& gang, int size, int index, int gpus, const std::string& node) {
  PodInfo p;
  p.name = absl::StrCat(gang, "-", index);
  p.namespace_ = "default";
  p.uid = "uid-" + p.name;
  p.node_name = node;
  p.phase = node.empty() ? "Pending" : "Running";
  p.labels["topogang.io/gang"] = gang;
  p.annotations["topogang.io/gang-size"] = std::to_string(size);
  p.gpus = gpus;
  p.mentions_resource = true;
  return p;
}

TEST(RegroupTest, FullyBoundGangIsOneRunningGangAfterRestart) {
  for (bool rebuild : {false, true}) {
    SCOPED_TRACE(rebuild ? "Rebuild" : "ObservePod");
    Fixture f;
    std::vector<PodInfo> pods;
    for (int i = 0; i < 4; ++i) pods.push_back(Member("train", 4, i, 8, NodeNames()[4 + i]));
    if (rebuild) {
      ASSERT_TRUE(f.ledger.Rebuild(TestCluster(32), pods).ok());
    } else {
      for (const PodInfo& p : pods) f.ledger.ObservePod(p);
    }
    EXPECT_EQ(f.CoreGangs(), std::set<std::string>{"default/train"}) << "one gang, no singletons";
    GangState st = GangState::kReserved;
    EXPECT_EQ(f.Members("default/train", &st), 4);
    EXPECT_EQ(st, GangState::kRunning);
    EXPECT_EQ(f.UsedGpus(), 32);
    EXPECT_EQ(f.ledger.GetStats().running_gangs, 1);
    EXPECT_TRUE(f.Invariants().ok()) << f.Invariants();
    // The same pods seen again (a resync) change nothing.
    for (const PodInfo& p : pods) f.ledger.ObservePod(p);
    EXPECT_EQ(f.Members("default/train"), 4);
    EXPECT_EQ(f.UsedGpus(), 32);
    // Preempting any member would split the gang: every such node is refused.
    ExtenderPreemptionArgs args;
    args.pod = MakePod(GangPod("x", 1, 0, 8));
    for (int i = 0; i < 4; ++i) args.victims[NodeNames()[4 + i]].uids = {pods[i].uid};
    args.victims["gpu-node-020"].uids = {};
    ExtenderPreemptionResult r = f.service.Preempt(args);
    EXPECT_EQ(r.victims.size(), 1u);
    EXPECT_EQ(r.victims.count("gpu-node-020"), 1u);
    // A fifth pod claiming the gang is one too many.
    ExtenderFilterResult extra = f.Filter(MakePod(GangPod("train", 4, 4, 8)));
    EXPECT_TRUE(extra.node_names.empty());
  }
}

TEST(RegroupTest, GangCaughtMidBindCompletesAfterRestart) {
  Fixture f;
  f.ledger.ObservePod(Member("train", 4, 0, 8, "gpu-node-000"));
  f.ledger.ObservePod(Member("train", 4, 1, 8, "gpu-node-001"));
  EXPECT_EQ(f.CoreGangs(), std::set<std::string>{"default/train"});
  EXPECT_EQ(f.UsedGpus(), 16);
  Json p2 = MakePod(GangPod("train", 4, 2, 8)), p3 = MakePod(GangPod("train", 4, 3, 8));
  ExtenderFilterResult r2 = f.Filter(p2);
  ASSERT_EQ(r2.node_names.size(), 1u)
      << (r2.failed_unresolvable.empty() ? r2.error : r2.failed_unresolvable[0].second);
  EXPECT_EQ(f.UsedGpus(), 32) << "both missing members reserved at once, not the whole gang again";
  EXPECT_EQ(f.Filter(p2).node_names, r2.node_names) << "a retried filter keeps its slot";
  ExtenderFilterResult r3 = f.Filter(p3);
  ASSERT_EQ(r3.node_names.size(), 1u);
  EXPECT_EQ(f.UsedGpus(), 32);
  // Next to the bound members: the rest of their rack (4 nodes per rack).
  EXPECT_EQ((std::set<std::string>{r2.node_names[0], r3.node_names[0]}),
            (std::set<std::string>{"gpu-node-002", "gpu-node-003"}));
  EXPECT_TRUE(f.Invariants().ok()) << f.Invariants();
  // The barrier waits only for the two missing members.
  auto b2 = f.Bind(p2, r2.node_names[0]);
  EXPECT_EQ(b2.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  auto b3 = f.Bind(p3, r3.node_names[0]);
  ASSERT_EQ(b2.wait_for(kWait), std::future_status::ready);
  ASSERT_EQ(b3.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(b2.get(), "");
  EXPECT_EQ(b3.get(), "");
  EXPECT_EQ(f.binder.Bindings(),
            (std::map<std::string, std::string>{{"default/train-2", r2.node_names[0]},
                                                {"default/train-3", r3.node_names[0]}}));
  GangState st = GangState::kReserved;
  EXPECT_EQ(f.Members("default/train", &st), 4);
  EXPECT_EQ(st, GangState::kRunning);
  EXPECT_EQ(f.CoreGangs(), std::set<std::string>{"default/train"});
  // The watch then reports the pods we bound: nothing changes.
  f.ledger.ObservePod(Member("train", 4, 2, 8, r2.node_names[0]));
  f.ledger.ObservePod(Member("train", 4, 3, 8, r3.node_names[0]));
  EXPECT_EQ(f.UsedGpus(), 32);
  EXPECT_EQ(f.ledger.GetStats().running_gangs, 1);
  EXPECT_TRUE(f.Invariants().ok()) << f.Invariants();
}

TEST(RegroupTest, MissingMembersThatCannotFitFailWithTheReason) {
  Fixture f(3);  // three nodes: two hold the bound members, one is left for two missing members
  f.ledger.ObservePod(Member("train", 4, 0, 8, "gpu-node-000"));
  f.ledger.ObservePod(Member("train", 4, 1, 8, "gpu-node-001"));
  ExtenderFilterResult r = f.Filter(MakePod(GangPod("train", 4, 2, 8)));
  EXPECT_TRUE(r.node_names.empty());
  ASSERT_EQ(r.failed_unresolvable.size(), 3u);
  const std::string& why = r.failed_unresolvable.begin()->second;
  EXPECT_NE(why.find("2 members running"), std::string::npos) << why;
  EXPECT_NE(why.find("cannot be placed next to them"), std::string::npos) << why;
  EXPECT_EQ(f.UsedGpus(), 16) << "nothing reserved for the missing members";
  EXPECT_TRUE(f.Invariants().ok());
}

TEST(RegroupTest, BarrierExpiryKeepsTheBoundMembersRunning) {
  Fixture f(32, absl::Milliseconds(200));
  f.ledger.ObservePod(Member("train", 4, 0, 8, "gpu-node-000"));
  f.ledger.ObservePod(Member("train", 4, 1, 8, "gpu-node-001"));
  Json p2 = MakePod(GangPod("train", 4, 2, 8)), p3 = MakePod(GangPod("train", 4, 3, 8));
  ExtenderFilterResult r2 = f.Filter(p2);
  ASSERT_EQ(r2.node_names.size(), 1u);
  EXPECT_EQ(f.UsedGpus(), 32);
  auto b2 = f.Bind(p2, r2.node_names[0]);  // member 3 never comes
  ASSERT_EQ(b2.wait_for(kWait), std::future_status::ready);
  EXPECT_NE(b2.get(), "");
  EXPECT_TRUE(f.binder.Bindings().empty());
  EXPECT_EQ(f.UsedGpus(), 32) << "an answered bind keeps the missing members' reservation";
  f.clock.Advance(absl::Minutes(5));  // past the missing members' TTL
  for (int i = 0; i < 300 && f.UsedGpus() != 16; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(f.UsedGpus(), 16) << "only the missing members' reservations are given back";
  EXPECT_EQ(f.Members("default/train"), 2);
  EXPECT_TRUE(f.Invariants().ok()) << f.Invariants();
  // The missing members start over, next to the bound ones again.
  ExtenderFilterResult again = f.Filter(p3);
  ASSERT_EQ(again.node_names.size(), 1u);
  EXPECT_EQ(f.UsedGpus(), 32);
}

TEST(RegroupTest, MissingMembersReservationExpiresByTtl) {
  Fixture f;
  f.ledger.ObservePod(Member("train", 4, 0, 8, "gpu-node-000"));
  f.ledger.ObservePod(Member("train", 4, 1, 8, "gpu-node-001"));
  Json p2 = MakePod(GangPod("train", 4, 2, 8));
  ASSERT_EQ(f.Filter(p2).node_names.size(), 1u);
  EXPECT_EQ(f.UsedGpus(), 32);
  // Nobody reaches bind; past the TTL the next filter finds the reservation gone and takes a new
  // one (the same member keeps being served).
  f.clock.Advance(absl::Minutes(5));
  auto r = f.Filter(MakePod(GangPod("train", 4, 3, 8)));
  ASSERT_EQ(r.node_names.size(), 1u);
  EXPECT_TRUE(f.SawEvent("expire", "default/train"));
  EXPECT_EQ(f.UsedGpus(), 32);
  EXPECT_TRUE(f.Invariants().ok()) << f.Invariants();
}

TEST(RegroupTest, DeletedMembersFreeTheirGpusAndTheLastReleasesTheGang) {
  Fixture f;
  for (int i = 0; i < 4; ++i) f.ledger.ObservePod(Member("train", 4, i, 8, NodeNames()[i]));
  EXPECT_EQ(f.UsedGpus(), 32);
  f.ledger.PodDeleted(Member("train", 4, 1, 8, NodeNames()[1]));
  EXPECT_EQ(f.UsedGpus(), 24);
  EXPECT_EQ(f.Members("default/train"), 3) << "the gang keeps running with the others";
  EXPECT_TRUE(f.Invariants().ok()) << f.Invariants();
  f.ledger.PodDeleted(Member("train", 4, 1, 8, NodeNames()[1]));  // seen twice: no change
  EXPECT_EQ(f.UsedGpus(), 24);
  // A replacement for the deleted member is placed next to the survivors, in its old rack.
  Json repl = MakePod(GangPod("train", 4, 9, 8));
  ExtenderFilterResult r = f.Filter(repl);
  ASSERT_EQ(r.node_names.size(), 1u);
  EXPECT_EQ(r.node_names[0], NodeNames()[1]);
  auto b = f.Bind(repl, r.node_names[0]);
  ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(b.get(), "");
  EXPECT_EQ(f.Members("default/train"), 4);
  // Members finish (terminal phase via the watch, or deletion); the last releases everything.
  PodInfo done = Member("train", 4, 0, 8, NodeNames()[0]);
  done.phase = "Succeeded";
  f.ledger.ObservePod(done);
  f.ledger.PodDeleted(Member("train", 4, 2, 8, NodeNames()[2]));
  f.ledger.PodDeleted(Member("train", 4, 9, 8, r.node_names[0]));
  EXPECT_EQ(f.UsedGpus(), 8);
  EXPECT_EQ(f.Members("default/train"), 1);
  f.ledger.PodDeleted(Member("train", 4, 3, 8, NodeNames()[3]));
  EXPECT_EQ(f.UsedGpus(), 0);
  EXPECT_TRUE(f.CoreGangs().empty());
  EXPECT_EQ(f.ledger.GetStats().running_gangs, 0);
  EXPECT_TRUE(f.SawEvent("release", "default/train"));
  EXPECT_TRUE(f.Invariants().ok()) << f.Invariants();
}

TEST(RegroupTest, MembersDisagreeingWithTheirGangStaySingletons) {
  Fixture f;
  f.ledger.ObservePod(Member("train", 4, 0, 8, "gpu-node-000"));
  f.ledger.ObservePod(Member("train", 3, 1, 8, "gpu-node-001"));  // another size
  f.ledger.ObservePod(Member("train", 4, 2, 4, "gpu-node-002"));  // other GPUs per member
  f.ledger.ObservePod(Member("train", 4, 3, 8, "gpu-node-003"));
  EXPECT_EQ(f.CoreGangs(),
            (std::set<std::string>{"default/train", SingletonGangId("default", "train-1"),
                                   SingletonGangId("default", "train-2")}));
  EXPECT_EQ(f.Members("default/train"), 2);
  EXPECT_EQ(f.UsedGpus(), 28);
  EXPECT_TRUE(f.SawEvent("adopt", "default/train"));
  EXPECT_TRUE(f.Invariants().ok()) << f.Invariants();
  // Singletons that say they belong to a gang are still never preempted alone.
  ExtenderPreemptionArgs args;
  args.pod = MakePod(GangPod("x", 1, 0, 8));
  args.victims["gpu-node-001"].uids = {"uid-train-1"};
  EXPECT_TRUE(f.service.Preempt(args).victims.empty());
  // Deleting everything leaks nothing.
  f.ledger.PodDeleted(Member("train", 3, 1, 8, "gpu-node-001"));
  f.ledger.PodDeleted(Member("train", 4, 2, 4, "gpu-node-002"));
  f.ledger.PodDeleted(Member("train", 4, 0, 8, "gpu-node-000"));
  f.ledger.PodDeleted(Member("train", 4, 3, 8, "gpu-node-003"));
  EXPECT_EQ(f.UsedGpus(), 0);
  EXPECT_TRUE(f.CoreGangs().empty());
}

TEST(RegroupTest, MemberBoundElsewhereWhileReservedJoinsTheGang) {
  Fixture f;
  f.ledger.ObservePod(Member("train", 3, 0, 8, "gpu-node-000"));
  Json p1 = MakePod(GangPod("train", 3, 1, 8));
  ASSERT_EQ(f.Filter(p1).node_names.size(), 1u);
  EXPECT_EQ(f.UsedGpus(), 24);
  // Someone else binds member 1 somewhere else: the reservations go, the pod joins the gang.
  f.ledger.ObservePod(Member("train", 3, 1, 8, "gpu-node-010"));
  EXPECT_EQ(f.Members("default/train"), 2);
  EXPECT_EQ(f.UsedGpus(), 16);
  EXPECT_EQ(f.CoreGangs(), std::set<std::string>{"default/train"});
  EXPECT_TRUE(f.Invariants().ok()) << f.Invariants();
}

TEST(RegroupTest, PodBoundOutsideOntoAMissingMembersReservationIsAdopted) {
  Fixture f;
  f.ledger.ObservePod(Member("train", 4, 0, 8, "gpu-node-000"));
  f.ledger.ObservePod(Member("train", 4, 1, 8, "gpu-node-001"));
  Json p2 = MakePod(GangPod("train", 4, 2, 8));
  ASSERT_EQ(f.Filter(p2).node_names.size(), 1u);
  EXPECT_EQ(f.UsedGpus(), 32);
  // Another scheduler put a pod on gpu-node-002, reserved for a missing member: the pod wins.
  PodInfo other;
  other.name = "other";
  other.namespace_ = "default";
  other.uid = "uid-other";
  other.node_name = "gpu-node-002";
  other.phase = "Running";
  other.gpus = 8;
  f.ledger.ObservePod(other);
  EXPECT_EQ(f.CoreGangs(),
            (std::set<std::string>{"default/train", SingletonGangId("default", "other")}));
  EXPECT_EQ(f.Members("default/train"), 2) << "bound members stay, the reservations yield";
  EXPECT_EQ(f.UsedGpus(), 24);
  EXPECT_TRUE(f.Invariants().ok()) << f.Invariants();
  // The missing members filter again and are placed around the newcomer.
  ExtenderFilterResult r = f.Filter(p2);
  ASSERT_EQ(r.node_names.size(), 1u);
  EXPECT_NE(r.node_names[0], "gpu-node-002");
  EXPECT_EQ(f.UsedGpus(), 40);
  EXPECT_TRUE(f.Invariants().ok()) << f.Invariants();
}

TEST(RegroupTest, RebuildWhileMissingMembersWaitRegroupsAndStartsThemOver) {
  Fixture f;
  std::vector<PodInfo> pods = {Member("train", 4, 0, 8, "gpu-node-000"),
                               Member("train", 4, 1, 8, "gpu-node-001"),
                               Member("train", 4, 2, 8, ""), Member("train", 4, 3, 8, "")};
  ASSERT_TRUE(f.ledger.Rebuild(TestCluster(32), pods).ok());
  Json p2 = MakePod(GangPod("train", 4, 2, 8)), p3 = MakePod(GangPod("train", 4, 3, 8));
  ExtenderFilterResult r2 = f.Filter(p2);
  ASSERT_EQ(r2.node_names.size(), 1u);
  auto held = f.Bind(p2, r2.node_names[0]);
  // The node set changes (here: the same nodes again) while member 2 waits at the barrier.
  ASSERT_TRUE(f.ledger.Rebuild(TestCluster(32), pods).ok());
  ASSERT_EQ(held.wait_for(kWait), std::future_status::ready);
  EXPECT_NE(held.get(), "") << "the held bind fails and kube-scheduler retries it";
  EXPECT_EQ(f.CoreGangs(), std::set<std::string>{"default/train"});
  EXPECT_EQ(f.Members("default/train"), 2);
  EXPECT_EQ(f.UsedGpus(), 16);
  EXPECT_TRUE(f.Invariants().ok()) << f.Invariants();
  r2 = f.Filter(p2);
  ExtenderFilterResult r3 = f.Filter(p3);
  ASSERT_EQ(r2.node_names.size(), 1u);
  ASSERT_EQ(r3.node_names.size(), 1u);
  auto b2 = f.Bind(p2, r2.node_names[0]), b3 = f.Bind(p3, r3.node_names[0]);
  ASSERT_EQ(b2.wait_for(kWait), std::future_status::ready);
  ASSERT_EQ(b3.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(b2.get(), "");
  EXPECT_EQ(b3.get(), "");
  EXPECT_EQ(f.Members("default/train"), 4);
  EXPECT_EQ(f.UsedGpus(), 32);
  EXPECT_TRUE(f.Invariants().ok()) << f.Invariants();
}

}  // namespace
}  // namespace topogang

namespace topogang {
namespace {

std::set<std::string> Spares(DaemonState& state) {
  std::set<std::string> out;
  for (const DaemonState::SpareNode& n : state.ListSpares().nodes) out.insert(n.node);
  return out;
}

// Hot spares (#13) across a restart: the pool is chosen once the bound pods are adopted, so a node
// found running a pod is not promised as an idle spare; a label change moves the pool at once; a
// member of the regrouped gang lost afterwards is replaced on the spare of its node's rack.
TEST(RegroupTest, SparesAreChosenAfterBoundPodsAreAdopted) {
  Fixture f(8);  // two racks of four nodes
  SpareOptions one;
  one.per_domain = 1;
  f.state.SetSpareOptions(one);
  EXPECT_EQ(Spares(f.state), (std::set<std::string>{"gpu-node-003", "gpu-node-007"}));
  f.state.SetMarkedSpares({"gpu-node-000"});  // labelled: rack-000's one spare now
  EXPECT_EQ(Spares(f.state), (std::set<std::string>{"gpu-node-000", "gpu-node-007"}));
  f.state.SetMarkedSpares({});
  // A restart finds gang train running on gpu-node-002 and gpu-node-003.
  std::vector<PodInfo> pods = {Member("train", 2, 0, 8, "gpu-node-002"),
                               Member("train", 2, 1, 8, "gpu-node-003")};
  ASSERT_TRUE(f.ledger.Rebuild(TestCluster(8), pods).ok());
  EXPECT_EQ(Spares(f.state), (std::set<std::string>{"gpu-node-001", "gpu-node-007"}))
      << "gpu-node-003 is busy: rack-000's spare is its last idle node";
  // Member 1 is lost with its pod; the controller creates it again.
  f.ledger.PodDeleted(pods[1]);
  testing::PodOpts o = GangPod("train", 2, 1, 8);
  o.name += "-again";
  o.uid = "uid-" + o.name;
  ExtenderFilterResult r = f.Filter(MakePod(o));
  ASSERT_EQ(r.node_names.size(), 1u)
      << (r.failed_unresolvable.empty() ? r.error : r.failed_unresolvable[0].second);
  EXPECT_EQ(r.node_names[0], "gpu-node-001") << "the spare of the lost node's rack";
  EXPECT_TRUE(f.SawEvent("spare-taken", "default/train"));
  EXPECT_TRUE(f.Invariants().ok()) << f.Invariants();
}

}  // namespace
}  // namespace topogang
