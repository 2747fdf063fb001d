// The queue's order through the daemon, with pods offered what kube-scheduler would offer (never
// a full node). Each filter runs the whole queue, so a waiting gang can be started by another
// gang's filter; it must then be planned on the nodes it may use, not only on those that were
// free at its own last filter, or whoever asks first once a node frees takes it, whatever the
// queue's order. And the order is when the pod watch first saw a gang waiting, not when
// kube-scheduler first asked about it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "extender/extender_service.h"
#include "k8s/pod_info.h"
#include "tests/support/service_fixture.h"
#include "tests/support/service_util.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

namespace t = testing;

// Two 8-GPU nodes, a one-node job on the first; gangs `first` and then `second` (2 x 8 each)
// each filter a pod offered only the free node, and wait. The job ends.
struct TwoWaitingGangs {
  t::ServiceFixture f{2};
  std::string n0 = f.names[0], n1 = f.names[1];
  TwoWaitingGangs(const std::string& first, const std::string& second,
                  const std::vector<std::string>& second_offered = {}) {
    const Json job = t::MakePod(t::GangPod("job", 1, 0, 8));
    EXPECT_EQ(f.FilterOffered(job, {n0}).node_names, std::vector<std::string>{n0});
    auto bound = f.Bind(job, n0);
    EXPECT_EQ(bound.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    EXPECT_TRUE(f.FilterOffered(Pod(first, 0), {n1}).node_names.empty());
    f.clock.Advance(absl::Seconds(30));
    EXPECT_TRUE(
        f.FilterOffered(Pod(second, 0), second_offered.empty() ? std::vector{n1} : second_offered)
            .node_names.empty());
    f.ledger.PodDeleted(t::FinishedPod("job-0", n0));
  }
  static Json Pod(const std::string& gang, int i) { return t::MakePod(t::GangPod(gang, 2, i, 8)); }
};

TEST(QueueOrderOfferedTest, TheOlderGangStartsWhenTheYoungerAsksFirstOnceANodeFrees) {
  TwoWaitingGangs w("old", "young");
  // The younger gang's pod comes first (kube-scheduler retries both in no set order): the queue
  // starts the older one, on the node that was full at its last filter too.
  EXPECT_TRUE(w.f.FilterOffered(w.Pod("young", 0), {w.n0, w.n1}).node_names.empty());
  const auto p0 = w.f.FilterOffered(w.Pod("old", 0), {w.n0, w.n1}).node_names;
  const auto p1 = w.f.FilterOffered(w.Pod("old", 1), {w.n0, w.n1}).node_names;
  ASSERT_EQ(p0.size(), 1u);
  ASSERT_EQ(p1.size(), 1u);
  EXPECT_NE(p0, p1) << "one member per node";
}

TEST(QueueOrderOfferedTest, AGangIsNeverStartedByAnotherOnANodeItWasRefusedWithRoom) {
  // The old gang's pods were refused the free node (a selector, say) while it had room: the
  // queue must not start it there on another gang's filter. The young one starts.
  t::ServiceFixture f(3);
  const std::string n0 = f.names[0], n1 = f.names[1], n2 = f.names[2];
  const Json job = t::MakePod(t::GangPod("job", 1, 0, 8));
  ASSERT_EQ(f.FilterOffered(job, {n0}).node_names, std::vector<std::string>{n0});
  auto bound = f.Bind(job, n0);
  ASSERT_EQ(bound.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  // old may use n0 and n1 only (n2 had room and was not offered); young anything.
  EXPECT_TRUE(f.FilterOffered(TwoWaitingGangs::Pod("old", 0), {n1}).node_names.empty());
  f.clock.Advance(absl::Seconds(30));
  // young's filter: it fits on n1 + n2, but the queue tries old first: n1 + n0 is busy.
  const auto y = f.FilterOffered(TwoWaitingGangs::Pod("young", 0), {n1, n2}).node_names;
  EXPECT_EQ(y.size(), 1u) << "old cannot start (n0 busy, n2 refused to it): young starts";
  EXPECT_EQ(f.state.With([](GangScheduler& s) { return s.Find("default/old") != nullptr; }), false);
}

// The same, when the node was full at the gang's later filters (another job took it): a node
// refused with room once stays one the gang may never use while it is not offered.
TEST(QueueOrderOfferedTest, ANodeRefusedWithRoomOnceStaysRefusedWhileFull) {
  t::ServiceFixture f(3);
  const std::string n0 = f.names[0], n1 = f.names[1], n2 = f.names[2];
  auto bind_one = [&](const std::string& name, const std::string& node) {
    const Json pod = t::MakePod(t::GangPod(name, 1, 0, 8));
    ASSERT_EQ(f.FilterOffered(pod, {node}).node_names, std::vector<std::string>{node});
    ASSERT_EQ(f.Bind(pod, node).wait_for(std::chrono::seconds(20)), std::future_status::ready);
  };
  bind_one("job", n0);
  // old may use n0 and n1 only: n2 had room and was not offered.
  EXPECT_TRUE(f.FilterOffered(TwoWaitingGangs::Pod("old", 0), {n1}).node_names.empty());
  bind_one("blocker", n2);
  f.clock.Advance(absl::Seconds(30));
  // n2 is full now, and old still is not offered it.
  EXPECT_TRUE(f.FilterOffered(TwoWaitingGangs::Pod("old", 0), {n1}).node_names.empty());
  f.ledger.PodDeleted(t::FinishedPod("blocker-0", n2));
  f.clock.Advance(absl::Seconds(30));
  // young's filter runs the queue: old first, but n0 is busy and n2 is not for it.
  const auto y = f.FilterOffered(TwoWaitingGangs::Pod("young", 0), {n1, n2}).node_names;
  EXPECT_EQ(y.size(), 1u) << "old was started on n2 (refused to it with room at its first filter)";
  EXPECT_EQ(f.state.With([](GangScheduler& s) { return s.Find("default/old") != nullptr; }), false);
}

// The other watch race: a job already runs on n0, in kube-scheduler's cache and not yet in
// topogangd's model, so the old gang is not offered n0 while it looks free here: "refused with
// room". The watch shows the job moments later, which explains the refusal: n0 is not one the
// gang may never use, and once the job ends the queue starts the old gang there, though the
// young one asks first. (Kept as refused, n0 would stay so while not offered, i.e. as long as the
// job ran, and the young gang would start.)
// `lag`: how far topogangd's watch trails. Returns the nodes the young gang's filter gets once
// the job ends (none: the old gang started).
std::vector<std::string> YoungAsksFirstAfterAJobTheWatchShowedLate(absl::Duration lag) {
  t::ServiceFixture f(2);
  const std::string n0 = f.names[0], n1 = f.names[1];
  EXPECT_TRUE(f.FilterOffered(TwoWaitingGangs::Pod("old", 0), {n1}).node_names.empty());
  auto job = ParsePod(t::RunningPod("job-0", 8, n0), "nvidia.com/gpu");
  EXPECT_TRUE(job.ok()) << job.status();
  f.clock.Advance(lag);
  f.ledger.ObservePod(*job);
  f.clock.Advance(absl::Seconds(30));
  EXPECT_TRUE(f.FilterOffered(TwoWaitingGangs::Pod("young", 0), {n1}).node_names.empty());
  f.clock.Advance(absl::Seconds(30));
  f.ledger.PodDeleted(t::FinishedPod("job-0", n0));
  return f.FilterOffered(TwoWaitingGangs::Pod("young", 0), {n0, n1}).node_names;
}

TEST(QueueOrderOfferedTest, ANodeRefusedWithRoomThatTheWatchThenShowsTakenIsOneItMayUse) {
  EXPECT_TRUE(YoungAsksFirstAfterAJobTheWatchShowedLate(absl::Milliseconds(400)).empty())
      << "the queue starts the old gang, not the young one that asked";
}

// Shown taken over 10 s (kRecentlyFreed) after the refusal, the node was not busy to
// kube-scheduler then: the refusal stands (a selector, say), and the young gang starts.
TEST(QueueOrderOfferedTest, ANodeRefusedWithRoomLongBeforeTheWatchShowsItTakenStaysRefused) {
  EXPECT_EQ(YoungAsksFirstAfterAJobTheWatchShowedLate(absl::Seconds(11)).size(), 1u);
}

// The watch race: topogangd sees the job end before kube-scheduler does, so the old gang's next
// pod is offered only the node that was free before. A node freed moments ago and not offered
// is no sign the gang may not use it: the old gang starts (its member takes the offered node,
// the other member the freed one once kube-scheduler sees it), not the young one.
TEST(QueueOrderOfferedTest, ANodeFreedMomentsAgoStillCountsForTheGangItWasNotOfferedTo) {
  TwoWaitingGangs w("old", "young");  // the job on n0 has ended, as topogangd's watch saw
  EXPECT_EQ(w.f.FilterOffered(w.Pod("old", 0), {w.n1}).node_names, std::vector<std::string>{w.n1})
      << "kube-scheduler's cache still has n0 full";
  EXPECT_TRUE(w.f.FilterOffered(w.Pod("young", 0), {w.n0, w.n1}).node_names.empty());
  EXPECT_EQ(w.f.FilterOffered(w.Pod("old", 1), {w.n0}).node_names, std::vector<std::string>{w.n0});
}

// What the pod watch saw first decides, not what kube-scheduler asks about first: it retries
// pods in its own order (an older pod has been refused more often, so its backoff is longer).
// `old_gated_until_young`: the old gang's pod was held by a scheduling gate until after the
// young one was waiting (a queue in front admitted it later): then it is younger.
void WatchOrder(bool old_gated_until_young) {
  t::ServiceFixture f(2);
  const std::string n0 = f.names[0], n1 = f.names[1];
  const Json job = t::MakePod(t::GangPod("job", 1, 0, 8));
  ASSERT_EQ(f.FilterOffered(job, {n0}).node_names, std::vector<std::string>{n0});
  auto bound = f.Bind(job, n0);
  ASSERT_EQ(bound.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  auto observe = [&](const std::string& gang, bool gated) {
    Json pod = TwoWaitingGangs::Pod(gang, 0);
    if (gated) pod["spec"]["schedulingGates"] = Json::array({{{"name", "example.com/queue"}}});
    auto info = ParsePod(pod, "nvidia.com/gpu");
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->gated, gated);
    f.ledger.ObservePod(*info);
  };
  observe("old", old_gated_until_young);
  f.clock.Advance(absl::Seconds(30));
  observe("young", false);
  f.clock.Advance(absl::Seconds(30));
  if (old_gated_until_young) observe("old", false);
  f.clock.Advance(absl::Seconds(30));
  // kube-scheduler asks about the young gang first, then the old one; one node is free.
  EXPECT_TRUE(f.FilterOffered(TwoWaitingGangs::Pod("young", 0), {n1}).node_names.empty());
  f.clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(f.FilterOffered(TwoWaitingGangs::Pod("old", 0), {n1}).node_names.empty());
  f.ledger.PodDeleted(t::FinishedPod("job-0"));
  const std::string first = old_gated_until_young ? "young" : "old";
  const std::string second = old_gated_until_young ? "old" : "young";
  EXPECT_TRUE(f.FilterOffered(TwoWaitingGangs::Pod(second, 0), {n0, n1}).node_names.empty());
  EXPECT_EQ(f.FilterOffered(TwoWaitingGangs::Pod(first, 0), {n0, n1}).node_names.size(), 1u)
      << first << " waited longer and starts";
}

TEST(QueueOrderOfferedTest, TheGangWaitingLongerStartsWhateverKubeSchedulerAsksFirst) {
  WatchOrder(false);
}

TEST(QueueOrderOfferedTest, AGangWaitsFromWhenItsGatesWereRemoved) { WatchOrder(true); }

// A gang started by another gang's queue pass is planned without its own offer, so it can land
// on nodes that were full at its every filter and that it may never use (another pool). Its
// member then finds no slot it was offered and the gang is planned again inside the offer. That
// must work every time: counted against the re-plan limit for members that disagree, it was
// refused for good after three such starts, and parked by kube-scheduler for five minutes. Each
// time the gang learns the nodes (refused with room once its reservation there is dropped), and
// is not started there again.
TEST(QueueOrderOfferedTest, AGangStartedOnNodesItMayNotUseIsPlannedAgainEveryTime) {
  t::ServiceFixture f(10);  // racks n0-n3, n4-n7, n8-n9
  const std::vector<std::string>& n = f.names;
  auto run = [&](const std::string& gang, int first) {  // a 2 x 8 gang on n[first], n[first+1]
    std::vector<std::future<std::string>> bound;
    for (int m = 0; m < 2; ++m) {
      const Json pod = TwoWaitingGangs::Pod(gang, m);
      const auto r = f.FilterOffered(pod, {n[first], n[first + 1]});
      ASSERT_EQ(r.node_names.size(), 1u) << gang << " member " << m;
      bound.push_back(f.Bind(pod, r.node_names[0]));
    }
    for (auto& b : bound)
      ASSERT_EQ(b.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  };
  const Json hog = t::MakePod(t::GangPod("hog", 1, 0, 8));
  ASSERT_EQ(f.FilterOffered(hog, {n[8]}).node_names, std::vector<std::string>{n[8]});
  ASSERT_EQ(f.Bind(hog, n[8]).wait_for(std::chrono::seconds(20)), std::future_status::ready);
  // Four pairs of nodes busy with long jobs; `sel` may use n9 only (its pool), so never starts.
  for (int k = 0; k < 4; ++k) ASSERT_NO_FATAL_FAILURE(run(absl::StrCat("job", k), 2 * k));
  const Json sel = TwoWaitingGangs::Pod("sel", 0);
  for (int k = 0; k < 4; ++k) {  // one more than the ledger's limit of three counted re-plans
    SCOPED_TRACE(absl::StrCat("round ", k));
    // sel asks while pair k is full: kube-scheduler offers it n9 only.
    EXPECT_TRUE(f.FilterOffered(sel, {n[9]}).node_names.empty());
    f.clock.Advance(absl::Seconds(30));
    for (int m = 0; m < 2; ++m) {
      f.ledger.PodDeleted(t::FinishedPod(absl::StrCat("job", k, "-", m), n[2 * k + m]));
    }
    f.clock.Advance(absl::Seconds(11));  // past kRecentlyFreed
    // The next gang's filter runs the queue: sel, older, is started on pair k.
    const Json next = TwoWaitingGangs::Pod(absl::StrCat("next", k), 0);
    EXPECT_TRUE(f.FilterOffered(next, {n[2 * k], n[2 * k + 1]}).node_names.empty());
    ASSERT_TRUE(f.state.With([](GangScheduler& s) { return s.Find("default/sel") != nullptr; }));
    // sel's member is offered n9 only: planned again there, it cannot start, and says so.
    const auto r = f.FilterOffered(sel, {n[9]});
    EXPECT_TRUE(r.node_names.empty());
    std::string why = r.error;  // an error when its last refusal was long ago (wake_retry)
    for (const auto& [node, reason] : r.failed_unresolvable) absl::StrAppend(&why, "; ", reason);
    EXPECT_THAT(why, ::testing::HasSubstr("cannot be placed now"));
    EXPECT_THAT(why, ::testing::Not(::testing::HasSubstr("did not offer")));
    EXPECT_FALSE(f.state.With([](GangScheduler& s) { return s.Find("default/sel") != nullptr; }))
        << "sel's reservation on nodes it may not use is released";
    f.clock.Advance(absl::Seconds(1));
    // The next gang's pods now take pair k, and sel is not started there again meanwhile.
    ASSERT_NO_FATAL_FAILURE(run(absl::StrCat("next", k), 2 * k));
  }
}

// A 2-node job (2 x 8) bound on n0 + n1; the job's node per member into `job_on`.
void BindTwoNodeJob(t::ServiceFixture& f, std::vector<std::string>* job_on) {
  const std::vector<std::string>& n = f.names;
  std::vector<std::future<std::string>> bound;
  for (int m = 0; m < 2; ++m) {
    const Json pod = TwoWaitingGangs::Pod("job", m);
    const auto r = f.FilterOffered(pod, {n[0], n[1]});
    ASSERT_EQ(r.node_names.size(), 1u);
    bound.push_back(f.Bind(pod, r.node_names[0]));
    job_on->push_back(r.node_names[0]);
  }
  for (auto& b : bound) ASSERT_EQ(b.wait_for(std::chrono::seconds(20)), std::future_status::ready);
}

// Eight nodes: one-node jobs bound on n2, n3, n5, n6, n7 and a 2-node job on n0 + n1; the
// job's node per member into `job_on`. n4 is free.
void HogsAndATwoNodeJob(t::ServiceFixture& f, std::vector<std::string>* job_on) {
  const std::vector<std::string>& n = f.names;
  for (int i : {2, 3, 5, 6, 7}) {
    const Json pod = t::MakePod(t::GangPod(absl::StrCat("hog", i), 1, 0, 8));
    ASSERT_EQ(f.FilterOffered(pod, {n[i]}).node_names, std::vector<std::string>{n[i]});
    ASSERT_EQ(f.Bind(pod, n[i]).wait_for(std::chrono::seconds(20)), std::future_status::ready);
  }
  ASSERT_NO_FATAL_FAILURE(BindTwoNodeJob(f, job_on));
}

// Gangs `old` and then `young` (2 x 8) wait, offered only n4; then the 2-node job ends.
void OldThenYoungWaitThenTheJobEnds(t::ServiceFixture& f, const std::vector<std::string>& job_on) {
  const std::vector<std::string>& n = f.names;
  EXPECT_TRUE(f.FilterOffered(TwoWaitingGangs::Pod("old", 0), {n[4]}).node_names.empty());
  f.clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(f.FilterOffered(TwoWaitingGangs::Pod("young", 0), {n[4]}).node_names.empty());
  f.clock.Advance(absl::Seconds(1));
  for (int m = 0; m < 2; ++m) {
    f.ledger.PodDeleted(t::FinishedPod(absl::StrCat("job-", m), job_on[m], 8));
  }
}

// The same blind spot within one filter: a gang asks right after a job ended, before
// kube-scheduler's cache shows the job's nodes free, and is planned there (a node freed moments
// ago is not taken as one it may never use). Its member is not offered them: the gang is planned
// again strictly inside what the member is offered, and refused there with the reason, not
// re-planned onto the freed nodes in a loop until the moment passes (the churn test saw 10 s
// loops of a gang planned on a tainted node it could not use). If kube-scheduler's cache was
// merely behind, the deletion it has yet to see sends the pod back to be tried again.
void FreedMomentsAgo(bool kube_scheduler_saw_it) {
  t::ServiceFixture f(8);
  const std::vector<std::string>& n = f.names;
  std::vector<std::string> job_on;
  ASSERT_NO_FATAL_FAILURE(HogsAndATwoNodeJob(f, &job_on));
  const Json sel = TwoWaitingGangs::Pod("sel", 0);
  EXPECT_TRUE(f.FilterOffered(sel, {n[4]}).node_names.empty());
  f.clock.Advance(absl::Seconds(1));
  for (int m = 0; m < 2; ++m) {
    f.ledger.PodDeleted(t::FinishedPod(absl::StrCat("job-", m), job_on[m], 8));
  }
  if (kube_scheduler_saw_it) {
    // Another pod as large is offered n0 and n1: kube-scheduler's cache has them free, so sel
    // was kept off them by its own constraints. (A 4-node gang: refused, it takes nothing.)
    EXPECT_TRUE(f.FilterOffered(t::MakePod(t::GangPod("wide", 4, 0, 8)), {n[0], n[1], n[4]})
                    .node_names.empty());
  }
  auto r = f.FilterOffered(sel, {n[4]});
  EXPECT_TRUE(r.node_names.empty());
  EXPECT_EQ(f.state.With([](GangScheduler& s) { return s.Find("default/sel") != nullptr; }), false)
      << "sel kept GPUs on nodes its pods are not offered";
  std::string why = r.error;
  for (const auto& [node, reason] : r.failed_unresolvable) absl::StrAppend(&why, "; ", reason);
  EXPECT_THAT(why, ::testing::HasSubstr("cannot be placed now"));
  EXPECT_THAT(why, ::testing::Not(::testing::HasSubstr("did not offer")));
  EXPECT_THAT(why, ::testing::Not(::testing::HasSubstr("freed moments ago")));
}

TEST(QueueOrderOfferedTest, AGangPlannedOnNodesFreedMomentsAgoIsPlannedAgainInsideItsOffer) {
  FreedMomentsAgo(false);
}

TEST(QueueOrderOfferedTest, ANodeFreedMomentsAgoButOfferedToAPodAsLargeIsNotOneItMayUse) {
  FreedMomentsAgo(true);
}

// The same, with a younger gang waiting too. The older gang, planned again strictly inside its
// offer, is refused, and leaves the freed nodes free: not to the younger gang in the same queue
// pass (before, that pass started it there, on nodes its pod was not offered either), nor as
// nodes the older gang may never use (they would keep later passes off them for it). When the
// younger gang's pod asks once kube-scheduler has caught up, its filter's pass starts the older
// gang there first.
TEST(QueueOrderOfferedTest, AGangPlannedAgainInsideItsOfferKeepsItsTurnOnTheNodesFreedMomentsAgo) {
  t::ServiceFixture f(8);
  const std::vector<std::string>& n = f.names;
  std::vector<std::string> job_on;
  ASSERT_NO_FATAL_FAILURE(HogsAndATwoNodeJob(f, &job_on));
  OldThenYoungWaitThenTheJobEnds(f, job_on);
  // old asks before kube-scheduler's cache shows n0 and n1 free: refused (FreedMomentsAgo).
  EXPECT_TRUE(f.FilterOffered(TwoWaitingGangs::Pod("old", 0), {n[4]}).node_names.empty());
  // young asks after: old is started on them, young waits.
  EXPECT_TRUE(
      f.FilterOffered(TwoWaitingGangs::Pod("young", 0), {n[0], n[1], n[4]}).node_names.empty());
  const std::vector<std::string> reserved = t::ReservedNodes(f, "default/old");
  EXPECT_EQ(reserved, (std::vector<std::string>{n[0], n[1]}));
}

// The same, where a pod kube-scheduler offers a freed node seems to show its cache caught up but
// does not: GPUs topogang reserved there for a gang not yet bound are free to kube-scheduler. n7
// holds a bound 4-GPU job and a 2 x 2-GPU gang reserved there; the job ends after the two-node
// job. The reserved gang's second member, offered n7 (4 GPUs free to kube-scheduler all along),
// says nothing of the deletions before: before 2026-11-28 it was taken as proof that
// kube-scheduler had applied them (free GPUs counted in topogang's model, 0 there), so the older
// gang, asking next and not offered n0 and n1, took them as nodes it may never use, and the
// younger gang got them.
TEST(QueueOrderOfferedTest, GpusReservedButNotBoundDoNotMakeAFreedNodeLookSeenByKubeScheduler) {
  t::ServiceFixture f(8);
  const std::vector<std::string>& n = f.names;
  auto bind = [&](const Json& pod, int node) {
    ASSERT_EQ(f.FilterOffered(pod, {n[node]}).node_names, std::vector<std::string>{n[node]});
    ASSERT_EQ(f.Bind(pod, n[node]).wait_for(std::chrono::seconds(20)), std::future_status::ready);
  };
  for (int i : {2, 3, 5, 6}) bind(t::MakePod(t::GangPod(absl::StrCat("hog", i), 1, 0, 8)), i);
  bind(t::MakePod(t::GangPod("half", 1, 0, 4)), 7);
  const Json pair1 = t::MakePod(t::GangPod("pair", 2, 1, 2));
  ASSERT_EQ(f.FilterOffered(t::MakePod(t::GangPod("pair", 2, 0, 2)), {n[7]}).node_names,
            std::vector<std::string>{n[7]});
  std::vector<std::string> job_on;
  ASSERT_NO_FATAL_FAILURE(BindTwoNodeJob(f, &job_on));
  OldThenYoungWaitThenTheJobEnds(f, job_on);
  f.ledger.PodDeleted(t::FinishedPod("half-0", n[7], 4));
  EXPECT_EQ(f.FilterOffered(pair1, {n[7]}).node_names, std::vector<std::string>{n[7]});
  // old asks before kube-scheduler's cache shows n0 and n1 free, young after.
  EXPECT_TRUE(f.FilterOffered(TwoWaitingGangs::Pod("old", 0), {n[4]}).node_names.empty());
  EXPECT_TRUE(
      f.FilterOffered(TwoWaitingGangs::Pod("young", 0), {n[0], n[1], n[4]}).node_names.empty());
  const std::vector<std::string> reserved = t::ReservedNodes(f, "default/old");
  EXPECT_EQ(reserved, (std::vector<std::string>{n[0], n[1]})) << "the younger gang took them";
}

// One drain frees a node in each pool. The gang held to pool a is offered its pool's node that
// only that drain made fit for it: kube-scheduler's cache has applied the drain, and so every
// deletion topogangd saw before it. The pool-b node freed just before is not offered for the
// gang's own reasons, and is not planned on (before, it was for 10 s: planned there, dropped,
// planned again, the churn test's 8 s with no gang starting).
TEST(QueueOrderOfferedTest, ANodeFreedBeforeOneKubeSchedulerOffersIsNotOneItMayUse) {
  QueueOptions q;
  q.locality_patience = absl::ZeroDuration();    // sel starts across racks at once
  t::ServiceFixture f(8, absl::Seconds(10), q);  // racks of 4: n0-n3, n4-n7
  const std::vector<std::string>& n = f.names;
  auto bind_one = [&](const std::string& name, int node) {
    const Json pod = t::MakePod(t::GangPod(name, 1, 0, 8));
    ASSERT_EQ(f.FilterOffered(pod, {n[node]}).node_names, std::vector<std::string>{n[node]});
    ASSERT_EQ(f.Bind(pod, n[node]).wait_for(std::chrono::seconds(20)), std::future_status::ready);
  };
  for (int i : {2, 3, 5, 6, 7}) bind_one(absl::StrCat("hog", i), i);
  bind_one("job-b", 1);  // pool b, next to n0
  bind_one("job-a", 4);  // pool a
  // Pool a is n0 and n4 (a selector): sel fits only on both.
  const Json sel = TwoWaitingGangs::Pod("sel", 0);
  EXPECT_TRUE(f.FilterOffered(sel, {n[0]}).node_names.empty());
  f.clock.Advance(absl::Seconds(1));
  f.ledger.PodDeleted(t::FinishedPod("job-b-0", n[1], 8));
  f.clock.Advance(absl::Milliseconds(1));
  f.ledger.PodDeleted(t::FinishedPod("job-a-0", n[4], 8));
  const auto r = f.FilterOffered(sel, {n[0], n[4]});
  ASSERT_EQ(r.node_names.size(), 1u) << r.error;
  EXPECT_EQ(t::ReservedNodes(f, "default/sel"), (std::vector<std::string>{n[0], n[4]}))
      << "planned on n1 (freed before n4, and not offered)";
  const auto m1 = f.FilterOffered(TwoWaitingGangs::Pod("sel", 1), {n[0], n[4]}).node_names;
  ASSERT_EQ(m1.size(), 1u);
  EXPECT_NE(m1, r.node_names);
}

TEST(QueueOrderOfferedTest, MalformedSchedulingGatesDoNotStopAPodFromParsing) {
  Json pod = TwoWaitingGangs::Pod("g", 0);
  pod["spec"]["schedulingGates"] = "not-a-list";
  auto info = ParsePod(pod, "nvidia.com/gpu");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_FALSE(info->gated);
  pod["spec"]["schedulingGates"] = Json::array();
  EXPECT_FALSE(ParsePod(pod, "nvidia.com/gpu")->gated);
}

}  // namespace
}  // namespace topogang
