#include "scheduler/spares.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/queue_policy.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

using ::testing::ElementsAre;
using testing::MakeCluster;

GangSpec Gang(std::string name, int members, int gpus, std::string required_tier = "") {
  GangSpec g;
  g.name = std::move(name);
  g.members = members;
  g.gpus_per_member = gpus;
  g.required_tier = std::move(required_tier);
  return g;
}

// Two leaves of five 8-GPU nodes (leaf0 = nodes 0-4, leaf1 = nodes 5-9), one spare per leaf:
// the last node of each, 4 and 9.
struct World {
  GangScheduler sched{MakeCluster(1, 1, 2, 5, 8)};
  SparePool pool = *SparePool::Build(sched.cluster(), SpareOptions{"leaf", 1, {}});
};

TEST(Spares, OnePerLeafLastNodeFirst) {
  World w;
  EXPECT_THAT(w.pool.nodes(), ElementsAre(4, 9));
  EXPECT_TRUE(w.pool.IsSpare(9));
  EXPECT_FALSE(w.pool.IsSpare(8));
  EXPECT_EQ(w.pool.Available(w.sched.cluster(), 0, 8), 2);
  // A marked node counts toward its leaf; a busy node is never chosen.
  GangScheduler s(MakeCluster(1, 1, 2, 5, 8));
  const std::string n1 = s.cluster().node(1).name;
  Placement busy;
  busy.members.push_back({9, {s.cluster().node(9).gpu_begin}});
  ASSERT_TRUE(s.Adopt(Gang("busy", 1, 1), busy, GangState::kRunning, absl::UnixEpoch()).ok());
  auto pool = SparePool::Build(s.cluster(), SpareOptions{"leaf", 1, {n1}});
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_THAT(pool->nodes(), ElementsAre(1, 8));
  EXPECT_FALSE(SparePool::Build(s.cluster(), SpareOptions{"nope", 1, {}}).ok());
  EXPECT_FALSE(SparePool::Build(s.cluster(), SpareOptions{"leaf", 1, {"no-such-node"}}).ok());
}

TEST(Spares, OrdinaryGangsNeverLandOnSpares) {
  World w;
  {
    SpareMask mask(w.sched, w.pool);
    // A leaf-sized gang of 5 nodes no longer fits (each leaf has 4 ordinary nodes)...
    EXPECT_FALSE(w.sched.Reserve(Gang("five", 5, 8, "leaf"), absl::UnixEpoch()).ok());
    // ... and one-node gangs fill exactly the 8 ordinary nodes, through the queue as well.
    GangQueue q;
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(q.Enqueue(Gang("g" + std::to_string(i), 1, 8), absl::UnixEpoch()).ok());
    }
    EXPECT_EQ(q.Schedule(w.sched, absl::UnixEpoch()).size(), 8u);
    EXPECT_EQ(q.size(), 2u);
  }
  for (const auto& [name, rec] : w.sched.gangs()) {
    for (int n : rec.placement.Nodes()) EXPECT_FALSE(w.pool.IsSpare(n)) << name << " on " << n;
  }
  // The mask is gone: the spares are free and healthy again.
  EXPECT_EQ(w.sched.cluster().NodeFreeHealthy(4), 8);
  EXPECT_EQ(w.sched.cluster().NodeFreeHealthy(9), 8);
  EXPECT_TRUE(w.sched.CheckInvariants().ok());
}

TEST(Spares, SpareReplacesAFailedNodeInTheSameLeaf) {
  // "a" (4 x 8 within a leaf) fills leaf0's ordinary nodes 0-3; "b" holds nodes 5 and 6, so
  // leaf1 has ordinary nodes 7 and 8 free. Node 1 fails. Without spares the replacement would
  // have to leave the leaf (PlanNear: node 7 or 8, one tier further); with them it is spare 4.
  World w;
  {
    SpareMask mask(w.sched, w.pool);
    ASSERT_TRUE(w.sched.Reserve(Gang("a", 4, 8, "spine"), absl::UnixEpoch()).ok());
    ASSERT_TRUE(w.sched.Reserve(Gang("b", 2, 8), absl::UnixEpoch()).ok());
  }
  ASSERT_EQ(w.sched.Find("a")->placement.Nodes(), (std::vector<int>{0, 1, 2, 3}));
  ASSERT_EQ(w.sched.Find("b")->placement.Nodes(), (std::vector<int>{5, 6}));
  ASSERT_TRUE(w.sched.Commit("a").ok());
  ASSERT_TRUE(w.sched.Commit("b").ok());
  w.sched.SetNodeCordoned(1, true, absl::UnixEpoch());
  const std::vector<int> lost{1};  // member ordinal 1 was on node 1
  ASSERT_EQ(w.sched.Find("a")->placement.members[1].node, 1);

  auto repl = ProposeSpareReplacement(w.sched, w.pool, "a", lost);
  ASSERT_TRUE(repl.ok()) << repl.status();
  ASSERT_EQ(repl->size(), 1u);
  EXPECT_EQ((*repl)[0].node, 4) << "the spare in the failed node's leaf";
  ASSERT_TRUE(w.sched.ApplyReplacement("a", lost, *repl).ok());
  EXPECT_EQ(w.sched.cluster().LevelName(w.sched.Find("a")->placement.level), "leaf");

  // No lost member: nothing to propose (and no crash).
  auto none = ProposeSpareReplacement(w.sched, w.pool, "a", {});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());

  // Node 2 fails next: leaf0's spare is taken, and leaf1's spare (9) belongs to leaf1, so the
  // replacement comes from ordinary capacity: node 7 or 8.
  w.sched.SetNodeCordoned(2, true, absl::UnixEpoch());
  auto next = ProposeSpareReplacement(w.sched, w.pool, "a", {2});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_TRUE((*next)[0].node == 7 || (*next)[0].node == 8) << (*next)[0].node;
  EXPECT_TRUE(w.sched.CheckInvariants().ok());
}

TEST(Spares, SeveralLostMembersTakeSeveralSpares) {
  // Two spares per leaf (leaf0: 3 and 4). A 3 x 8 gang on nodes 0-2 loses nodes 0 and 1 in one
  // event (a leaf switch reboot): both go to leaf0's spares, no GPU promised twice.
  GangScheduler s(MakeCluster(1, 1, 2, 5, 8));
  SparePool pool = *SparePool::Build(s.cluster(), SpareOptions{"leaf", 2, {}});
  ASSERT_THAT(pool.nodes(), ElementsAre(3, 4, 8, 9));
  {
    SpareMask mask(s, pool);
    ASSERT_TRUE(s.Reserve(Gang("a", 3, 8, "leaf"), absl::UnixEpoch()).ok());
  }
  ASSERT_TRUE(s.Commit("a").ok());
  s.SetNodeCordoned(0, true, absl::UnixEpoch());
  s.SetNodeCordoned(1, true, absl::UnixEpoch());
  auto repl = ProposeSpareReplacement(s, pool, "a", {0, 1});
  ASSERT_TRUE(repl.ok()) << repl.status();
  EXPECT_EQ((*repl)[0].node, 3);
  EXPECT_EQ((*repl)[1].node, 4);
  ASSERT_TRUE(s.ApplyReplacement("a", {0, 1}, *repl).ok());
  EXPECT_TRUE(s.CheckInvariants().ok());
}

}  // namespace
}  // namespace topogang
