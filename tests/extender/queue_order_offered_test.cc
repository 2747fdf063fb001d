// The queue's order through the daemon, with pods offered what kube-scheduler would offer (never
// a full node). Each filter runs the whole queue, so a waiting gang can be started by another
// gang's filter; it must then be planned on the nodes it may use, not only on those that were
// free at its own last filter, or whoever asks first once a node frees takes it, whatever the
// queue's order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "extender/extender_service.h"
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
    f.ledger.PodDeleted(t::FinishedPod("job-0"));
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

}  // namespace
}  // namespace topogang
