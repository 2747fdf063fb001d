// topogang.io/required-tier-max-wait through the filter verb: a gang whose rack is never free
// is refused until its wait is over, then placed across racks; a member that disagrees with the
// reserved gang on the wait is an error, like one that disagrees on the tier.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <set>

#include "absl/strings/str_cat.h"
#include "extender/extender_service.h"
#include "k8s/gang_labels.h"
#include "tests/support/service_fixture.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

using testing::GangPod;
using testing::MakeArgs;
using testing::MakePod;
using Fixture = testing::ServiceFixture;

constexpr auto kWait = std::chrono::seconds(20);

Json RackGangPod(int index, const std::string& max_wait) {
  testing::PodOpts o = GangPod("g", 4, index, 8);
  o.annotations[kRequiredTierKey] = "rack";
  if (!max_wait.empty()) o.annotations[kRequiredTierMaxWaitKey] = max_wait;
  return MakePod(o);
}

// Two racks of four 8-GPU nodes, one node of each busy: no rack has room for 4 x 8 GPUs.
void FillOneNodePerRack(Fixture& f) {
  for (const auto& [name, node] : {std::pair{"a", "gpu-node-000"}, {"b", "gpu-node-004"}}) {
    Json p = MakePod(GangPod(name, 1, 0, 8));
    ExtenderFilterResult r = f.FilterOffered(p, {node});
    ASSERT_EQ(r.node_names, std::vector<std::string>{node}) << r.error;
    auto bound = f.Bind(p, node);
    ASSERT_EQ(bound.wait_for(kWait), std::future_status::ready);
    ASSERT_EQ(bound.get(), "");
  }
  ASSERT_EQ(f.UsedGpus(), 16);
}

// Filters and binds the four members; returns the racks they were bound in.
std::set<int> PlaceGang(Fixture& f, const std::string& max_wait) {
  std::vector<std::future<std::string>> binds;
  std::set<std::string> nodes;
  for (int i = 0; i < 4; ++i) {
    Json p = RackGangPod(i, max_wait);
    const std::string node = f.FilterOne(p);
    nodes.insert(node);
    binds.push_back(f.Bind(p, node));
  }
  for (auto& b : binds) {
    EXPECT_EQ(b.wait_for(kWait), std::future_status::ready);
    EXPECT_EQ(b.get(), "");
  }
  EXPECT_EQ(nodes.size(), 4u);
  std::set<int> racks;
  for (const std::string& n : nodes) racks.insert(std::stoi(n.substr(n.size() - 3)) / 4);
  return racks;
}

// The member's filter is refused for lack of room, without an error.
void ExpectWaits(Fixture& f, int index, const std::string& max_wait) {
  ExtenderFilterResult r = f.service.Filter(MakeArgs(RackGangPod(index, max_wait), f.names));
  EXPECT_TRUE(r.node_names.empty() && r.error.empty()) << r.error;
}

// With one node of each rack busy, the gang's members are refused, and nothing is reserved, until
// `lapse` after the first filter; then the gang is placed across the two racks. Filters every 4
// minutes at most, inside the queue's 6-minute staleness.
void ExpectRefusedUntil(Fixture& f, const std::string& pod_wait, absl::Duration lapse) {
  FillOneNodePerRack(f);
  absl::Duration waited;
  for (int i = 0; waited < lapse; ++i) {
    ExpectWaits(f, i % 4, pod_wait);
    EXPECT_EQ(f.UsedGpus(), 16) << "reserved while the rack still binds, at " << waited;
    const absl::Duration step = std::min(absl::Minutes(4), lapse - waited);
    f.clock.Advance(step);
    waited += step;
  }
  EXPECT_EQ(PlaceGang(f, pod_wait).size(), 2u) << "across the two racks";
  EXPECT_EQ(f.UsedGpus(), 48);
}

TEST(RequiredTierMaxWaitFilter, RefusedUntilTheWaitIsOverThenPlacedAcrossRacks) {
  Fixture f(8);
  ExpectRefusedUntil(f, "5m", absl::Minutes(5));
}

// daemon.required_tier_max_wait_seconds (GangLedgerOptions::required_tier_max_wait): the
// cluster's wait for gangs that do not give their own.
GangLedgerOptions WithClusterWait(absl::string_view tier, absl::Duration wait) {
  GangLedgerOptions o = Fixture::Options(absl::Seconds(10), QueueOptions{});
  o.required_tier_max_wait[std::string(tier)] = wait;
  return o;
}

TEST(RequiredTierMaxWaitFilter, TheClusterWaitAppliesToAGangThatGivesNone) {
  Fixture f(8, WithClusterWait("rack", absl::Minutes(5)));
  ExpectRefusedUntil(f, "", absl::Minutes(5));
}

TEST(RequiredTierMaxWaitFilter, AGangsOwnWaitWinsOverTheClusters) {
  Fixture f(8, WithClusterWait("rack", absl::Minutes(5)));
  ExpectRefusedUntil(f, "10m", absl::Minutes(10));  // refused at 8 minutes too
}

TEST(RequiredTierMaxWaitFilter, TheClusterWaitOfAnotherTierDoesNotApply) {
  Fixture f(8, WithClusterWait("switch", absl::ZeroDuration()));
  FillOneNodePerRack(f);
  for (int i = 0; i < 3; ++i) {
    ExpectWaits(f, i, "");
    f.clock.Advance(absl::Minutes(4));
  }
  EXPECT_EQ(f.UsedGpus(), 16) << "a rack requirement still binds";
}

// A job deleted and created again under the same name is a new gang: it waits its own time, not
// the time its predecessor already waited.
TEST(RequiredTierMaxWaitFilter, AGangOfTheSameNameCreatedAgainWaitsAgain) {
  Fixture f(8);
  FillOneNodePerRack(f);
  EXPECT_TRUE(f.service.Filter(MakeArgs(RackGangPod(0, "5m"), f.names)).node_names.empty());
  f.clock.Advance(absl::Minutes(5));
  std::vector<std::future<std::string>> binds;
  for (int i = 0; i < 4; ++i) {
    Json p = RackGangPod(i, "5m");
    binds.push_back(f.Bind(p, f.FilterOne(p)));
  }
  for (auto& b : binds) ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
  ASSERT_EQ(f.UsedGpus(), 48);
  for (int i = 0; i < 4; ++i) {  // the job ends: every member pod is gone
    PodInfo gone;
    gone.name = absl::StrCat("g-", i);
    gone.namespace_ = "default";
    gone.uid = "uid-" + gone.name;
    gone.phase = "Succeeded";
    f.ledger.PodDeleted(gone);
  }
  ASSERT_EQ(f.UsedGpus(), 16);
  f.clock.Advance(absl::Minutes(1));
  // Created again (new pods, same gang name): its rack is still not free, and its wait starts now.
  ExtenderFilterResult r = f.service.Filter(MakeArgs(RackGangPod(4, "5m"), f.names));
  EXPECT_TRUE(r.node_names.empty() && r.error.empty()) << r.error;
  f.clock.Advance(absl::Minutes(5));
  EXPECT_FALSE(f.FilterOne(RackGangPod(4, "5m")).empty());
}

TEST(RequiredTierMaxWaitFilter, WithoutTheKeyTheGangKeepsWaiting) {
  Fixture f(8);
  FillOneNodePerRack(f);
  for (int i = 0; i < 3; ++i) {
    ExpectWaits(f, i, "");
    f.clock.Advance(absl::Minutes(4));  // under the queue's 6-minute staleness: still waiting
  }
  EXPECT_EQ(f.UsedGpus(), 16);
}

TEST(RequiredTierMaxWaitFilter, MembersThatDisagreeOrAMalformedValueAreErrors) {
  Fixture f(8);
  FillOneNodePerRack(f);
  ExtenderFilterResult r = f.service.Filter(MakeArgs(RackGangPod(0, "5m"), f.names));
  EXPECT_TRUE(r.error.empty()) << r.error;
  f.clock.Advance(absl::Minutes(5));
  EXPECT_FALSE(f.FilterOne(RackGangPod(0, "5m")).empty()) << "reserved across racks";
  r = f.service.Filter(MakeArgs(RackGangPod(1, "10m"), f.names));
  EXPECT_NE(r.error.find("for at most 10m"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("for at most 5m"), std::string::npos) << r.error;
  r = f.service.Filter(MakeArgs(RackGangPod(2, "300"), f.names));
  EXPECT_NE(r.error.find(kRequiredTierMaxWaitKey), std::string::npos) << r.error;
}

}  // namespace
}  // namespace topogang
