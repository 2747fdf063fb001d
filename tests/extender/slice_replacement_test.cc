// Replacing lost members of a sliced gang in the daemon (#13): the recreated pod of a member
// whose slice-mate still runs is placed inside that slice's domain, or gets a filter answer that
// the gang must be re-planned whole; it is never put next to the other slice (which nearest-to-
// the-survivors placement alone would do, splitting its tensor-parallel group).
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <string>

#include "k8s/pod_info.h"
#include "tests/support/service_fixture.h"

namespace topogang {
namespace {

using testing::GangPod;
using testing::MakePod;
using Fixture = testing::ServiceFixture;

constexpr auto kWait = std::chrono::seconds(20);

// gpu-node-NNN: 4 nodes per rack (tests/support/test_util.h).
int Rack(const std::string& node) { return std::stoi(node.substr(9)) / 4; }

Json SlicedMember(int i, const std::string& suffix = "") {
  testing::PodOpts o = GangPod("tp", 4, i, 8);
  o.annotations["topogang.io/slice-size"] = "2";
  o.annotations["topogang.io/slice-tier"] = "rack";
  o.annotations["topogang.io/required-tier"] = "switch";
  o.name += suffix;
  o.uid = "uid-" + o.name;
  return MakePod(o);
}

std::string Reason(const ExtenderFilterResult& r) {
  if (!r.error.empty()) return r.error;
  return r.failed_unresolvable.empty() ? "" : r.failed_unresolvable[0].second;
}

TEST(SliceReplacementTest, ALostMemberStaysWithItsSliceOrTheGangMustBeReplannedWhole) {
  Fixture f(16);  // 4 racks of 4 nodes x 8 GPUs
  std::map<int, std::string> node_of;
  std::vector<std::future<std::string>> binds;
  for (int i = 0; i < 4; ++i) {
    node_of[i] = f.FilterOne(SlicedMember(i));
    ASSERT_FALSE(node_of[i].empty());
  }
  for (int i = 0; i < 4; ++i) binds.push_back(f.Bind(SlicedMember(i), node_of[i]));
  for (auto& b : binds) {
    ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
    EXPECT_EQ(b.get(), "");
  }
  ASSERT_EQ(Rack(node_of[2]), Rack(node_of[3])) << "slice 1 shares a rack";
  const int rack = Rack(node_of[3]);
  // Every other node of slice 1's rack gets an ordinary 8-GPU pod, so that rack has no room.
  std::vector<Json> fillers;
  for (int n = rack * 4; n < rack * 4 + 4; ++n) {
    const std::string node = f.names[n];
    bool used = false;
    for (const auto& [m, at] : node_of) used |= at == node;
    if (used) continue;
    testing::PodOpts o;
    o.name = "fill-" + node;
    o.gpus = 8;
    Json p = MakePod(o);
    ExtenderFilterResult r = f.FilterOffered(p, {node});
    ASSERT_EQ(r.node_names.size(), 1u) << Reason(r);
    auto b = f.Bind(p, node);
    ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
    ASSERT_EQ(b.get(), "");
    fillers.push_back(p);
  }
  // Member 2's node fails: drained, its pod gone; the controller creates it again.
  ASSERT_TRUE(f.state.SetAdminDrain(node_of[2], true, "failed").ok());
  auto lost = ParsePod(SlicedMember(2), "nvidia.com/gpu");
  ASSERT_TRUE(lost.ok());
  lost->node_name = node_of[2];
  lost->phase = "Failed";
  f.ledger.ObservePod(*lost);
  // Other racks have free nodes, but not the rack of member 3, its slice-mate.
  ExtenderFilterResult r = f.FilterOffered(SlicedMember(2, "-again"), f.names);
  EXPECT_TRUE(r.node_names.empty()) << "placed on " << r.node_names[0];
  EXPECT_NE(Reason(r).find("re-planned whole"), std::string::npos) << Reason(r);
  // A node of that rack frees up (a filler finishes, or the failed node comes back when the
  // whole gang sat in one rack): the replacement goes there.
  if (fillers.empty()) {
    ASSERT_TRUE(f.state.SetAdminDrain(node_of[2], false, "").ok());
  } else {
    auto filler = ParsePod(fillers.front(), "nvidia.com/gpu");
    ASSERT_TRUE(filler.ok());
    filler->phase = "Succeeded";
    f.ledger.ObservePod(*filler);
  }
  const std::string again = f.FilterOne(SlicedMember(2, "-again"));
  ASSERT_FALSE(again.empty());
  EXPECT_EQ(Rack(again), rack);
}

}  // namespace
}  // namespace topogang
