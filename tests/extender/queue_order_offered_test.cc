// The queue's order through the daemon, with pods offered what kube-scheduler would offer (never
// a full node). Each filter runs the whole queue, so a waiting gang can be started by another
// gang's filter; it must then be planned on the nodes it may use, not only on those that were
// free at its own last filter, or whoever asks first once a node frees takes it, whatever the
// queue's order. And the order is when the pod watch first saw a gang waiting, not when
// kube-scheduler first asked about it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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
