// Elastic gangs in the daemon (#13): a gang labelled topogang.io/min-members that does not fit
// whole starts with its minimum, in a domain with room to grow; its other pods wait (an error,
// so kube-scheduler retries them after its backoff) until it runs, then each takes one more
// member next to it, never across a wider tier than it started in.
#include <gtest/gtest.h>

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

Json Member(const std::string& gang, int size, int i, int min = 0) {
  testing::PodOpts o = GangPod(gang, size, i, 8);
  if (min > 0) o.annotations["topogang.io/min-members"] = std::to_string(min);
  return MakePod(o);
}

std::string Rack(const std::string& node) {
  // gpu-node-NNN: 4 nodes per rack (tests/support/test_util.h).
  return std::to_string(std::stoi(node.substr(9)) / 4);
}

void Finish(Fixture& f, const Json& pod) {
  auto p = ParsePod(pod, "nvidia.com/gpu");
  ASSERT_TRUE(p.ok()) << p.status();
  p->phase = "Succeeded";
  f.ledger.ObservePod(*p);
}

// Filters and binds members [from, to) of `gang` one after the other (each binds alone or
// through the barrier); returns their nodes.
std::vector<std::string> FilterAndBind(Fixture& f, const std::string& gang, int size, int from,
                                       int to, int min = 0) {
  std::vector<std::future<std::string>> binds;
  std::vector<std::string> nodes;
  for (int i = from; i < to; ++i) {
    Json p = Member(gang, size, i, min);
    const std::string node = f.FilterOne(p);
    if (node.empty()) return {};
    nodes.push_back(node);
    binds.push_back(f.Bind(p, node));
  }
  for (auto& b : binds) {
    EXPECT_EQ(b.wait_for(kWait), std::future_status::ready);
    EXPECT_EQ(b.get(), "");
  }
  return nodes;
}

std::string Reason(const ExtenderFilterResult& r) {
  if (!r.error.empty()) return r.error;
  return r.failed_unresolvable.empty() ? "" : r.failed_unresolvable[0].second;
}

TEST(ElasticTest, StartsAtItsMinimumAndGrowsOnlyInsideItsStartDomain) {
  // 16 nodes in 4 racks of 4. "big" takes 12 whole nodes, leaving 4 free.
  Fixture f(16);
  ASSERT_EQ(FilterAndBind(f, "big", 12, 0, 12).size(), 12u);
  // "el" wants 8 x 8 GPUs and says it can start with 2: it does, holding only those.
  Json e0 = Member("el", 8, 0, 2);
  const std::string n0 = f.FilterOne(e0);
  ASSERT_FALSE(n0.empty());
  EXPECT_EQ(f.UsedGpus(), (12 + 2) * 8) << "only the minimum is reserved";
  // Any two of its pods take the two slots; the others wait until those run: an error, so
  // kube-scheduler retries them after its backoff instead of parking them as unschedulable.
  Json e1 = Member("el", 8, 1, 2);
  const std::string n1 = f.FilterOne(e1);
  ExtenderFilterResult early = f.FilterOffered(Member("el", 8, 2, 2), f.names);
  EXPECT_TRUE(early.node_names.empty());
  EXPECT_NE(early.error.find("joins it once they run"), std::string::npos) << Reason(early);
  auto b0 = f.Bind(e0, n0);
  auto b1 = f.Bind(e1, n1);
  ASSERT_EQ(b0.wait_for(kWait), std::future_status::ready);
  ASSERT_EQ(b1.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(b0.get(), "");
  EXPECT_EQ(b1.get(), "");
  EXPECT_EQ(Rack(n0), Rack(n1));
  // Running now: each further pod grows it by one, inside the rack it started in.
  const std::vector<std::string> grown = FilterAndBind(f, "el", 8, 2, 4, 2);
  ASSERT_EQ(grown.size(), 2u);
  for (const std::string& n : grown) EXPECT_EQ(Rack(n), Rack(n0)) << n;
  EXPECT_EQ(f.UsedGpus(), 16 * 8);
  // The rack is full: the fifth pod is unschedulable (it moves when GPUs free up)...
  ExtenderFilterResult full = f.FilterOffered(Member("el", 8, 4, 2), f.names);
  EXPECT_TRUE(full.node_names.empty());
  EXPECT_EQ(full.error, "");
  EXPECT_NE(Reason(full).find("cannot grow now"), std::string::npos) << Reason(full);
  // ...and when "big" finishes, the GPUs freed are in other racks: it still does not grow there.
  for (int i = 0; i < 12; ++i) Finish(f, Member("big", 12, i));
  EXPECT_EQ(f.UsedGpus(), 4 * 8);
  ExtenderFilterResult elsewhere = f.FilterOffered(Member("el", 8, 4, 2), f.names);
  EXPECT_TRUE(elsewhere.node_names.empty());
  EXPECT_NE(Reason(elsewhere).find("never grows across"), std::string::npos) << Reason(elsewhere);
  EXPECT_EQ(f.UsedGpus(), 4 * 8);
  // One of its own members finishing frees a node in its rack: the fifth pod takes it.
  Finish(f, Member("el", 8, 3, 2));
  const std::vector<std::string> back = FilterAndBind(f, "el", 8, 4, 5, 2);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(Rack(back[0]), Rack(n0));
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

TEST(ElasticTest, AGangThatFitsWholeIsReservedWhole) {
  Fixture f(16);
  const std::string n = f.FilterOne(Member("el", 8, 0, 2));
  ASSERT_FALSE(n.empty());
  EXPECT_EQ(f.UsedGpus(), 8 * 8) << "min-members only matters when the whole gang does not fit";
}

TEST(ElasticTest, AScaledJobMovesTheMaximum) {
  // An autoscaler scales the job from 6 to 8 pods after the gang started with 2 in a free rack:
  // pods saying 8 raise its maximum (they would be "conflicting" for an ordinary gang).
  Fixture f(16);
  ASSERT_EQ(FilterAndBind(f, "big", 12, 0, 12).size(), 12u);
  Json a = Member("el", 6, 0, 2);
  Json b = Member("el", 6, 1, 2);
  const std::string na = f.FilterOne(a), nb = f.FilterOne(b);
  auto ba = f.Bind(a, na);
  auto bb = f.Bind(b, nb);
  ASSERT_EQ(ba.wait_for(kWait), std::future_status::ready);
  ASSERT_EQ(bb.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(ba.get(), "");
  EXPECT_EQ(bb.get(), "");
  EXPECT_EQ(FilterAndBind(f, "el", 8, 2, 4, 2).size(), 2u);
  EXPECT_EQ(f.UsedGpus(), 16 * 8);
}

TEST(ElasticTest, APodWithoutMinMembersMustAgreeOnTheSize) {
  Fixture f(16);
  ASSERT_EQ(FilterAndBind(f, "big", 12, 0, 12).size(), 12u);
  ASSERT_FALSE(f.FilterOne(Member("el", 8, 0, 2)).empty());
  // A pod of the gang without the elastic key saying 6 members conflicts with the 8 it has.
  ExtenderFilterResult r = f.FilterOffered(Member("el", 6, 1), f.names);
  EXPECT_TRUE(r.node_names.empty());
  EXPECT_NE(r.error.find("8 pods"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace topogang
