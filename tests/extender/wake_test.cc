// Waking pods kube-scheduler keeps in its unschedulable pool. A pod topogang refused is asked
// about again only on a cluster event or after 5 minutes, but a gang can become startable with
// no event: another gang's filter runs the whole queue and starts it, or time alone frees room (a
// reservation expires). The ledger then calls its waker (in cluster mode a Node annotation
// update, which kube-scheduler takes as an event) for each gang started without its own pod
// asking, and runs the queue by itself on a timer (GangLedgerOptions::queue_pass).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "k8s/pod_info.h"
#include "tests/extender/wake_support.h"
#include "tests/support/service_fixture.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

namespace t = testing;
using testing::ExpireEveryReservation;
using testing::WakeOptions;
using testing::WakePod;
using testing::Wakes;

// Two 8-GPU nodes with a one-node job bound on the first.
void BindJob(t::ServiceFixture& f) {
  const Json job = t::MakePod(t::GangPod("job", 1, 0, 8));
  ASSERT_EQ(f.FilterOffered(job, {f.names[0]}).node_names, std::vector<std::string>{f.names[0]});
  auto bound = f.Bind(job, f.names[0]);
  ASSERT_EQ(bound.wait_for(std::chrono::seconds(20)), std::future_status::ready);
}

// The job bound on the first of two nodes, and gang of one `solo` waiting: it avoids the second
// node (topogang.io/avoid-nodes), the only one it is offered.
void ASoloWaitsAvoidingTheFreeNode(t::ServiceFixture& f) {
  BindJob(f);
  t::PodOpts o = t::GangPod("solo", 1, 0, 8);
  o.annotations["topogang.io/avoid-nodes"] = f.names[1];
  EXPECT_TRUE(f.FilterOffered(t::MakePod(o), {f.names[1]}).node_names.empty());
}

// Gang g (2 x 8) waits behind the job; the job ends and no pod asks again (kube-scheduler may
// not have seen it yet, or its event came before g's pod was parked): the timer's pass starts g.
void StartedByTheTimer(t::ServiceFixture& f, Wakes& wakes) {
  BindJob(f);
  EXPECT_TRUE(f.FilterOffered(WakePod("g", 0), {f.names[1]}).node_names.empty());
  f.ledger.PodDeleted(t::FinishedPod("job-0", f.names[0]));
  ASSERT_TRUE(wakes.Wait());
}

TEST(WakeTest, AGangStartedByAnotherGangsFilterHasItsPodsWoken) {
  t::ServiceFixture f(2, WakeOptions(absl::ZeroDuration()));  // no timer: only the filters run it
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  BindJob(f);
  // Both gangs wait (one node free, each needs two); `old` first.
  EXPECT_TRUE(f.FilterOffered(WakePod("old", 0), {f.names[1]}).node_names.empty());
  f.clock.Advance(absl::Seconds(30));
  EXPECT_TRUE(f.FilterOffered(WakePod("young", 0), {f.names[1]}).node_names.empty());
  f.ledger.PodDeleted(t::FinishedPod("job-0", f.names[0]));
  EXPECT_TRUE(wakes.Get().empty()) << "a deletion is itself an event kube-scheduler sees";
  // kube-scheduler retries `young` first: its filter starts `old`, whose pods nobody asks for.
  EXPECT_TRUE(f.FilterOffered(WakePod("young", 0), f.names).node_names.empty());
  const std::vector<std::string> old_nodes = t::ReservedNodes(f, "default/old");
  ASSERT_EQ(old_nodes.size(), 2u) << "the queue started the older gang";
  auto got = wakes.Get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, "default/old");
  EXPECT_NE(std::find(old_nodes.begin(), old_nodes.end(), got[0].second), old_nodes.end())
      << got[0].second << " is not one of its nodes (kube-scheduler's precheck with queueing "
      << "hints off moves the pods that fit on the node that changed)";
  // Its pods, woken, take their slots; nothing more is woken.
  EXPECT_EQ(f.FilterOffered(WakePod("old", 0), f.names).node_names.size(), 1u);
  EXPECT_EQ(f.FilterOffered(WakePod("old", 1), f.names).node_names.size(), 1u);
  EXPECT_EQ(wakes.Get().size(), 1u);
}

TEST(WakeTest, AGangStartedByOneOfItsPodsWakesItsOtherRefusedPods) {
  t::ServiceFixture f(2, WakeOptions(absl::ZeroDuration()));
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  BindJob(f);
  // Both pods of g were refused: kube-scheduler parked them.
  EXPECT_TRUE(f.FilterOffered(WakePod("g", 0), {f.names[1]}).node_names.empty());
  EXPECT_TRUE(f.FilterOffered(WakePod("g", 1), {f.names[1]}).node_names.empty());
  f.ledger.PodDeleted(t::FinishedPod("job-0", f.names[0]));
  // g-0 comes back first (an error answer's backoff, an event it alone was moved by) and starts
  // g; g-1 stays parked unless woken, and g's reservation would run out with one pod arrived.
  EXPECT_EQ(f.FilterOffered(WakePod("g", 0), f.names).node_names.size(), 1u);
  auto got = wakes.Get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, "default/g");
  EXPECT_EQ(f.FilterOffered(WakePod("g", 1), f.names).node_names.size(), 1u);
  EXPECT_EQ(wakes.Get().size(), 1u);
}

TEST(WakeTest, TheTimersPassDoesNotStartAWaitingGangOfOneOnANodeItAvoids) {
  t::ServiceFixture f(2, WakeOptions(absl::Milliseconds(5)));
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  ASSERT_NO_FATAL_FAILURE(ASoloWaitsAvoidingTheFreeNode(f));
  absl::SleepFor(absl::Milliseconds(100));  // twenty passes: before, the first one started it
  f.ledger.PodDeleted(t::FinishedPod("job-0", f.names[0]));
  ASSERT_TRUE(wakes.Wait());
  EXPECT_EQ(wakes.Get()[0], std::make_pair(std::string("default/solo"), f.names[0]))
      << "started on the node it avoids";
}

// A gang whose reservation expired, its job then deleted and resubmitted under the same name
// (new pods, new UIDs): the new gang starts with nothing learned about the old one's nodes.
// Before 2026-11-28 it inherited the nodes the old gang was refused with room (kept for the life
// of the daemon), so no queue pass, and no hold, would use them for it (a review finding): the
// old pod, which had held a slot, was not known to wait once the reservation expired, so its
// deletion forgot nothing.
TEST(WakeTest, AJobResubmittedUnderTheSameNameDoesNotInheritTheNodesItsOldGangWasRefused) {
  t::ServiceFixture f(3, WakeOptions(absl::Milliseconds(5)));
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  // The old gang is offered two of the three free nodes (the third refused it, with room) and
  // reserved there; no member ever binds.
  ASSERT_EQ(f.FilterOffered(WakePod("g", 0), {f.names[0], f.names[1]}).node_names.size(), 1u);
  ASSERT_NO_FATAL_FAILURE(ExpireEveryReservation(f));
  f.ledger.PodDeleted(t::FinishedPod("g-0"));
  // Two one-node jobs take the first and third nodes; the new gang is offered the second alone.
  for (int n : {0, 2}) {
    const Json job = t::MakePod(t::GangPod(absl::StrCat("job", n), 1, 0, 8));
    ASSERT_EQ(f.FilterOffered(job, {f.names[n]}).node_names.size(), 1u);
    auto bound = f.Bind(job, f.names[n]);
    ASSERT_EQ(bound.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  }
  t::PodOpts again = t::GangPod("g", 2, 0, 8);
  again.uid = "uid-g-0-again";
  EXPECT_TRUE(f.FilterOffered(t::MakePod(again), {f.names[1]}).node_names.empty());
  ASSERT_TRUE(wakes.Get().empty());
  // The third node's job ends: the timer's pass starts the new gang on the second and third.
  f.ledger.PodDeleted(t::FinishedPod("job2-0", f.names[2]));
  ASSERT_TRUE(wakes.Wait()) << "the new gang kept off the node its old gang was refused";
  EXPECT_EQ(wakes.Get()[0].first, "default/g");
  EXPECT_EQ(t::ReservedNodes(f, "default/g").size(), 2u);
}

// A gang waiting while it avoids a node, when the model is rebuilt (a node joined or was
// relabelled): the rebuild forgets what waiting gangs avoid, so the timer's pass can start the
// gang on that node. Its pod, asking, must not be placed there: the reservation is planned again
// without it, keeping the gang's place in line (GangLedger::AdmitAvoidingLocked).
TEST(WakeTest, AGangTheQueueStartedOnANodeItAvoidsIsPlannedAgainWhenItsPodAsks) {
  t::ServiceFixture f(3, WakeOptions(absl::Milliseconds(5)));
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  std::vector<PodInfo> bound;  // as the API server lists them at the rebuild
  for (int n : {1, 2}) {
    const std::string job = absl::StrCat("job", n);
    const Json pod = t::MakePod(t::GangPod(job, 1, 0, 8));
    ASSERT_EQ(f.FilterOffered(pod, {f.names[n]}).node_names.size(), 1u);
    auto done = f.Bind(pod, f.names[n]);
    ASSERT_EQ(done.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    PodInfo p = t::FinishedPod(job + "-0", f.names[n]);
    p.phase = "Running";
    p.gpus = 8;
    p.mentions_resource = true;
    bound.push_back(p);
  }
  t::PodOpts o = t::GangPod("g", 2, 0, 8);
  o.annotations["topogang.io/avoid-nodes"] = f.names[0];
  const Json g0 = t::MakePod(o);
  EXPECT_TRUE(f.FilterOffered(g0, {f.names[0]}).node_names.empty());
  ASSERT_TRUE(f.ledger.Rebuild(t::TestCluster(3), bound).ok());
  f.ledger.PodDeleted(t::FinishedPod("job1-0", f.names[1]));
  ASSERT_TRUE(wakes.Wait());
  std::vector<std::string> nodes = t::ReservedNodes(f, "default/g");
  ASSERT_NE(absl::c_find(nodes, f.names[0]), nodes.end())
      << "the scenario needs the pass to start the gang on the node it avoids";
  // Its pod asks: not placed on the node it avoids; without it the gang does not fit yet.
  ExtenderFilterResult r = f.FilterOffered(g0, {f.names[0], f.names[1]});
  EXPECT_TRUE(r.node_names.empty()) << "placed on " << r.node_names[0];
  nodes = t::ReservedNodes(f, "default/g");
  EXPECT_EQ(absl::c_find(nodes, f.names[0]), nodes.end());
  // The other job ends: the gang starts on the two nodes it may use.
  f.ledger.PodDeleted(t::FinishedPod("job2-0", f.names[2]));
  for (absl::Time end = absl::Now() + absl::Seconds(10);
       t::ReservedNodes(f, "default/g").size() < 2 && absl::Now() < end;) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  nodes = t::ReservedNodes(f, "default/g");
  absl::c_sort(nodes);
  EXPECT_EQ(nodes, (std::vector<std::string>{f.names[1], f.names[2]}));
}

// The same for a gang of one: its pod is not tracked as waiting, so what it avoided (here by
// annotation) is forgotten once nothing waits for it: its queue entry gone stale after its pod
// was deleted. A new pod under the same name that avoids nothing may then be started anywhere.
TEST(WakeTest, AGangOfOneResubmittedUnderTheSameNameDoesNotInheritWhatTheOldOneAvoided) {
  t::ServiceFixture f(2, WakeOptions(absl::Milliseconds(5)));
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  ASSERT_NO_FATAL_FAILURE(ASoloWaitsAvoidingTheFreeNode(f));
  f.ledger.PodDeleted(t::FinishedPod("solo-0"));
  f.clock.Advance(absl::Minutes(7));  // its queue entry goes stale at the timer's next pass
  for (absl::Time end = absl::Now() + absl::Seconds(10);
       f.ledger.QueueSnapshot().arrivals.contains("default/solo") && absl::Now() < end;) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_FALSE(f.ledger.QueueSnapshot().arrivals.contains("default/solo"));
  (void)f.ledger.GetStats();  // waits for the worker's sweep that dropped it to end
  // A gang reserves n1 (not bound: kube-scheduler still shows it free), so the new pod, offered
  // it, waits; the reservation then expires, and the timer's pass starts the new pod there.
  ASSERT_EQ(f.FilterOffered(t::MakePod(t::GangPod("p", 1, 0, 8)), {f.names[1]}).node_names,
            std::vector<std::string>{f.names[1]});
  t::PodOpts again = t::GangPod("solo", 1, 0, 8);
  again.uid = "uid-solo-0-again";
  EXPECT_TRUE(f.FilterOffered(t::MakePod(again), {f.names[1]}).node_names.empty());
  f.clock.Advance(f.state.With([](GangScheduler& s) { return s.options().reservation_ttl; }) +
                  absl::Seconds(1));
  ASSERT_TRUE(wakes.Wait()) << "the new pod kept off the node the old one avoided";
  EXPECT_EQ(wakes.Get()[0], std::make_pair(std::string("default/solo"), f.names[1]));
}

// What a gang learned at its filters outlives its reservation while its pods are there: its pods
// wait again once the reservation expires. Here the gang was refused n2 with room (a selector,
// say); after the expiry it asks again while n2 is full, and when n2 frees the timer's pass must
// not start it there (its pods would not be offered n2, and it would be planned again in a loop).
TEST(WakeTest, WhatAGangLearnedOfItsNodesOutlivesItsExpiredReservationWhileItsPodsWait) {
  t::ServiceFixture f(3, WakeOptions(absl::Milliseconds(5)));
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  ASSERT_EQ(f.FilterOffered(WakePod("g", 0), {f.names[0], f.names[1]}).node_names.size(), 1u);
  ASSERT_EQ(f.FilterOffered(WakePod("g", 1), {f.names[0], f.names[1]}).node_names.size(), 1u);
  ASSERT_NO_FATAL_FAILURE(ExpireEveryReservation(f));
  for (int n : {1, 2}) {
    const Json job = t::MakePod(t::GangPod(absl::StrCat("job", n), 1, 0, 8));
    ASSERT_EQ(f.FilterOffered(job, {f.names[n]}).node_names.size(), 1u);
    auto bound = f.Bind(job, f.names[n]);
    ASSERT_EQ(bound.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  }
  EXPECT_TRUE(f.FilterOffered(WakePod("g", 0), {f.names[0]}).node_names.empty());
  f.ledger.PodDeleted(t::FinishedPod("job2-0", f.names[2], 8));
  absl::SleepFor(absl::Milliseconds(100));  // twenty passes
  EXPECT_TRUE(wakes.Get().empty()) << "started on n2, which its pods are not offered";
  f.ledger.PodDeleted(t::FinishedPod("job1-0", f.names[1], 8));
  ASSERT_TRUE(wakes.Wait());
  std::vector<std::string> nodes = t::ReservedNodes(f, "default/g");
  absl::c_sort(nodes);
  EXPECT_EQ(nodes, (std::vector<std::string>{f.names[0], f.names[1]}));
}

// A pod that takes a slot no longer counts as waiting. Gang g's reservation is dropped when one
// of its pods is bound outside topogang (its other pod then waits again); g is regrouped around
// that pod, and the other pod takes the missing member's slot. Once both are deleted nothing of
// g waits: a new g, starting at its own first filter, wakes nobody (before 2026-11-28's fix, a
// stale record of the old pod made it wake every refused pod in the cluster).
TEST(WakeTest, APodThatTookASlotIsNotLeftWaitingForALaterGangOfTheSameName) {
  t::ServiceFixture f(4, WakeOptions(absl::ZeroDuration()));
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  ASSERT_EQ(f.FilterOffered(WakePod("g", 0), {f.names[0], f.names[1]}).node_names.size(), 1u);
  ASSERT_EQ(f.FilterOffered(WakePod("g", 1), {f.names[0], f.names[1]}).node_names.size(), 1u);
  Json elsewhere = WakePod("g", 0);
  elsewhere["spec"]["nodeName"] = f.names[3];
  elsewhere["status"]["phase"] = "Running";
  auto seen = ParsePod(elsewhere, "nvidia.com/gpu");
  ASSERT_TRUE(seen.ok()) << seen.status();
  f.ledger.ObservePod(*seen);  // bound outside topogang
  ASSERT_EQ(f.FilterOffered(WakePod("g", 1), f.names).node_names.size(), 1u);
  f.ledger.PodDeleted(t::FinishedPod("g-0", f.names[3], 8));
  f.ledger.PodDeleted(t::FinishedPod("g-1", "", 8));
  ASSERT_EQ(f.UsedGpus(), 0);
  t::PodOpts again = t::GangPod("g", 2, 0, 8);
  again.uid = "uid-g-0-again";
  ASSERT_EQ(f.FilterOffered(t::MakePod(again), f.names).node_names.size(), 1u);
  EXPECT_TRUE(wakes.Get().empty()) << "woken for a pod that had taken a slot and was deleted";
}

TEST(WakeTest, AGangStartedByItsOwnFilterIsNotWoken) {
  t::ServiceFixture f(2, WakeOptions(absl::ZeroDuration()));
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  EXPECT_EQ(f.FilterOffered(WakePod("g", 0), f.names).node_names.size(), 1u);
  EXPECT_EQ(f.FilterOffered(WakePod("g", 1), f.names).node_names.size(), 1u);
  EXPECT_TRUE(wakes.Get().empty());
}

TEST(WakeTest, TheQueueRunsByItselfAndWakesWhatItStarts) {
  t::ServiceFixture f(2, WakeOptions(absl::Milliseconds(20)));
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  ASSERT_NO_FATAL_FAILURE(StartedByTheTimer(f, wakes));
  EXPECT_EQ(wakes.Get()[0].first, "default/g");
  EXPECT_EQ(t::ReservedNodes(f, "default/g").size(), 2u);
  EXPECT_EQ(f.FilterOffered(WakePod("g", 0), f.names).node_names.size(), 1u);
}

TEST(WakeTest, AGangStartedByTheQueueWhosePodsAreThenDeletedGivesItsGpusBackAtOnce) {
  // The churn test: a gang cancelled right after the queue started it held its GPUs for the
  // reservation's TTL (30 s by default), keeping the next gang out.
  t::ServiceFixture f(2, WakeOptions(absl::Milliseconds(20)));
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  ASSERT_NO_FATAL_FAILURE(StartedByTheTimer(f, wakes));
  ASSERT_EQ(f.UsedGpus(), 16);
  f.ledger.PodDeleted(t::FinishedPod("g-1"));  // never asked: nothing to do
  EXPECT_EQ(f.UsedGpus(), 16);
  f.ledger.PodDeleted(t::FinishedPod("g-0"));
  EXPECT_EQ(f.UsedGpus(), 0);
  EXPECT_TRUE(t::ReservedNodes(f, "default/g").empty());
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

TEST(WakeTest, AnExpiredReservationStartsTheWaitingGangAtOnce) {
  // The timer is an hour: only the expiry runs the queue.
  t::ServiceFixture f(2, WakeOptions(absl::Hours(1)));
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  // `first` reserves both nodes, and its second member never comes (a controller that failed).
  EXPECT_EQ(f.FilterOffered(WakePod("first", 0), f.names).node_names.size(), 1u);
  EXPECT_TRUE(f.FilterOffered(WakePod("second", 0), f.names).node_names.empty());
  ASSERT_TRUE(wakes.Get().empty());
  f.clock.Advance(f.state.With([](GangScheduler& s) { return s.options().reservation_ttl; }) +
                  absl::Seconds(1));
  ASSERT_TRUE(wakes.Wait()) << "the expiry did not run the queue";
  EXPECT_EQ(wakes.Get()[0].first, "default/second");
  EXPECT_EQ(t::ReservedNodes(f, "default/second").size(), 2u);
  EXPECT_TRUE(t::ReservedNodes(f, "default/first").empty());
}

TEST(WakeTest, WithoutAWakerTheQueueStillStartsTheGang) {
  // Standalone mode has no API server to write to: the gang is started, and its pods find their
  // slots when kube-scheduler next asks.
  t::ServiceFixture f(2, WakeOptions(absl::Milliseconds(20)));
  BindJob(f);
  EXPECT_TRUE(f.FilterOffered(WakePod("g", 0), {f.names[1]}).node_names.empty());
  f.ledger.PodDeleted(t::FinishedPod("job-0", f.names[0]));
  bool started = false;
  for (absl::Time end = absl::Now() + absl::Seconds(10); !started && absl::Now() < end;) {
    started = t::ReservedNodes(f, "default/g").size() == 2;
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_TRUE(started);
}

}  // namespace
}  // namespace topogang
