#include "scheduler/elastic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace topogang {
namespace {

using ::testing::IsEmpty;
using testing::MakeCluster;

const absl::Time kT0 = absl::UnixEpoch();

GangSpec Gang(std::string name, int members, int gpus) {
  GangSpec g;
  g.name = std::move(name);
  g.members = members;
  g.gpus_per_member = gpus;
  return g;
}

// Holds whole node `n` for gang `name`.
void Fill(GangScheduler& s, const std::string& name, int n) {
  Placement p;
  p.members.push_back({n, {}});
  for (int g = 0; g < 8; ++g) p.members[0].gpus.push_back(s.cluster().node(n).gpu_begin + g);
  ASSERT_TRUE(s.Adopt(Gang(name, 1, 8), p, GangState::kRunning, kT0).ok());
}

std::vector<int> NodesOf(const std::vector<MemberPlacement>& ms) {
  std::vector<int> n;
  for (const auto& m : ms) n.push_back(m.node);
  return n;
}

TEST(ElasticGangs, StartsAtItsMinimumWhereItCanGrowAndGrowsInsideItsLeaf) {
  // Two leaves of four 8-GPU nodes (leaf0 = 0-3, leaf1 = 4-7). Fillers hold node 0 and nodes
  // 4, 5: leaf0 has 3 free nodes, leaf1 has 2. The elastic gang wants 2..4 members of 8 GPUs.
  // Best fit for 2 members alone is leaf1 (no room left over); the elastic start picks leaf0,
  // where it can grow to 3. It starts with 2 members there, is offered 1 more in leaf0 (not the
  // 2 free nodes of leaf1: that would span the spine), and, once node 0 frees, 1 more again.
  GangScheduler s(MakeCluster(1, 1, 2, 4, 8));
  Fill(s, "f0", 0);
  Fill(s, "f4", 4);
  Fill(s, "f5", 5);
  ElasticGangs elastic;
  auto rec = elastic.Start(s, Gang("e", 0, 8), 2, 4, kT0);
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ((*rec)->placement.members.size(), 2u);
  for (int n : (*rec)->placement.Nodes()) EXPECT_TRUE(n >= 1 && n <= 3) << n;
  EXPECT_EQ(s.cluster().LevelName(elastic.start_level("e")), "leaf");

  auto offer = elastic.GrowthOffer(s, "e");
  ASSERT_TRUE(offer.ok()) << offer.status();
  ASSERT_EQ(offer->members.size(), 1u);
  EXPECT_TRUE(offer->members[0].node >= 1 && offer->members[0].node <= 3);
  ASSERT_TRUE(elastic.Grow(s, "e", offer->members).ok());
  EXPECT_EQ(s.Find("e")->placement.Nodes(), (std::vector<int>{1, 2, 3}));

  // Leaf0 is full: no offer, although leaf1 has two free nodes.
  auto none = elastic.GrowthOffer(s, "e");
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(none->members, IsEmpty());

  ASSERT_TRUE(s.Release("f0").ok());
  auto more = elastic.GrowthOffer(s, "e");
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(NodesOf(more->members), std::vector<int>{0});
  ASSERT_TRUE(elastic.Grow(s, "e", more->members).ok());
  EXPECT_EQ(s.Find("e")->placement.members.size(), 4u);
  // At its maximum: nothing more is offered.
  EXPECT_THAT(elastic.GrowthOffer(s, "e")->members, IsEmpty());
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(ElasticGangs, GrowthNeverLeavesTheStartDomain) {
  GangScheduler s(MakeCluster(1, 1, 2, 4, 8));
  ElasticGangs elastic;
  ASSERT_TRUE(elastic.Start(s, Gang("e", 0, 8), 2, 8, kT0).ok());
  const int leaf = s.cluster().AncestorAt(s.cluster().NodeDomain(s.Find("e")->placement.Nodes()[0]),
                                          elastic.start_level("e"));
  // The offer fills the start leaf only (2 more), not the other leaf.
  auto offer = elastic.GrowthOffer(s, "e");
  ASSERT_TRUE(offer.ok());
  ASSERT_EQ(offer->members.size(), 2u);
  for (const auto& m : offer->members) {
    EXPECT_EQ(s.cluster().AncestorAt(s.cluster().NodeDomain(m.node), elastic.start_level("e")),
              leaf);
  }
  // A member proposed outside the start leaf is refused.
  const int other = s.Find("e")->placement.Nodes()[0] < 4 ? 4 : 0;
  MemberPlacement outside{other, {s.cluster().node(other).gpu_begin}};
  outside.gpus.resize(8);
  for (int g = 0; g < 8; ++g) outside.gpus[g] = s.cluster().node(other).gpu_begin + g;
  EXPECT_EQ(elastic.Grow(s, "e", {outside}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(ElasticGangs, MinimumMustFit) {
  GangScheduler s(MakeCluster(1, 1, 1, 2, 8));
  ElasticGangs elastic;
  EXPECT_EQ(elastic.Start(s, Gang("e", 0, 8), 3, 4, kT0).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(elastic.Start(s, Gang("e", 0, 8), 3, 2, kT0).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A 1-member minimum that fits on one node still grows inside its leaf.
  ASSERT_TRUE(elastic.Start(s, Gang("e", 0, 8), 1, 2, kT0).ok());
  EXPECT_EQ(elastic.GrowthOffer(s, "e")->members.size(), 1u);
  EXPECT_EQ(elastic.GrowthOffer(s, "nope").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace topogang
