// Holds through the daemon, with the pods offered what kube-scheduler would offer: never a node
// whose GPUs are all in use (NodeResourcesFit), and only the nodes its own filters accept. A
// starved gang's GPUs are held on nodes it may use, and it may still hold nodes busy now.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "extender/extender_service.h"
#include "k8s/gang_labels.h"
#include "scheduler/queue_policy.h"
#include "tests/support/service_fixture.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

namespace t = testing;

std::vector<std::string> Nodes(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i <= to; ++i) out.push_back(t::NodeNames(i + 1).back());
  return out;
}

// The nodes whose GPUs the queue holds for gang "big" now, by name.
std::set<std::string> HeldForBig(t::ServiceFixture& f) {
  return f.state.With([](GangScheduler& s) {
    std::set<std::string> out;
    if (const GangRecord* h = s.Find(GangQueue::HoldName("default/big"))) {
      for (const MemberPlacement& m : h->placement.members) {
        out.insert(s.cluster().node(m.node).name);
      }
    }
    return out;
  });
}

// Pod `i` of gang "big" (`n` x 8 GPUs, within `tier` if set).
Json BigPod(int n, int i, const std::string& tier) {
  t::PodOpts pod = t::GangPod("big", n, i, 8);
  if (!tier.empty()) pod.annotations[kRequiredTierKey] = tier;
  return t::MakePod(pod);
}

// Filters the pods of gang "big" (`n` x 8 GPUs, within `tier` if set) offered `offered`; returns
// the nodes they passed on.
std::set<std::string> FilterBig(t::ServiceFixture& f, int n, const std::string& tier,
                                const std::vector<std::string>& offered) {
  std::set<std::string> nodes;
  for (int i = 0; i < n; ++i) {
    const ExtenderFilterResult r = f.FilterOffered(BigPod(n, i, tier), offered);
    EXPECT_EQ(r.node_names.size(), 1u) << r.error;
    if (!r.node_names.empty()) nodes.insert(r.node_names[0]);
  }
  return nodes;
}

// A 4 x 8 gang whose pods may only go to rack-001 (a node selector) starves while rack-000 is
// freer. The hold is chosen by whichever filter runs the queue first once it starved: a pod of
// the gang itself, or (`other_pod_first`) another pod, which must still see the gang's
// exclusions.
void HoldsOnlyNodesItMayUse(bool other_pod_first) {
  const QueueOptions q = t::StarvedGangsHoldAtOnce(16);
  t::ServiceFixture f(8, absl::Seconds(10), q);  // rack-000: nodes 0-3, rack-001: nodes 4-7
  const std::vector<std::string> rack0 = Nodes(0, 3), rack1 = Nodes(4, 7);
  // A job on node 4: rack-001 has three free nodes, rack-000 four.
  const Json a = t::MakePod(t::GangPod("a", 1, 0, 8));
  ASSERT_EQ(f.FilterOffered(a, {rack1[0]}).node_names, std::vector<std::string>{rack1[0]});
  auto bound = f.Bind(a, rack1[0]);
  ASSERT_EQ(bound.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  // kube-scheduler offers the gang rack-001's free nodes: not node 4, which is full.
  const std::vector<std::string> offered(rack1.begin() + 1, rack1.end());
  const Json b0 = t::MakePod(t::GangPod("big", 4, 0, 8));
  EXPECT_TRUE(f.FilterOffered(b0, offered).node_names.empty());
  f.clock.Advance(absl::Minutes(2));
  const Json p0 = t::MakePod(t::GangPod("p0", 1, 0, 8));
  if (other_pod_first) {
    EXPECT_EQ(f.FilterOffered(p0, {rack0[0]}).node_names, std::vector<std::string>{rack0[0]})
        << "rack-000 is not held: the gang could never run there";
  } else {
    EXPECT_TRUE(f.FilterOffered(b0, offered).node_names.empty());
  }
  EXPECT_EQ(HeldForBig(f), std::set<std::string>(offered.begin(), offered.end()))
      << "held where it was offered, not in the freer rack-000";
  // A pod in rack-001 is refused; one in rack-000 is not.
  EXPECT_TRUE(f.FilterOffered(t::MakePod(t::GangPod("p1", 1, 0, 8)), {rack1[1]}).node_names.empty())
      << "rack-001 is held for the gang";
  if (!other_pod_first) {
    EXPECT_EQ(f.FilterOffered(p0, {rack0[0]}).node_names, std::vector<std::string>{rack0[0]})
        << "rack-000 is not held: the gang could never run there";
  }
  // The job on node 4 ends: the gang starts on rack-001, node 4 included (it was claimed
  // though never offered while full).
  f.ledger.PodDeleted(t::FinishedPod("a-0"));
  EXPECT_EQ(FilterBig(f, 4, "", rack1), std::set<std::string>(rack1.begin(), rack1.end()));
}

TEST(QueueHoldOfferedTest, AStarvedGangHoldsOnlyNodesItMayUse) { HoldsOnlyNodesItMayUse(false); }

TEST(QueueHoldOfferedTest, AnotherPodsFilterHoldsOnlyNodesTheStarvedGangMayUse) {
  HoldsOnlyNodesItMayUse(true);
}

TEST(QueueHoldOfferedTest, AStarvedGangHoldsNodesThatAreOnlyBusyNow) {
  const QueueOptions q = t::StarvedGangsHoldAtOnce(16);
  t::ServiceFixture f(8, absl::Seconds(10), q);
  const std::vector<std::string> rack0 = Nodes(0, 3), rack1 = Nodes(4, 7);
  // Jobs on nodes 0 and 4: each rack has three free nodes.
  for (const std::string& node : {rack0[0], rack1[0]}) {
    const Json a = t::MakePod(t::GangPod("a" + node, 1, 0, 8));
    ASSERT_EQ(f.FilterOffered(a, {node}).node_names, std::vector<std::string>{node});
    auto bound = f.Bind(a, node);
    ASSERT_EQ(bound.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  }
  // A 4 x 8 gang within one rack, with no other constraint: kube-scheduler offers it every
  // free node and none of the full ones. It waits, starves and holds one rack, full node
  // included: what it was not offered is only busy.
  t::PodOpts big = t::GangPod("big", 4, 0, 8);
  big.annotations[kRequiredTierKey] = "rack";
  const std::vector<std::string> free = {rack0[1], rack0[2], rack0[3],
                                         rack1[1], rack1[2], rack1[3]};
  EXPECT_TRUE(f.FilterOffered(t::MakePod(big), free).node_names.empty());
  f.clock.Advance(absl::Minutes(2));
  EXPECT_TRUE(f.FilterOffered(t::MakePod(big), free).node_names.empty());
  const std::set<std::string> held_now = HeldForBig(f);
  EXPECT_TRUE(held_now == std::set<std::string>(free.begin(), free.begin() + 3) ||
              held_now == std::set<std::string>(free.begin() + 3, free.end()))
      << "the free nodes of one rack are held at once, by the filter of the gang's own pod";
  const bool rack0_held =
      f.FilterOffered(t::MakePod(t::GangPod("p0", 1, 0, 8)), {rack0[1]}).node_names.empty();
  const bool rack1_held =
      f.FilterOffered(t::MakePod(t::GangPod("p1", 1, 0, 8)), {rack1[1]}).node_names.empty();
  ASSERT_NE(rack0_held, rack1_held) << "exactly one rack is held for the starved gang";
  // The job in the held rack ends: the gang starts there.
  const std::vector<std::string>& held = rack0_held ? rack0 : rack1;
  f.ledger.PodDeleted(t::FinishedPod("a" + held[0] + "-0"));
  std::vector<std::string> now_free = free;
  now_free.push_back(held[0]);
  EXPECT_EQ(FilterBig(f, 4, "rack", now_free), std::set<std::string>(held.begin(), held.end()));
}

// Binds a gang of one (`gpus` GPUs) offered only `node`.
void RunOn(t::ServiceFixture& f, const std::string& job, int gpus, const std::string& node) {
  const Json pod = t::MakePod(t::GangPod(job, 1, 0, gpus));
  ASSERT_EQ(f.FilterOffered(pod, {node}).node_names, std::vector<std::string>{node});
  auto bound = f.Bind(pod, node);
  ASSERT_EQ(bound.wait_for(std::chrono::seconds(20)), std::future_status::ready);
}

TEST(QueueHoldOfferedTest, AHeldNodeTheGangIsNotOfferedLeavesItsHold) {
  const QueueOptions q = t::StarvedGangsHoldAtOnce(16);
  t::ServiceFixture f(8, absl::Seconds(10), q);
  const std::vector<std::string> rack0 = Nodes(0, 3), rack1 = Nodes(4, 7);
  // Node 4 runs two 4-GPU jobs, node 7 one 8-GPU job. The gang (3 x 8 within one rack) may use
  // nodes 4-6 only (node 7 has a taint it does not tolerate); kube-scheduler offers it 5 and 6.
  ASSERT_NO_FATAL_FAILURE(RunOn(f, "x1", 4, rack1[0]));
  ASSERT_NO_FATAL_FAILURE(RunOn(f, "x2", 4, rack1[0]));
  ASSERT_NO_FATAL_FAILURE(RunOn(f, "y", 8, rack1[3]));
  const std::vector<std::string> offered = {rack1[1], rack1[2]};
  EXPECT_TRUE(f.FilterOffered(BigPod(3, 0, "rack"), offered).node_names.empty());
  f.clock.Advance(absl::Minutes(2));
  EXPECT_TRUE(f.FilterOffered(BigPod(3, 0, "rack"), offered).node_names.empty());
  // Starved, it holds in rack-001 and claims node 7, full and never offered (the fewest jobs);
  // only nodes 5 and 6 have GPUs to hold yet.
  EXPECT_EQ(HeldForBig(f), std::set<std::string>(offered.begin(), offered.end()));
  // Node 7's job ends; another pod's filter runs the queue. Node 7 was only full at the gang's
  // last filter as far as topogang can tell, so the queue starts the gang on nodes 5-7.
  f.ledger.PodDeleted(t::FinishedPod("y-0"));
  ASSERT_EQ(f.FilterOffered(t::MakePod(t::GangPod("p0", 1, 0, 8)), {rack0[0]}).node_names,
            std::vector<std::string>{rack0[0]});
  EXPECT_EQ(f.state.With([&](GangScheduler& s) {
    const GangRecord* r = s.Find("default/big");
    return r && r->state == GangState::kReserved ? r->placement.Nodes() : std::vector<int>{};
  }),
            (std::vector<int>{5, 6, 7}));
  // The gang's pods are not offered node 7 though its GPUs are free to kube-scheduler: the
  // member whose slot is there is refused, and the gang is planned again inside what it was
  // offered. It does not fit, and waits again with its seniority: starved, it holds at once, on
  // nodes 5 and 6 but no longer on node 7, which it was refused with room.
  EXPECT_EQ(f.FilterOffered(BigPod(3, 0, "rack"), offered).node_names,
            std::vector<std::string>{rack1[1]});
  EXPECT_EQ(f.FilterOffered(BigPod(3, 1, "rack"), offered).node_names,
            std::vector<std::string>{rack1[2]});
  EXPECT_TRUE(f.FilterOffered(BigPod(3, 2, "rack"), offered).node_names.empty());
  EXPECT_TRUE(f.FilterOffered(BigPod(3, 0, "rack"), offered).node_names.empty());
  EXPECT_EQ(HeldForBig(f), std::set<std::string>(offered.begin(), offered.end()));
  EXPECT_EQ(f.FilterOffered(t::MakePod(t::GangPod("p7", 1, 0, 8)), {rack1[3]}).node_names,
            std::vector<std::string>{rack1[3]});
}

// A pod another scheduler bound onto GPUs the queue held (kube-scheduler sees held GPUs as free:
// no pod requests them). The API server is the truth: the pod is adopted on those GPUs and the
// hold gives them up. Before, adoption failed and the model kept them held, as if free for the
// gang: wrong occupancy, and a hold counting a node it cannot have as ready (kube-scheduler's
// NodeResourcesFit still kept the gang's pods off it).
TEST(QueueHoldOfferedTest, APodBoundOutsideTopogangOnHeldGpusIsAdoptedAndTheHoldYields) {
  const QueueOptions q = t::StarvedGangsHoldAtOnce(16);
  t::ServiceFixture f(8, absl::Seconds(10), q);
  const std::vector<std::string> rack1 = Nodes(4, 7);
  ASSERT_NO_FATAL_FAILURE(RunOn(f, "a", 8, rack1[0]));
  const std::vector<std::string> offered(rack1.begin() + 1, rack1.end());
  EXPECT_TRUE(f.FilterOffered(BigPod(4, 0, "rack"), offered).node_names.empty());
  f.clock.Advance(absl::Minutes(2));
  EXPECT_TRUE(f.FilterOffered(BigPod(4, 0, "rack"), offered).node_names.empty());
  ASSERT_TRUE(HeldForBig(f).count(rack1[1]));
  PodInfo foreign;
  foreign.name = "foreign";
  foreign.namespace_ = "default";
  foreign.uid = "uid-foreign";
  foreign.node_name = rack1[1];
  foreign.phase = "Running";
  foreign.gpus = 8;
  foreign.mentions_resource = true;
  foreign.scheduler_name = "default-scheduler";
  f.ledger.ObservePod(foreign);
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
  const std::vector<int> on = f.state.With([](GangScheduler& s) {
    const GangRecord* r = s.Find(SingletonGangId("default", "foreign"));
    return r ? r->placement.Nodes() : std::vector<int>{};
  });
  EXPECT_EQ(on, std::vector<int>{5}) << "the pod running on held GPUs is in the model, there";
  // The gang's next filter: the hold is back on the free nodes of its claim, not on node 5.
  EXPECT_TRUE(f.FilterOffered(BigPod(4, 0, "rack"), {rack1[2], rack1[3]}).node_names.empty());
  EXPECT_EQ(HeldForBig(f), (std::set<std::string>{rack1[2], rack1[3]}));
  // Job a ends: rack-001 still has only three nodes for the gang (node 5 runs the foreign pod),
  // so it does not start there.
  f.ledger.PodDeleted(t::FinishedPod("a-0"));
  EXPECT_TRUE(
      f.FilterOffered(BigPod(4, 0, "rack"), {rack1[0], rack1[2], rack1[3]}).node_names.empty());
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

}  // namespace
}  // namespace topogang
