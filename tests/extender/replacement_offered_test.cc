// A replacement for a running gang's lost member is placed inside the nodes kube-scheduler
// offered it. Its lost member's node is the closest candidate, but kube-scheduler may already
// refuse it: cordoned in its view before topogangd's watch saw the cordon (the two watch the API
// server separately), or outside the new pod's selector. A reservation there would refuse the
// pod at every filter, each one parking it in kube-scheduler's unschedulable pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "k8s/pod_info.h"
#include "tests/support/service_fixture.h"

namespace topogang {
namespace {

namespace t = testing;

constexpr auto kWait = std::chrono::seconds(20);

TEST(ReplacementOfferedTest, AReplacementIsPlacedInsideTheNodesItWasOffered) {
  t::ServiceFixture f(8);
  std::vector<Json> pods;
  std::vector<std::string> on;
  for (int i = 0; i < 3; ++i) {
    pods.push_back(t::MakePod(t::GangPod("r", 3, i, 8)));
    on.push_back(f.FilterOne(pods.back()));
  }
  std::vector<std::future<std::string>> binds;
  for (int i = 0; i < 3; ++i) binds.push_back(f.Bind(pods[i], on[i]));
  for (auto& b : binds) ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
  // Member 1's node fails: kube-scheduler sees the cordon and the controller's new pod at once;
  // topogangd has seen only the pod's deletion.
  auto dead = ParsePod(pods[1], "nvidia.com/gpu");
  ASSERT_TRUE(dead.ok());
  f.ledger.PodDeleted(*dead);
  std::vector<std::string> offered;
  for (const std::string& n : f.names) {
    if (n != on[1]) offered.push_back(n);
  }
  t::PodOpts o = t::GangPod("r", 3, 1, 8);
  o.name = "r-1-new";
  const Json replacement = t::MakePod(o);
  const ExtenderFilterResult r = f.FilterOffered(replacement, offered);
  ASSERT_EQ(r.node_names.size(), 1u)
      << (r.failed_unresolvable.empty() ? r.error : r.failed_unresolvable[0].second);
  EXPECT_NE(r.node_names[0], on[1]);
  auto b = f.Bind(replacement, r.node_names[0]);
  ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(b.get(), "");
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

}  // namespace
}  // namespace topogang
