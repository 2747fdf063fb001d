#include "scheduler/preemption.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>

#include "tests/test_util.h"

namespace topogang {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeCluster;

using Names = std::vector<std::string>;

GangSpec Gang(std::string name, int members, int gpus, int priority,
              std::string required_tier = "") {
  GangSpec g;
  g.name = std::move(name);
  g.members = members;
  g.gpus_per_member = gpus;
  g.priority = priority;
  g.required_tier = std::move(required_tier);
  return g;
}

// Runs (holds GPUs for) `name` with one member of `gpus` GPUs per entry of `nodes`, on each node's
// first free GPUs.
void Hold(GangScheduler& s, const std::string& name, int priority, const std::vector<int>& nodes,
          int gpus) {
  const Cluster& c = s.cluster();
  Placement p;
  std::set<int> taken;
  for (int n : nodes) {
    MemberPlacement m{n, {}};
    for (int g = c.node(n).gpu_begin; g < c.node(n).gpu_begin + c.node(n).gpus; ++g) {
      if (static_cast<int>(m.gpus.size()) == gpus) break;
      if (c.IsFree(g) && !taken.count(g)) m.gpus.push_back(g), taken.insert(g);
    }
    ASSERT_EQ(static_cast<int>(m.gpus.size()), gpus) << name << " on node " << n;
    p.members.push_back(std::move(m));
  }
  GangSpec spec = Gang(name, static_cast<int>(nodes.size()), gpus, priority);
  ASSERT_TRUE(s.Adopt(spec, std::move(p), GangState::kRunning, absl::UnixEpoch()).ok()) << name;
}

// One zone, one spine, two leaves of four 8-GPU nodes: leaf0 = nodes 0-3, leaf1 = nodes 4-7.
GangScheduler TwoLeaves() {
  GangScheduler s(MakeCluster(1, 1, 2, 4, 8));
  const Cluster& c = s.cluster();
  const int leaf = c.LevelByName("leaf");
  EXPECT_EQ(c.AncestorAt(c.NodeDomain(3), leaf), c.AncestorAt(c.NodeDomain(0), leaf));
  EXPECT_NE(c.AncestorAt(c.NodeDomain(4), leaf), c.AncestorAt(c.NodeDomain(3), leaf));
  return s;
}

TEST(Preemption, FitsAlreadyNeedsNoVictims) {
  GangScheduler s = TwoLeaves();
  auto plan = PlanPreemption(s, Gang("p", 4, 8, 10, "leaf"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->victims.empty());
  EXPECT_EQ(plan->placement.members.size(), 4u);
}

TEST(Preemption, FewestVictimsAtEqualPriority) {
  // The pending gang needs a whole leaf (4 x 8 GPUs). leaf0 holds a and b (priority 1, two nodes
  // each): two victims. leaf1 holds c (priority 1, all four nodes): one victim. Expected: {c}.
  GangScheduler s = TwoLeaves();
  Hold(s, "a", 1, {0, 1}, 8);
  Hold(s, "b", 1, {2, 3}, 8);
  Hold(s, "c", 1, {4, 5, 6, 7}, 8);
  auto plan = PlanPreemption(s, Gang("p", 4, 8, 10, "leaf"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->victims, ElementsAre("c"));
  EXPECT_EQ(plan->victim_gpus, 32);
  for (const MemberPlacement& m : plan->placement.members) EXPECT_GE(m.node, 4);
}

TEST(Preemption, LowestPriorityBeforeFewestVictims) {
  // Same shape, but c has priority 5 and a, b priority 0: evicting two priority-0 gangs beats
  // evicting one priority-5 gang. Expected: {a, b} and the gang on leaf0.
  GangScheduler s = TwoLeaves();
  Hold(s, "a", 0, {0, 1}, 8);
  Hold(s, "b", 0, {2, 3}, 8);
  Hold(s, "c", 5, {4, 5, 6, 7}, 8);
  auto plan = PlanPreemption(s, Gang("p", 4, 8, 10, "leaf"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->victims, ElementsAre("a", "b"));
  EXPECT_EQ(plan->max_victim_priority, 0);
  for (const MemberPlacement& m : plan->placement.members) EXPECT_LT(m.node, 4);
}

TEST(Preemption, FewestGpusAmongOneVictimChoices) {
  // Pending: 2 x 8 GPUs within one leaf. Free: node 0 (leaf0) and node 4 (leaf1). Priority 100
  // (not eligible) holds nodes 2, 3 and 7. Victim candidates, each one gang of priority 1:
  //   leaf0: x on node 1 (1 x 8 = 8 GPUs)       -> nodes 0 + 1 free
  //   leaf1: z on nodes 5 and 6 (2 x 8 = 16 GPUs) -> nodes 4 + 5 + 6 free
  // Both are one victim at priority 1; x frees fewer GPUs. Expected: {x}.
  GangScheduler s = TwoLeaves();
  Hold(s, "hi", 100, {2, 3, 7}, 8);
  Hold(s, "x", 1, {1}, 8);
  Hold(s, "z", 1, {5, 6}, 8);
  auto plan = PlanPreemption(s, Gang("p", 2, 8, 10, "leaf"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->victims, ElementsAre("x"));
  EXPECT_EQ(plan->victim_gpus, 8);
}

TEST(Preemption, LeastFragmentationAmongEqualCosts) {
  // Pending: one member of 8 GPUs, anywhere. No node has 8 free GPUs. Priority-100 gang hi holds
  // nodes 4-7, 4 GPUs of node 1, and nothing else. Candidates (one priority-1 gang of 8 GPUs each):
  //   u: 4 GPUs on node 0 + 4 on node 1. Gone: node 0 is empty and takes the gang (partial ->
  //      full: -1), node 1 keeps hi's 4 (full -> partial: +1). Fragmentation change 0.
  //   w: 4 GPUs on node 2 + 4 on node 3, each with 4 free. Gone: one takes the gang (partial ->
  //      full: -1), the other is empty (partial -> empty: -1). Change -2.
  // Same priority, count and GPUs; w leaves fewer partially used nodes. Expected: {w}. (The
  // deterministic tie-break alone would pick u, whose domains come first.)
  GangScheduler s = TwoLeaves();
  Hold(s, "hi", 100, {4, 5, 6, 7}, 8);
  Hold(s, "hi4", 100, {1}, 4);
  Hold(s, "u", 1, {0, 1}, 4);
  Hold(s, "w", 1, {2, 3}, 4);
  auto plan = PlanPreemption(s, Gang("p", 1, 8, 10));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->victims, ElementsAre("w"));
  EXPECT_EQ(plan->fragmentation_delta, -2);
}

TEST(Preemption, NeverPreemptsEqualOrHigherPriority) {
  // Every GPU is held at priority 10 or 20; a priority-10 gang may evict none of them.
  GangScheduler s = TwoLeaves();
  Hold(s, "eq", 10, {0, 1, 2, 3}, 8);
  Hold(s, "higher", 20, {4, 5, 6, 7}, 8);
  auto plan = PlanPreemption(s, Gang("p", 1, 8, 10));
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(plan.status().message(), HasSubstr("lower priority"));
  // With one gang of priority 9 on node 7 (in place of part of "higher"), that one is the victim.
  GangScheduler t = TwoLeaves();
  Hold(t, "eq", 10, {0, 1, 2, 3}, 8);
  Hold(t, "higher", 20, {4, 5, 6}, 8);
  Hold(t, "lower", 9, {7}, 8);
  auto ok = PlanPreemption(t, Gang("p", 1, 8, 10));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_THAT(ok->victims, ElementsAre("lower"));
}

TEST(Preemption, NeverPreemptsForAGangThatStillWouldNotFit) {
  // 5 x 8 within one leaf of four nodes: no eviction helps.
  GangScheduler s = TwoLeaves();
  Hold(s, "a", 0, {0, 1, 2, 3}, 8);
  EXPECT_EQ(PlanPreemption(s, Gang("p", 5, 8, 10, "leaf")).status().code(),
            absl::StatusCode::kResourceExhausted);
  // 4 x 8 within one leaf: leaf0 has a cordoned node, so evicting a gives 3 nodes; leaf1 is held
  // at a higher priority. Evicting a (the only lower-priority gang) would not make room.
  GangScheduler t = TwoLeaves();
  Hold(t, "a", 0, {1, 2, 3}, 8);
  Hold(t, "hi", 100, {4}, 8);
  (void)t.SetNodeCordoned(0, true, absl::UnixEpoch());
  auto plan = PlanPreemption(t, Gang("p", 4, 8, 10, "leaf"));
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted) << plan.status();
}

TEST(Preemption, VictimsAreWholeGangs) {
  // s spans both leaves (node 3 in leaf0, node 4 in leaf1). The pending gang needs leaf0 whole
  // (leaf1 is held at a higher priority). s is the victim and all 16 of its GPUs go, including
  // its member in leaf1 that the gang does not use.
  GangScheduler s = TwoLeaves();
  Hold(s, "a", 0, {0, 1, 2}, 8);
  Hold(s, "s", 0, {3, 4}, 8);
  Hold(s, "hi", 100, {5, 6, 7}, 8);
  auto plan = PlanPreemption(s, Gang("p", 4, 8, 10, "leaf"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->victims, ElementsAre("a", "s"));
  EXPECT_EQ(plan->victim_gpus, 40);
  ASSERT_TRUE(ApplyPreemption(s, Gang("p", 4, 8, 10, "leaf"), *plan, absl::UnixEpoch()).ok());
  EXPECT_EQ(s.Find("s"), nullptr);
  EXPECT_EQ(s.Find("a"), nullptr);
  EXPECT_EQ(s.cluster().NodeFreeHealthy(4), 8) << "the victim's member outside the domain goes too";
  EXPECT_EQ(s.Find("p")->state, GangState::kReserved);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(Preemption, PrefersOneLeafForALeafSizedGangWithoutRequiredTier) {
  // No required tier: 4 x 8 could also span leaves. leaf1 holds one priority-1 gang on all four
  // nodes; leaf0 holds two priority-1 gangs. The narrowest choice with one victim is leaf1: {c}.
  GangScheduler s = TwoLeaves();
  Hold(s, "a", 1, {0, 1}, 8);
  Hold(s, "b", 1, {2, 3}, 8);
  Hold(s, "c", 1, {4, 5, 6, 7}, 8);
  auto plan = PlanPreemption(s, Gang("p", 4, 8, 10));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->victims, ElementsAre("c"));
  EXPECT_EQ(s.cluster().LevelName(plan->placement.level), "leaf");
}

TEST(Preemption, ApplyRejectsAStaleOrForbiddenPlan) {
  GangScheduler s = TwoLeaves();
  Hold(s, "a", 0, {0, 1, 2, 3}, 8);
  Hold(s, "b", 50, {4, 5, 6, 7}, 8);
  PreemptionPlan bad;
  bad.victims = {"b"};
  EXPECT_EQ(ApplyPreemption(s, Gang("p", 1, 8, 10), bad, absl::UnixEpoch()).code(),
            absl::StatusCode::kFailedPrecondition);
  bad.victims = {"gone"};
  EXPECT_EQ(ApplyPreemption(s, Gang("p", 1, 8, 10), bad, absl::UnixEpoch()).code(),
            absl::StatusCode::kNotFound);
  EXPECT_NE(s.Find("b"), nullptr);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(Preemption, HoldsAreNeverVictims) {
  GangScheduler s = TwoLeaves();
  Hold(s, "hi", 100, {0, 1, 2, 3, 4, 5, 6}, 8);
  Placement hold;
  hold.members.push_back({7, {}});
  for (int g = 0; g < 8; ++g) hold.members[0].gpus.push_back(s.cluster().node(7).gpu_begin + g);
  ASSERT_TRUE(s.Adopt(Gang("hold/x", 1, 8, 0), hold, GangState::kHeld, absl::UnixEpoch()).ok());
  EXPECT_FALSE(PlanPreemption(s, Gang("p", 1, 8, 10)).ok());
}

// Random clusters and gangs (no slices): when evicting every lower-priority gang would let the
// planner place the gang, a plan exists; every plan's victims are lower priority, applying it
// reserves the gang, and a plan is never made for a gang that would not fit.
TEST(Preemption, RandomizedProperties) {
  std::mt19937 rng(13);
  int planned = 0, refused = 0;
  for (int iter = 0; iter < 150; ++iter) {
    GangScheduler s(MakeCluster(1, 1 + rng() % 2, 1 + rng() % 3, 1 + rng() % 4,
                                std::vector<int>{2, 4, 8}[rng() % 3]));
    const Cluster& c = s.cluster();
    for (int i = 0; i < 40; ++i) {
      GangSpec g = Gang("g" + std::to_string(i), 1 + rng() % 4, 1 + rng() % c.max_gpus_per_node(),
                        static_cast<int>(rng() % 5));
      if (rng() % 3 == 0) g.required_tier = c.LevelName(rng() % c.num_levels());
      if (s.Reserve(g, absl::UnixEpoch()).ok() && rng() % 2) (void)s.Commit(g.name);
    }
    if (rng() % 3 == 0) (void)s.SetNodeCordoned(rng() % c.num_nodes(), true, absl::UnixEpoch());
    GangSpec p =
        Gang("p", 1 + rng() % 6, 1 + rng() % c.max_gpus_per_node(), static_cast<int>(rng() % 6));
    if (rng() % 2) p.required_tier = c.LevelName(rng() % c.num_levels());
    // Would it fit with every lower-priority gang gone?
    Cluster all = c;
    for (const auto& [name, rec] : s.gangs()) {
      if (rec.spec.priority < p.priority) {
        ASSERT_TRUE(all.Release(rec.placement.Gpus()).ok());
      }
    }
    const bool possible = Planner(all).Plan(p).ok();
    auto plan = PlanPreemption(s, p);
    ASSERT_EQ(plan.ok(), possible) << "iter " << iter << ": " << plan.status();
    if (!plan.ok()) {
      ++refused;
      continue;
    }
    ++planned;
    for (const std::string& v : plan->victims) {
      ASSERT_NE(s.Find(v), nullptr);
      EXPECT_LT(s.Find(v)->spec.priority, p.priority);
    }
    ASSERT_TRUE(ApplyPreemption(s, p, *plan, absl::UnixEpoch()).ok()) << "iter " << iter;
    ASSERT_TRUE(s.CheckInvariants().ok());
  }
  EXPECT_GT(planned, 20);
  EXPECT_GT(refused, 5);
}

// With slices the member count per domain is not the whole story, so a candidate may fail its
// re-plan: whatever is proposed must still fit, and nothing is proposed when it could not.
TEST(Preemption, RandomizedSlicedGangsNeverGetAPlanThatDoesNotFit) {
  std::mt19937 rng(1313);
  int planned = 0;
  for (int iter = 0; iter < 300; ++iter) {
    GangScheduler s(MakeCluster(1, 1 + rng() % 2, 1 + rng() % 3, 1 + rng() % 4,
                                std::vector<int>{2, 4, 8}[rng() % 3], "[H100]", rng() % 2 ? 2 : 0));
    const Cluster& c = s.cluster();
    for (int i = 0; i < 40; ++i) {
      GangSpec g = Gang("g" + std::to_string(i), 1 + rng() % 4, 1 + rng() % c.max_gpus_per_node(),
                        static_cast<int>(rng() % 5));
      if (s.Reserve(g, absl::UnixEpoch()).ok()) (void)s.Commit(g.name);
    }
    const int k = 1 + rng() % 3;
    GangSpec p = Gang("p", k * (1 + rng() % 3), 1 + rng() % c.max_gpus_per_node(),
                      static_cast<int>(rng() % 6));
    const int req = static_cast<int>(rng() % c.node_level());
    if (req > 0) p.required_tier = c.LevelName(req);
    p.slice = {k, c.LevelName(std::max(1, req) + rng() % (c.num_levels() - std::max(1, req)))};
    Cluster all = c;
    for (const auto& [name, rec] : s.gangs()) {
      if (rec.spec.priority < p.priority) {
        ASSERT_TRUE(all.Release(rec.placement.Gpus()).ok());
      }
    }
    const bool possible = Planner(all).Plan(p).ok();
    auto plan = PlanPreemption(s, p);
    if (!plan.ok()) continue;
    ++planned;
    ASSERT_TRUE(possible) << "iter " << iter;
    ASSERT_TRUE(ApplyPreemption(s, p, *plan, absl::UnixEpoch()).ok()) << "iter " << iter;
    ASSERT_TRUE(s.CheckInvariants().ok());
  }
  EXPECT_GT(planned, 20);
}

// 12,800 nodes (102,400 GPUs) full of 8-GPU-member gangs of random priority: one preemption
// decision for a leaf-sized gang and one for a 40-node gang anywhere take well under a
// second together.
TEST(Preemption, FastOnTwelveThousandNodes) {
  GangScheduler s(MakeCluster(4, 8, 16, 25, 8));
  std::mt19937 rng(7);
  for (int i = 0; s.cluster().FreeHealthy(0) > 0; ++i) {
    GangSpec g =
        Gang("g" + std::to_string(i), 1 + rng() % 8, 8, static_cast<int>(rng() % 10), "leaf");
    if (!s.Reserve(g, absl::UnixEpoch()).ok()) {
      g.members = 1;
      ASSERT_TRUE(s.Reserve(g, absl::UnixEpoch()).ok());
    }
  }
  const auto start = std::chrono::steady_clock::now();
  auto plan = PlanPreemption(s, Gang("p", 25, 8, 5, "leaf"));
  // Without a required tier every domain of every level is a candidate.
  auto anywhere = PlanPreemption(s, Gang("q", 40, 8, 5));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(anywhere.ok()) << anywhere.status();
  EXPECT_LE(plan->max_victim_priority, 4);
  EXPECT_LT(ms, 1000) << "preemption decision took " << ms << " ms";
  std::cout << "preemption on " << s.cluster().num_nodes() << " nodes, " << s.gangs().size()
            << " gangs: " << ms << " ms, " << plan->victims.size() << " victims\n";
}

// The worst shape for the greedy choice: 12,800 one-node gangs, and a 400-node gang with no
// required tier (candidates at every level, hundreds of victims each).
TEST(Preemption, ManySmallVictimsOnTwelveThousandNodes) {
  GangScheduler s(MakeCluster(4, 8, 16, 25, 8));
  for (int n = 0; n < s.cluster().num_nodes(); ++n) {
    Placement p;
    p.members.push_back({n, {}});
    for (int g = 0; g < 8; ++g) p.members[0].gpus.push_back(s.cluster().node(n).gpu_begin + g);
    ASSERT_TRUE(s.Adopt(Gang("g" + std::to_string(n), 1, 8, n % 3), std::move(p),
                        GangState::kRunning, absl::UnixEpoch())
                    .ok());
  }
  const auto start = std::chrono::steady_clock::now();
  auto plan = PlanPreemption(s, Gang("p", 400, 8, 5));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->victims.size(), 400u);
  EXPECT_EQ(plan->max_victim_priority, 0) << "4,267 priority-0 gangs are enough";
  EXPECT_LT(ms, 3000) << "preemption decision took " << ms << " ms";
  std::cout << "400-node gang over 12,800 one-node gangs: " << ms << " ms\n";
}

}  // namespace
}  // namespace topogang
