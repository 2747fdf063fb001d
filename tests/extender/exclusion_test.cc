// Per-job exclusion in the daemon (#13): a gang naming nodes to avoid (topogang.io/avoid-nodes)
// is planned off them, a malformed list is a clear error, and a gang whose member failed on a node
// avoids that node when its pods come again (a restarted job), for failed_node_memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <set>

#include "k8s/pod_info.h"
#include "tests/support/service_fixture.h"

namespace topogang {
namespace {

using testing::GangPod;
using testing::MakePod;
using Fixture = testing::ServiceFixture;

constexpr auto kWait = std::chrono::seconds(20);

Json Member(const std::string& gang, int size, int i, const std::string& avoid = "",
            const std::string& suffix = "") {
  testing::PodOpts o = GangPod(gang, size, i, 8);
  if (!avoid.empty()) o.annotations["topogang.io/avoid-nodes"] = avoid;
  o.name += suffix;  // a controller recreates a job's pods under new names
  return MakePod(o);
}

// Filters and binds every member of a gang of `size` x 8 GPUs offered `offered`; returns the
// nodes it was bound to (empty when any member found no node).
std::set<std::string> PlaceGang(Fixture& f, const std::string& gang, int size,
                                const std::vector<std::string>& offered,
                                const std::string& avoid = "", const std::string& suffix = "") {
  std::vector<std::future<std::string>> binds;
  std::set<std::string> nodes;
  for (int i = 0; i < size; ++i) {
    Json p = Member(gang, size, i, avoid, suffix);
    ExtenderFilterResult r = f.FilterOffered(p, offered);
    if (r.node_names.size() != 1) {
      return {};
    }
    nodes.insert(r.node_names[0]);
    binds.push_back(f.Bind(p, r.node_names[0]));
  }
  for (auto& b : binds) {
    EXPECT_EQ(b.wait_for(kWait), std::future_status::ready);
    EXPECT_EQ(b.get(), "");
  }
  return nodes;
}

PodInfo Observed(const Json& pod, const std::string& node, const std::string& phase) {
  auto p = ParsePod(pod, "nvidia.com/gpu");
  EXPECT_TRUE(p.ok()) << p.status();
  PodInfo info = p.ok() ? *p : PodInfo{};
  info.node_name = node;
  info.phase = phase;
  return info;
}

TEST(ExclusionTest, AGangNamingNodesToAvoidIsPlannedOffThem) {
  // Where the gang goes with no annotation...
  Fixture plain(16);
  const std::set<std::string> first = PlaceGang(plain, "job", 2, plain.names);
  ASSERT_EQ(first.size(), 2u);
  // ...and with those very nodes named (spaces and an empty entry are fine).
  Fixture f(16);
  const std::string avoid = absl::StrCat(" ", *first.begin(), ", ,", *first.rbegin());
  const std::set<std::string> placed = PlaceGang(f, "job", 2, f.names, avoid);
  ASSERT_EQ(placed.size(), 2u);
  for (const std::string& n : placed) EXPECT_FALSE(first.count(n)) << n << " was to be avoided";
  const std::vector<AvoidanceBook::Node> why = f.state.avoidance().For("default/job");
  ASSERT_EQ(why.size(), 2u);
  EXPECT_EQ(why[0].reason, "named in topogang.io/avoid-nodes");
  // Offered only the avoided nodes, it is not placed at all, and says why not.
  Fixture g(16);
  ExtenderFilterResult r = g.FilterOffered(Member("job", 2, 0, avoid),
                                           std::vector<std::string>(first.begin(), first.end()));
  EXPECT_TRUE(r.node_names.empty());
  EXPECT_EQ(g.UsedGpus(), 0);
}

TEST(ExclusionTest, AMalformedAvoidListIsAnErrorNotAGuess) {
  Fixture f(16);
  for (const std::string& bad :
       std::vector<std::string>{"Node_A", "gpu-node-001,-x", std::string(300, 'a')}) {
    ExtenderFilterResult r = f.FilterOffered(Member("job", 2, 0, bad), f.names);
    EXPECT_TRUE(r.node_names.empty()) << bad;
    EXPECT_NE(r.error.find("topogang.io/avoid-nodes"), std::string::npos) << r.error;
  }
  EXPECT_EQ(f.UsedGpus(), 0) << "nothing reserved for a gang with a malformed list";
}

TEST(ExclusionTest, ARestartedGangAvoidsTheNodeItsMemberFailedOn) {
  Fixture f(16);
  const std::set<std::string> first = PlaceGang(f, "job", 2, f.names);
  ASSERT_EQ(first.size(), 2u);
  const std::string failed = *first.begin();
  // Member 0 fails on its node; the controller deletes the job's pods and creates new ones.
  std::string failed_pod_node;
  for (const auto& [pod, node] : f.binder.Bindings()) {
    if (pod.find("job-0") != std::string::npos) failed_pod_node = node;
  }
  ASSERT_FALSE(failed_pod_node.empty());
  f.ledger.ObservePod(Observed(Member("job", 2, 0), failed_pod_node, "Failed"));
  f.ledger.ObservePod(Observed(Member("job", 2, 1), "", "Succeeded"));
  EXPECT_EQ(f.UsedGpus(), 0) << "the gang's GPUs are free once its pods are gone";

  // Offered the failed node and one other, the restarted gang cannot be placed...
  std::vector<std::string> two = {failed_pod_node,
                                  failed_pod_node == f.names[0] ? f.names[1] : f.names[0]};
  EXPECT_TRUE(PlaceGang(f, "job", 2, two, "", "-b").empty());
  EXPECT_EQ(f.UsedGpus(), 0);
  for (int i = 0; i < 2; ++i)
    f.ledger.ObservePod(Observed(Member("job", 2, i, "", "-b"), "", "Succeeded"));
  // ...offered a third node too, it goes there and off the failed one.
  std::vector<std::string> three = two;
  for (const std::string& n : f.names) {
    if (std::find(three.begin(), three.end(), n) == three.end()) {
      three.push_back(n);
      break;
    }
  }
  const std::set<std::string> again = PlaceGang(f, "job", 2, three, "", "-c");
  ASSERT_EQ(again.size(), 2u);
  EXPECT_FALSE(again.count(failed_pod_node));
  // `topogang explain` reads why (DaemonState::avoidance): the node and how long ago it failed.
  const std::vector<AvoidanceBook::Node> why = f.state.avoidance().For("default/job");
  ASSERT_EQ(why.size(), 1u);
  EXPECT_EQ(why[0].name, failed_pod_node);
  EXPECT_NE(why[0].reason.find("a member failed here"), std::string::npos) << why[0].reason;
  // Another gang is not affected: it may use the node at once.
  f.ledger.ObservePod(Observed(Member("job", 2, 0, "", "-c"), "", "Succeeded"));
  f.ledger.ObservePod(Observed(Member("job", 2, 1, "", "-c"), "", "Succeeded"));
  EXPECT_EQ(PlaceGang(f, "other", 2, two).size(), 2u);
  f.ledger.ObservePod(Observed(Member("other", 2, 0), "", "Succeeded"));
  f.ledger.ObservePod(Observed(Member("other", 2, 1), "", "Succeeded"));
  // After failed_node_memory (1 h by default) the gang may use the node again.
  f.clock.Advance(absl::Hours(1) + absl::Minutes(1));
  EXPECT_EQ(PlaceGang(f, "job", 2, two, "", "-d").size(), 2u);
}

// Slow nodes (the agents' signals, scored in DaemonState::slow_nodes) are avoided by gangs of 64+
// GPUs only: one slow rank paces a 64-GPU all-reduce; a single-node job barely notices.
TEST(ExclusionTest, LargeGangsAvoidSlowNodesAndSmallOnesUseThem) {
  QueueOptions q;
  q.locality_patience = absl::ZeroDuration();  // the small gang's two nodes are in two leaves
  Fixture f(16, absl::Seconds(10), q);
  const std::string slow = f.names[3];
  EXPECT_FALSE(f.state.slow_nodes().Report(slow, SlownessSignal::kClockThrottle, f.clock.Now()));
  EXPECT_TRUE(f.state.slow_nodes().Report(slow, SlownessSignal::kLinkReplay, f.clock.Now()));
  // An 8 x 8 gang (64 GPUs) offered exactly 8 nodes, the slow one among them, waits...
  const std::vector<std::string> eight(f.names.begin(), f.names.begin() + 8);
  EXPECT_TRUE(PlaceGang(f, "big", 8, eight).empty());
  EXPECT_EQ(f.UsedGpus(), 0);
  f.ledger.ObservePod(Observed(Member("big", 8, 0), "", "Succeeded"));  // that pod goes
  // ...and offered a ninth, goes around the slow node.
  std::vector<std::string> nine = eight;
  nine.push_back(f.names[8]);
  const std::set<std::string> big = PlaceGang(f, "big", 8, nine, "", "-b");
  ASSERT_EQ(big.size(), 8u);
  EXPECT_FALSE(big.count(slow));
  // A 2 x 8 gang (16 GPUs) may use it: offered the slow node and one other, it is placed.
  const std::set<std::string> small = PlaceGang(f, "small", 2, {slow, f.names[9]});
  EXPECT_EQ(small, (std::set<std::string>{slow, f.names[9]}));
}

}  // namespace
}  // namespace topogang
