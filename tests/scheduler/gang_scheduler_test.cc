#include "scheduler/gang_scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "scheduler/clock.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

using ::testing::HasSubstr;
using testing::MakeCluster;

GangSpec Gang(std::string name, int members, int gpus) {
  GangSpec g;
  g.name = std::move(name);
  g.members = members;
  g.gpus_per_member = gpus;
  return g;
}

TEST(GangScheduler, ReserveCommitRelease) {
  GangScheduler s(MakeCluster(1, 1, 2, 4, 8));
  FakeClock clock;
  auto r = s.Reserve(Gang("a", 4, 8), clock.Now());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->state, GangState::kReserved);
  EXPECT_EQ(s.cluster().FreeHealthy(0), 32);
  EXPECT_THAT(s.Reserve(Gang("a", 1, 1), clock.Now()).status().message(),
              HasSubstr("already holds GPUs"));
  ASSERT_TRUE(s.Commit("a").ok());
  EXPECT_EQ(s.Find("a")->state, GangState::kRunning);
  ASSERT_TRUE(s.Release("a").ok());
  EXPECT_EQ(s.cluster().FreeHealthy(0), 64);
  EXPECT_EQ(s.Release("a").code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(GangScheduler, ASlowerMarkKeepsWhereTheGangRanBeforeTheFirstSlowerRepair) {
  GangScheduler s(MakeCluster(1, 1, 2, 4, 8));
  FakeClock clock;
  ASSERT_TRUE(s.Reserve(Gang("a", 2, 8), clock.Now()).ok());
  Placement first, second;
  first.members = {{0, {}}, {1, {}}};
  second.members = {{0, {}}, {5, {}}};
  ASSERT_TRUE(s.MarkSlowerSinceRepair("a", "a lone tray", first).ok());
  // A second slower repair says why again, but later repairs are still judged against `first`.
  ASSERT_TRUE(s.MarkSlowerSinceRepair("a", "a thin side", second).ok());
  EXPECT_EQ(s.Find("a")->slower_since_repair, "a thin side");
  ASSERT_EQ(s.Find("a")->ran_before_slower.members.size(), 2u);
  EXPECT_EQ(s.Find("a")->ran_before_slower.members[1].node, 1);
  ASSERT_TRUE(s.ClearSlowerSinceRepair("a").ok());
  EXPECT_EQ(s.Find("a")->slower_since_repair, "");
  EXPECT_TRUE(s.Find("a")->ran_before_slower.members.empty());
  // Cleared, a new mark keeps the placement before it.
  ASSERT_TRUE(s.MarkSlowerSinceRepair("a", "a lone tray", second).ok());
  EXPECT_EQ(s.Find("a")->ran_before_slower.members[1].node, 5);
  EXPECT_EQ(s.ClearSlowerSinceRepair("nobody").code(), absl::StatusCode::kNotFound);
}

TEST(GangScheduler, NoFitReservesNothing) {
  GangScheduler s(MakeCluster(1, 1, 1, 2, 8));
  BitMask before = s.cluster().free_mask();
  EXPECT_FALSE(s.Reserve(Gang("big", 3, 8), absl::UnixEpoch()).ok());
  EXPECT_EQ(s.cluster().free_mask(), before);
  EXPECT_TRUE(s.gangs().empty());
}

TEST(GangScheduler, ReservationsExpireByInjectedClock) {
  GangScheduler s(MakeCluster(1, 1, 1, 2, 8), SchedulerOptions{absl::Seconds(30)});
  FakeClock clock;
  ASSERT_TRUE(s.Reserve(Gang("a", 1, 8), clock.Now()).ok());
  ASSERT_TRUE(s.Reserve(Gang("b", 1, 8), clock.Now()).ok());
  ASSERT_TRUE(s.Commit("b").ok());
  clock.Advance(absl::Seconds(29));
  EXPECT_TRUE(s.ExpireReservations(clock.Now()).empty());
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(s.ExpireReservations(clock.Now()), std::vector<std::string>{"a"});
  EXPECT_EQ(s.Find("a"), nullptr);
  EXPECT_NE(s.Find("b"), nullptr) << "running gangs never expire";
  EXPECT_EQ(s.cluster().FreeHealthy(0), 8);
}

TEST(GangScheduler, ExpiryFollowsTheCurrentDeadlineOnly) {
  // The deadline index must ignore stale entries: released and re-reserved gangs, and
  // reservations whose deadline a re-plan extended.
  GangScheduler s(MakeCluster(1, 1, 2, 4, 8), SchedulerOptions{absl::Seconds(30)});
  absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(s.Reserve(Gang("again", 1, 8), t).ok());
  ASSERT_TRUE(s.Release("again").ok());
  ASSERT_TRUE(s.Reserve(Gang("again", 1, 8), t + absl::Seconds(20)).ok());
  ASSERT_TRUE(s.Reserve(Gang("moved", 1, 8), t).ok());
  // At t+25 a cordon moves "moved": its deadline becomes t+55.
  int node = s.Find("moved")->placement.members[0].node;
  auto events = s.SetNodeCordoned(node, true, t + absl::Seconds(25));
  ASSERT_EQ(events.size(), 1u);
  ASSERT_EQ(events[0].kind, ReplanEvent::Kind::kReplanned);
  EXPECT_TRUE(s.ExpireReservations(t + absl::Seconds(30)).empty())
      << "old deadlines of re-reserved and re-planned gangs do not count";
  EXPECT_EQ(s.ExpireReservations(t + absl::Seconds(50)), std::vector<std::string>{"again"});
  EXPECT_TRUE(s.ExpireReservations(t + absl::Seconds(54)).empty());
  EXPECT_EQ(s.ExpireReservations(t + absl::Seconds(55)), std::vector<std::string>{"moved"});
  EXPECT_EQ(s.drops(), 2u);
  EXPECT_TRUE(s.gangs().empty());
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(GangScheduler, CordonReplansPendingReservation) {
  GangScheduler s(MakeCluster(1, 1, 2, 4, 8));
  absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(s.Reserve(Gang("a", 2, 8), t).ok());
  int victim = s.Find("a")->placement.members[0].node;
  auto events = s.SetNodeCordoned(victim, true, t + absl::Seconds(1));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, ReplanEvent::Kind::kReplanned);
  for (int n : s.Find("a")->placement.Nodes()) EXPECT_NE(n, victim);
  EXPECT_EQ(s.cluster().FreeHealthy(0), 64 - 16 - 8);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(GangScheduler, ReservationDroppedWhenNoLongerFits) {
  GangScheduler s(MakeCluster(1, 1, 1, 2, 8));
  absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(s.Reserve(Gang("a", 2, 8), t).ok());
  auto events = s.SetGpuFaulty(3, true, t);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, ReplanEvent::Kind::kDropped);
  EXPECT_EQ(s.Find("a"), nullptr);
  EXPECT_EQ(s.cluster().FreeHealthy(0), 15);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

// Several nodes of a running gang fail at once: only the lost members move, and they stay in the
// gang's leaf when it has room, else its spine.
TEST(GangScheduler, ReplacementMovesOnlyLostMembersAndKeepsLocality) {
  SchedulerOptions opts;
  opts.auto_apply_replacements = true;
  GangScheduler s(MakeCluster(1, 2, 2, 8, 8), opts);  // leaves of 8 nodes
  absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(s.Reserve(Gang("a", 5, 8), t).ok());
  ASSERT_TRUE(s.Commit("a").ok());
  const Cluster& c = s.cluster();
  Placement before = s.Find("a")->placement;
  EXPECT_EQ(c.LevelName(before.level), "leaf");
  int lost_a = before.members[1].node, lost_b = before.members[3].node;
  s.SetNodeCordoned(lost_a, true, t);
  auto events = s.SetNodeCordoned(lost_b, true, t);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, ReplanEvent::Kind::kReplacementApplied);
  const Placement& after = s.Find("a")->placement;
  EXPECT_EQ(after.members[0].node, before.members[0].node);
  EXPECT_EQ(after.members[2].node, before.members[2].node);
  EXPECT_EQ(after.members[4].node, before.members[4].node);
  EXPECT_NE(after.members[1].node, lost_a);
  EXPECT_NE(after.members[3].node, lost_b);
  EXPECT_EQ(c.LevelName(after.level), "leaf") << "replacement left the leaf";
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(GangScheduler, ReplacementProposedWithoutApplyingByDefault) {
  GangScheduler s(MakeCluster(1, 1, 2, 4, 8));
  absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(s.Reserve(Gang("a", 4, 8), t).ok());
  ASSERT_TRUE(s.Commit("a").ok());
  Placement before = s.Find("a")->placement;
  int gpu = before.members[2].gpus[0];
  auto events = s.SetGpuFaulty(gpu, true, t);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, ReplanEvent::Kind::kReplacementProposed);
  EXPECT_EQ(events[0].lost_members, std::vector<int>{2});
  ASSERT_EQ(events[0].replacement.size(), 1u);
  EXPECT_EQ(s.Find("a")->placement.Gpus(), before.Gpus()) << "proposal must not move anything";
  // Full leaf: the replacement has to go to the other leaf.
  EXPECT_NE(s.cluster().AncestorAt(s.cluster().NodeDomain(events[0].replacement[0].node), 3),
            before.domain);
  ASSERT_TRUE(s.ApplyReplacement("a", events[0].lost_members, events[0].replacement).ok());
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(GangScheduler, AdoptRecordsRunningPodsEvenOnBadNodes) {
  GangScheduler s(MakeCluster(1, 1, 1, 2, 8));
  absl::Time t = absl::UnixEpoch();
  s.SetNodeCordoned(0, true, t);
  Placement p;
  p.members = {MemberPlacement{0, {0, 1}}};
  GangSpec g = Gang("running", 1, 2);
  EXPECT_FALSE(s.Adopt(g, p, GangState::kRunning, t).ok());
  EXPECT_TRUE(s.Adopt(g, p, GangState::kRunning, t, /*require_healthy=*/false).ok());
  EXPECT_FALSE(s.cluster().IsFree(0));
  Placement clash;
  clash.members = {MemberPlacement{0, {1, 2}}};
  EXPECT_FALSE(s.Adopt(Gang("other", 1, 2), clash, GangState::kRunning, t, false).ok());
  EXPECT_TRUE(s.cluster().IsFree(2)) << "failed adopt must not leak GPU 2";
  EXPECT_TRUE(s.CheckInvariants().ok());
}

// A gang found bound one pod at a time (daemon restart) grows member by member; members that
// finish give their GPUs back one by one while the rest keep running.
TEST(GangScheduler, AdoptMemberGrowsAndReleaseMemberShrinksARunningGang) {
  GangScheduler s(MakeCluster(1, 1, 2, 4, 8));  // 2 leaves of 4 nodes x 8 GPUs
  absl::Time t = absl::UnixEpoch();
  Placement first;
  first.members = {MemberPlacement{0, {0, 1, 2, 3}}};
  GangSpec g = Gang("ns/g", 3, 4);
  ASSERT_TRUE(s.Adopt(g, first, GangState::kRunning, t, false).ok());
  ASSERT_TRUE(s.AdoptMember("ns/g", 1, MemberPlacement{1, {8, 9, 10, 11}}).ok());
  EXPECT_EQ(s.cluster().FreeHealthy(0), 64 - 8);
  // Beyond the end, an occupied member, GPUs someone holds, unknown gang: refused, nothing leaks.
  EXPECT_EQ(s.AdoptMember("ns/g", 3, MemberPlacement{2, {16}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.AdoptMember("ns/g", 0, MemberPlacement{2, {16}}).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(s.AdoptMember("ns/g", 2, MemberPlacement{1, {11, 12}}).ok());
  EXPECT_TRUE(s.cluster().IsFree(12)) << "failed AdoptMember must not leak GPU 12";
  EXPECT_EQ(s.AdoptMember("nope", 0, MemberPlacement{2, {16}}).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(s.AdoptMember("ns/g", 2, MemberPlacement{5, {40, 41, 42, 43}}).ok());
  const GangRecord* rec = s.Find("ns/g");
  ASSERT_EQ(rec->placement.members.size(), 3u);
  EXPECT_EQ(rec->placement.Nodes(), (std::vector<int>{0, 1, 5}));
  EXPECT_EQ(s.cluster().LevelName(rec->placement.level), "spine") << "spans both leaves";
  ASSERT_TRUE(s.CheckInvariants().ok()) << s.CheckInvariants();

  // Member 2 finishes: its GPUs come back, the others keep their ordinals, the span shrinks.
  ASSERT_TRUE(s.ReleaseMember("ns/g", 2).ok());
  rec = s.Find("ns/g");
  EXPECT_EQ(rec->placement.members[2].node, -1);
  EXPECT_EQ(rec->placement.members[1].node, 1);
  EXPECT_EQ(rec->placement.Nodes(), (std::vector<int>{0, 1}));
  EXPECT_EQ(s.cluster().LevelName(rec->placement.level), "leaf");
  EXPECT_TRUE(s.cluster().IsFree(40));
  EXPECT_EQ(s.cluster().FreeHealthy(0), 64 - 8);
  ASSERT_TRUE(s.CheckInvariants().ok()) << s.CheckInvariants();
  // A released member can be filled again; releasing it twice is harmless.
  ASSERT_TRUE(s.ReleaseMember("ns/g", 2).ok());
  ASSERT_TRUE(s.AdoptMember("ns/g", 2, MemberPlacement{2, {16, 17, 18, 19}}).ok());
  EXPECT_EQ(s.ReleaseMember("ns/g", 7).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(s.CheckInvariants().ok()) << s.CheckInvariants();

  // A fault on a member's node still gets a replacement next to the survivors, never an anchor
  // on the released member.
  ASSERT_TRUE(s.ReleaseMember("ns/g", 0).ok());
  auto events = s.SetNodeCordoned(1, true, t);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, ReplanEvent::Kind::kReplacementProposed);
  EXPECT_EQ(events[0].lost_members, std::vector<int>{1});
  ASSERT_TRUE(s.Release("ns/g").ok());
  EXPECT_EQ(s.cluster().FreeHealthy(0), 64 - 8) << "only the cordoned node is not free+healthy";
  EXPECT_TRUE(s.CheckInvariants().ok());
}

}  // namespace
}  // namespace topogang

namespace topogang {
namespace {

// The queue caches what it derives from the state on version() / health_version(): every change
// must move them, and reads and refused requests must not (or the cache would never hit).
TEST(GangScheduler, VersionsMoveOnEveryChangeOnly) {
  GangScheduler s(testing::MakeCluster(1, 1, 2, 4, 8));
  const absl::Time t = absl::UnixEpoch();
  uint64_t v = s.version(), h = s.health_version();
  const auto moved = [&](bool health) {
    const bool ok = s.version() != v && (s.health_version() != h) == health;
    v = s.version();
    h = s.health_version();
    return ok;
  };
  ASSERT_TRUE(s.Reserve(Gang("a", 2, 8), t).ok());
  EXPECT_TRUE(moved(false));
  EXPECT_FALSE(s.Reserve(Gang("huge", 9, 8), t).ok());  // no room: nothing changed
  (void)s.Find("a");
  (void)s.DryRun(Gang("b", 1, 8));
  EXPECT_EQ(s.version(), v);
  ASSERT_TRUE(s.Commit("a").ok());
  EXPECT_TRUE(moved(false));
  ASSERT_TRUE(s.ReleaseMember("a", 1).ok());
  EXPECT_TRUE(moved(false));
  std::vector<int> masked = s.MaskNodes({5});
  EXPECT_TRUE(moved(true));
  s.UnmaskNodes(masked);
  EXPECT_TRUE(moved(true));
  s.SetGpuFaulty(40, true, t);
  EXPECT_TRUE(moved(true));
  ASSERT_TRUE(s.Release("a").ok());
  EXPECT_TRUE(moved(false));
  // Another scheduler never starts at a version this one had.
  GangScheduler other(testing::MakeCluster(1, 1, 2, 4, 8));
  EXPECT_NE(other.version(), v);
}

}  // namespace
}  // namespace topogang
