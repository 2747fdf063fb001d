#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/placement_format.h"
#include "common/args.h"
#include "scheduler/planner.h"
#include "tests/test_util.h"

namespace topogang::cli {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<Args> Parse(std::vector<std::string> argv) {
  std::vector<char*> ptrs;
  for (auto& a : argv) ptrs.push_back(a.data());
  return ParseArgs(static_cast<int>(ptrs.size()), ptrs.data(), 1, {"cluster", "format"},
                   {"verbose"});
}

TEST(Args, ValuesBooleansAndPositionals) {
  auto a = Parse({"cmd", "--cluster", "c.yaml", "--format=json", "--verbose", "gang-a"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->Get("cluster"), "c.yaml");
  EXPECT_EQ(a->Get("format"), "json");
  EXPECT_TRUE(a->Has("verbose"));
  EXPECT_EQ(a->positional, std::vector<std::string>{"gang-a"});
}

TEST(Args, Errors) {
  EXPECT_THAT(Parse({"cmd", "--clutser", "x"}).status().message(),
              HasSubstr("unknown flag --clutser"));
  EXPECT_THAT(Parse({"cmd", "--cluster"}).status().message(), HasSubstr("needs a value"));
  EXPECT_THAT(Parse({"cmd", "--verbose=yes"}).status().message(), HasSubstr("takes no value"));
}

TEST(PlacementFormat, CompressesNodeRuns) {
  Cluster c = topogang::testing::MakeCluster(1, 1, 1, 6, 8);
  EXPECT_EQ(CompressNodeList(c, {0, 1, 2, 4, 5}), "gpu-0000..gpu-0002, gpu-0004, gpu-0005");
  EXPECT_EQ(CompressNodeList(c, {3}), "gpu-0003");
  EXPECT_EQ(CompressNodeList(c, {}), "");
}

TEST(PlacementFormat, JsonForPlacedAndRefused) {
  Cluster c = topogang::testing::MakeCluster(1, 1, 2, 2, 8);
  GangSpec g;
  g.name = "g";
  g.members = 2;
  g.gpus_per_member = 8;
  auto p = Planner(c).Plan(g);
  ASSERT_TRUE(p.ok());
  auto j = PlacementJson(c, g, p);
  EXPECT_EQ(j["placed"], true);
  EXPECT_EQ(j["tier"], "leaf");
  EXPECT_EQ(j["nodes"], nlohmann::json::array({"gpu-0000", "gpu-0001"}));
  EXPECT_EQ(j["members"][1]["gpus"].size(), 8u);
  EXPECT_EQ(j["domains_spanned"]["node"], 2);
  EXPECT_EQ(j["bandwidth_gbps"], 400.0);
  auto refused = PlacementJson(c, g, absl::ResourceExhaustedError("no room"));
  EXPECT_EQ(refused["placed"], false);
  EXPECT_EQ(refused["reason"], "no room");
  EXPECT_TRUE(refused["tier"].is_null());
}

TEST(Table, AlignsColumns) {
  Table t({"A", "BB"});
  t.Add({"long-cell", "x"});
  EXPECT_EQ(t.Render(), "A          BB\nlong-cell  x\n");
}

}  // namespace
}  // namespace topogang::cli
