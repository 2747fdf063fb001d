#include "scheduler/replacement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "tests/test_util.h"

namespace topogang {
namespace {

using ::testing::HasSubstr;
using testing::MakeCluster;

// Gang `name` of `members` x 8 GPUs in slices of 2 within one NVLink domain ("accelerator"),
// adopted running on `nodes` (one member per node, all 8 GPUs).
const GangRecord* AdoptSliced(GangScheduler& s, const std::string& name,
                              const std::vector<int>& nodes, int slice = 2) {
  GangSpec g;
  g.name = name;
  g.members = static_cast<int>(nodes.size());
  g.gpus_per_member = 8;
  g.required_tier = "spine";
  g.slice = {slice, "accelerator"};
  Placement p;
  for (int n : nodes) {
    MemberPlacement m{n, {}};
    for (int i = 0; i < 8; ++i) m.gpus.push_back(s.cluster().node(n).gpu_begin + i);
    p.members.push_back(m);
  }
  EXPECT_TRUE(s.Adopt(g, p, GangState::kRunning, absl::UnixEpoch()).ok());
  return s.Find(name);
}

// Takes `gpus` GPUs of node `n` for a filler gang.
void Fill(GangScheduler& s, const std::string& name, int n, int gpus = 8) {
  GangSpec g;
  g.name = name;
  g.gpus_per_member = gpus;
  Placement p;
  MemberPlacement m{n, {}};
  for (int i = 0; i < gpus; ++i) m.gpus.push_back(s.cluster().node(n).gpu_begin + i);
  p.members.push_back(m);
  ASSERT_TRUE(s.Adopt(g, p, GangState::kRunning, absl::UnixEpoch()).ok());
}

int NvlDomain(const GangScheduler& s, int node) {
  const Cluster& c = s.cluster();
  return c.AncestorAt(c.NodeDomain(node), c.LevelByName("accelerator"));
}

// One leaf of 8 nodes in two NVLink domains: A = nodes 0-3, B = nodes 4-7. Gang "s" has slice
// 0 (members 0, 1) on nodes 0, 1 in A and slice 1 (members 2, 3) on nodes 4, 5 in B; a filler
// holds node 2. Free: node 3 (A), nodes 6, 7 (B).
struct OneLeaf {
  GangScheduler sched{MakeCluster(1, 1, 1, 8, 8, "[H100]", 4)};
  OneLeaf() {
    AdoptSliced(sched, "s", {0, 1, 4, 5});
    Fill(sched, "filler", 2);
  }
};

TEST(Replacement, LostMemberStaysInsideItsSliceDomain) {
  // Node 1 fails. PlanNear alone would pick node 6: the nearest scope holding most survivors is
  // B (two survivors) and it has room; that would split slice 0 across two NVLink domains. The
  // slice-mate (node 0) is in A, so the answer is A's free node 3.
  OneLeaf w;
  auto events = w.sched.SetNodeCordoned(1, true, absl::UnixEpoch());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, ReplanEvent::Kind::kReplacementProposed) << events[0].detail;
  ASSERT_EQ(events[0].replacement.size(), 1u);
  EXPECT_EQ(events[0].replacement[0].node, 3);
  ASSERT_TRUE(w.sched.ApplyReplacement("s", {1}, events[0].replacement).ok());
  EXPECT_TRUE(w.sched.CheckInvariants().ok());
  // The proposal's hidden hold is gone: no gang besides the two.
  EXPECT_EQ(w.sched.gangs().size(), 2u);
}

TEST(Replacement, NoRoomInTheSliceDomainMeansReplanWhole) {
  // As above but node 3 is taken too: A has no room, and the free nodes of B would break the
  // slice. The answer says so instead of proposing them.
  OneLeaf w;
  Fill(w.sched, "filler3", 3);
  auto events = w.sched.SetNodeCordoned(1, true, absl::UnixEpoch());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, ReplanEvent::Kind::kReplacementImpossible);
  EXPECT_THAT(events[0].detail, HasSubstr("re-planned whole"));
  EXPECT_THAT(events[0].detail, HasSubstr("member(s) 1"));
  auto direct = ProposeReplacement(w.sched, "s", {1});
  EXPECT_EQ(direct.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(w.sched.CheckInvariants().ok());  // nothing held by the failed proposal
  EXPECT_EQ(w.sched.cluster().NodeFreeHealthy(6), 8);
}

TEST(Replacement, SliceLostWholeGetsOneFreshDomainNearTheGang) {
  // Two leaves of 4 nodes, NVLink domains of 2: leaf0 = {0,1} {2,3}, leaf1 = {4,5} {6,7}. "s"
  // runs slice 0 on nodes 0, 1 and slice 1 on nodes 4, 5; a filler holds half of node 3. Nodes 4
  // and 5 go down together (their switch rebooted): slice 1 is lost whole.
  //   free: node 2 (8), node 3 (4), node 6 (8), node 7 (8).
  // {2,3} holds only one more 8-GPU member; {6,7} holds two. PlanNear alone would take node 2
  // (next to the survivors in leaf0) and then one of 6, 7: a slice split over two domains.
  GangScheduler s(MakeCluster(1, 1, 2, 4, 8, "[H100]", 2));
  AdoptSliced(s, "s", {0, 1, 4, 5});
  Fill(s, "filler", 3, 4);
  s.SetNodeCordoned(4, true, absl::UnixEpoch());
  s.SetNodeCordoned(5, true, absl::UnixEpoch());
  auto p = ProposeReplacement(s, "s", {2, 3});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), 2u);
  EXPECT_NE((*p)[0].node, (*p)[1].node);
  EXPECT_EQ(NvlDomain(s, (*p)[0].node), NvlDomain(s, (*p)[1].node));
  EXPECT_EQ(NvlDomain(s, (*p)[0].node), NvlDomain(s, 6));
  ASSERT_TRUE(s.ApplyReplacement("s", {2, 3}, *p).ok());
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(Replacement, TwoSlicesLostWholeNeverShareTheSameGpus) {
  // Three leaves of 4 nodes, NVLink domains of 2: {0,1} {2,3} | {4,5} {6,7} | {8,9} {10,11}.
  // "s" has slices on {0,1}, {4,5}, {2,3}; fillers hold nodes 8, 9, 10. Nodes 4, 5, 2, 3 go
  // down: slices 1 and 2 are lost whole. Only {6,7} has room for a whole slice ({10,11} has one
  // node free), so one slice fits and the other does not: the proposal fails as a whole rather
  // than promising {6,7} twice. With node 10 freed, {10,11} takes the second slice.
  GangScheduler s(MakeCluster(1, 1, 3, 4, 8, "[H100]", 2));
  AdoptSliced(s, "s", {0, 1, 4, 5, 2, 3});
  for (int n : {8, 9, 10}) Fill(s, "filler" + std::to_string(n), n);
  for (int n : {4, 5, 2, 3}) s.SetNodeCordoned(n, true, absl::UnixEpoch());
  auto p = ProposeReplacement(s, "s", {2, 3, 4, 5});
  EXPECT_EQ(p.status().code(), absl::StatusCode::kFailedPrecondition) << p.status();
  EXPECT_THAT(p.status().message(), HasSubstr("lost every member"));
  EXPECT_TRUE(s.CheckInvariants().ok());
  EXPECT_EQ(s.cluster().NodeFreeHealthy(6), 8);  // nothing left held
  ASSERT_TRUE(s.Release("filler10").ok());
  auto q = ProposeReplacement(s, "s", {2, 3, 4, 5});
  ASSERT_TRUE(q.ok()) << q.status();
  std::set<int> gpus;
  for (const MemberPlacement& m : *q) gpus.insert(m.gpus.begin(), m.gpus.end());
  EXPECT_EQ(gpus.size(), 32u);
  EXPECT_EQ(NvlDomain(s, (*q)[0].node), NvlDomain(s, (*q)[1].node));
  EXPECT_EQ(NvlDomain(s, (*q)[2].node), NvlDomain(s, (*q)[3].node));
  EXPECT_NE(NvlDomain(s, (*q)[0].node), NvlDomain(s, (*q)[2].node));
  ASSERT_TRUE(s.ApplyReplacement("s", {2, 3, 4, 5}, *q).ok());
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(Replacement, SpareOfAnotherSliceDomainIsNotTaken) {
  // One spare per leaf: node 7, in B. Slice 0 lost node 1: the spare would split it, so the
  // answer is ordinary node 3 in A. When slice 1 loses node 5, the spare in its own domain wins
  // over free node 6.
  OneLeaf w;
  auto pool = SparePool::Build(w.sched.cluster(), SpareOptions{"leaf", 1, {"node-placeholder"}});
  EXPECT_FALSE(pool.ok());  // an unknown marked node is an error
  pool = SparePool::Build(w.sched.cluster(), SpareOptions{"leaf", 1, {}});
  ASSERT_TRUE(pool.ok()) << pool.status();
  ASSERT_TRUE(pool->IsSpare(7));
  ReplacementOptions opts{&*pool, {}};
  auto a = ProposeReplacement(w.sched, "s", {1}, opts);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)[0].node, 3);
  auto b = ProposeReplacement(w.sched, "s", {3}, opts);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)[0].node, 7);
  // Both lost at once: one proposal, each in its own slice's domain.
  auto both = ProposeReplacement(w.sched, "s", {1, 3}, opts);
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ((*both)[0].node, 3);
  EXPECT_EQ((*both)[1].node, 7);
  EXPECT_TRUE(w.sched.CheckInvariants().ok());
}

TEST(Replacement, OldNodesTellWhereReleasedMembersWere) {
  // The daemon releases a member when its pod goes, so the record says node -1; the caller says
  // where it was (node 5, in B) and the spare of that domain is chosen.
  OneLeaf w;
  auto pool = SparePool::Build(w.sched.cluster(), SpareOptions{"leaf", 1, {}});
  ASSERT_TRUE(pool.ok());
  ASSERT_TRUE(w.sched.ReleaseMember("s", 3).ok());
  auto p = ProposeReplacement(w.sched, "s", {3}, ReplacementOptions{&*pool, {5}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)[0].node, 7);
  EXPECT_FALSE(ProposeReplacement(w.sched, "s", {3}, ReplacementOptions{&*pool, {5, 6}}).ok());
  EXPECT_FALSE(ProposeReplacement(w.sched, "s", {3}, ReplacementOptions{&*pool, {99}}).ok());
}

TEST(Replacement, BadInput) {
  OneLeaf w;
  EXPECT_EQ(ProposeReplacement(w.sched, "nope", {0}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ProposeReplacement(w.sched, "s", {4}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ProposeReplacement(w.sched, "s", {1, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto none = ProposeReplacement(w.sched, "s", {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace topogang
