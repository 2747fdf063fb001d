// A starved gang whose pods kube-scheduler offers only some nodes (a node selector naming one
// rack) gets its GPUs held on those nodes, not on the freest rack it could never use: that rack
// keeps serving other pods, and the gang starts on its own once the job there ends.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "extender/extender_service.h"
#include "tests/support/service_fixture.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

namespace t = testing;

std::vector<std::string> Nodes(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i <= to; ++i) out.push_back(t::NodeNames(i + 1).back());
  return out;
}

TEST(QueueHoldOfferedTest, AStarvedGangHoldsOnlyNodesItWasOffered) {
  const QueueOptions q = t::StarvedGangsHoldAtOnce(16);
  t::ServiceFixture f(8, absl::Seconds(10), q);  // rack-000: nodes 0-3, rack-001: nodes 4-7
  const std::vector<std::string> rack0 = Nodes(0, 3), rack1 = Nodes(4, 7);
  // A job on node 4: rack-001 has three free nodes, rack-000 four.
  const Json a = t::MakePod(t::GangPod("a", 1, 0, 8));
  ASSERT_EQ(f.FilterOffered(a, {rack1[0]}).node_names, std::vector<std::string>{rack1[0]});
  auto bound = f.Bind(a, rack1[0]);
  ASSERT_EQ(bound.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  // A 4 x 8 gang whose pods may only go to rack-001 waits, then starves.
  const Json b0 = t::MakePod(t::GangPod("big", 4, 0, 8));
  EXPECT_TRUE(f.FilterOffered(b0, rack1).node_names.empty());
  f.clock.Advance(absl::Minutes(2));
  EXPECT_TRUE(f.FilterOffered(b0, rack1).node_names.empty());
  // Its hold is in rack-001: a pod there is refused, a pod in rack-000 is not.
  EXPECT_TRUE(
      f.FilterOffered(t::MakePod(t::GangPod("p1", 1, 0, 8)), {rack1[1]}).node_names.empty());
  EXPECT_EQ(f.FilterOffered(t::MakePod(t::GangPod("p0", 1, 0, 8)), {rack0[0]}).node_names,
            std::vector<std::string>{rack0[0]})
      << "rack-000 is not held: the gang could never run there";
  // The job on node 4 ends: the gang starts on rack-001.
  PodInfo gone;
  gone.name = "a-0";
  gone.namespace_ = "default";
  gone.uid = "uid-a-0";
  gone.phase = "Succeeded";
  f.ledger.PodDeleted(gone);
  std::set<std::string> nodes;
  for (int i = 0; i < 4; ++i) {
    const ExtenderFilterResult r = f.FilterOffered(t::MakePod(t::GangPod("big", 4, i, 8)), rack1);
    ASSERT_EQ(r.node_names.size(), 1u) << r.error;
    nodes.insert(r.node_names[0]);
  }
  EXPECT_EQ(nodes, std::set<std::string>(rack1.begin(), rack1.end()));
}

}  // namespace
}  // namespace topogang
