// Waking replacement members refused for lack of room. A running gang's replacement members
// are not in the gang queue, so nothing the queue starts wakes them, and GPUs kube-scheduler never
// saw taken (an expired reservation or fill) free with no cluster event: the worker's sweep wakes
// them through a node that gained free GPUs since they were refused (docs/extender.md, "Waking
// waiting pods").
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/extender/wake_support.h"
#include "tests/support/service_fixture.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

namespace t = testing;
using testing::ExpireEveryReservation;
using testing::WakeOptions;
using testing::WakePod;
using testing::Wakes;

// The gangs (2 x 8 each) filtered and bound; returns pod -> node.
std::map<std::string, std::string> RunGangs(t::ServiceFixture& f,
                                            const std::vector<std::string>& gangs) {
  std::map<std::string, std::string> at;
  for (const std::string& g : gangs) {
    for (int i = 0; i < 2; ++i) at[absl::StrCat(g, "-", i)] = f.FilterOne(WakePod(g, i));
    EXPECT_NE(at[g + "-0"], at[g + "-1"]);
    auto b0 = f.Bind(WakePod(g, 0), at[g + "-0"]), b1 = f.Bind(WakePod(g, 1), at[g + "-1"]);
    EXPECT_EQ(b0.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    EXPECT_EQ(b1.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    EXPECT_EQ(b0.get() + b1.get(), "") << g << " did not bind";
  }
  return at;
}

// The controller's replacement for member 1 of gang g.
Json Replacement(const std::string& g) {
  t::PodOpts o = t::GangPod(g, 2, 1, 8);
  o.name = g + "-1-r";
  return t::MakePod(o);
}

// Member 1 of gang g fails on `node`, and a one-node job takes the node at once.
void LoseNodeToAJob(t::ServiceFixture& f, const std::string& g, const std::string& node) {
  f.ledger.PodDeleted(t::FinishedPod(g + "-1", node));
  const Json job = t::MakePod(t::GangPod("job", 1, 0, 8));
  ASSERT_EQ(f.FilterOffered(job, {node}).node_names, std::vector<std::string>{node});
  ASSERT_EQ(f.Bind(job, node).wait_for(std::chrono::seconds(20)), std::future_status::ready);
}

void PastTheTtl(t::ServiceFixture& f) {
  f.clock.Advance(f.state.With([](GangScheduler& s) { return s.options().reservation_ttl; }) +
                  absl::Seconds(1));
}

// A running gang lost a member, and its replacement was refused for lack of room: the only
// free nodes were reserved for a gang whose other member never came. When that reservation
// expires the GPUs are free, but kube-scheduler never saw them taken, so no event brings the
// replacement back (it would wait for its 5-minute flush), and it is not in the queue, so the
// queue's pass wakes nothing. The expiry wakes it through a node it freed.
TEST(WakeTest, AnExpiryWakesAReplacementRefusedForLackOfRoom) {
  t::ServiceFixture f(4, WakeOptions(absl::Milliseconds(20)));
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  // Gang r runs on two nodes; the two others are `rest`.
  std::map<std::string, std::string> at = RunGangs(f, {"r"});
  ASSERT_FALSE(HasFailure());
  std::vector<std::string> rest;
  for (const std::string& n : f.names) {
    if (n != at["r-0"] && n != at["r-1"]) rest.push_back(n);
  }
  // Gang ghost (2 x 8) is reserved on the rest; its second pod never comes.
  ASSERT_FALSE(f.FilterOffered(WakePod("ghost", 0), rest).node_names.empty());
  // r's member fails and a one-node job takes its node: the replacement is refused, nowhere to
  // go until ghost's reservation expires.
  ASSERT_NO_FATAL_FAILURE(LoseNodeToAJob(f, "r", at["r-1"]));
  EXPECT_TRUE(f.FilterOffered(Replacement("r"), rest).node_names.empty());
  ASSERT_TRUE(wakes.Get().empty());
  ExpireEveryReservation(f);
  ASSERT_TRUE(wakes.Wait()) << "nothing woke the replacement";
  const auto got = wakes.Get();
  EXPECT_EQ(got.front().first, "default/r");
  EXPECT_TRUE(got.front().second == rest[0] || got.front().second == rest[1]) << got.front().second;
  // Woken, it asks again and gets a node the expiry freed.
  const auto r = f.FilterOffered(Replacement("r"), rest);
  ASSERT_EQ(r.node_names.size(), 1u) << r.error;
}

// The same with the room held by another running gang's replacement member instead of a fresh
// gang: its slot (a "fill") is reserved when the replacement is filtered, and released when the
// replacement does not reach bind within the TTL. That release is as invisible to kube-scheduler
// as an expiry, and is not a reservation expiring in the core.
TEST(WakeTest, AnExpiredFillWakesAReplacementRefusedForLackOfRoom) {
  t::ServiceFixture f(4, WakeOptions(absl::Milliseconds(20)));
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  std::map<std::string, std::string> at = RunGangs(f, {"r", "s"});
  ASSERT_FALSE(HasFailure());
  // s loses a member; its replacement is given the freed node (a fill) but never binds.
  const std::string d = at["s-1"];
  f.ledger.PodDeleted(t::FinishedPod("s-1", d));
  ASSERT_EQ(f.FilterOffered(Replacement("s"), {d}).node_names, std::vector<std::string>{d});
  // r loses its node to a job: its replacement has nowhere to go.
  ASSERT_NO_FATAL_FAILURE(LoseNodeToAJob(f, "r", at["r-1"]));
  EXPECT_TRUE(f.FilterOffered(Replacement("r"), {d}).node_names.empty());
  ASSERT_TRUE(wakes.Get().empty());
  // s's replacement does not come within the TTL: its fill is released, and r's is woken there.
  PastTheTtl(f);
  ASSERT_TRUE(wakes.Wait()) << "nothing woke the replacement";
  EXPECT_EQ(wakes.Get().front(), std::make_pair(std::string("default/r"), d));
  const auto r = f.FilterOffered(Replacement("r"), {d});
  ASSERT_EQ(r.node_names, std::vector<std::string>{d}) << r.error;
}

// The same release made outside the worker's sweep: the filter of any gang holding a fill
// releases every expired fill, before the sweep looks. The sweep compares free GPUs with what
// the refused replacement saw, not with what it saw itself, so the release still wakes it.
TEST(WakeTest, AFillReleasedByAnotherGangsFilterWakesAReplacementRefusedForLackOfRoom) {
  GangLedgerOptions o = WakeOptions(absl::Milliseconds(20));
  o.sweep = absl::Milliseconds(300);  // the filter below releases the fill first
  t::ServiceFixture f(6, o);
  Wakes wakes;
  f.ledger.SetWaker(wakes.Fn());
  std::map<std::string, std::string> at = RunGangs(f, {"r", "s", "u"});
  ASSERT_FALSE(HasFailure());
  // s and u each lose a member; their replacements are given the freed nodes (fills).
  const std::string d = at["s-1"], e = at["u-1"];
  for (const auto& [g, node] : {std::pair{"s", d}, std::pair{"u", e}}) {
    f.ledger.PodDeleted(t::FinishedPod(std::string(g) + "-1", node));
    ASSERT_EQ(f.FilterOffered(Replacement(g), {node}).node_names, std::vector<std::string>{node});
  }
  // r loses its node to a job: its replacement has nowhere to go.
  ASSERT_NO_FATAL_FAILURE(LoseNodeToAJob(f, "r", at["r-1"]));
  EXPECT_TRUE(f.FilterOffered(Replacement("r"), {d, e}).node_names.empty());
  ASSERT_TRUE(wakes.Get().empty());
  // Past the TTL, u's replacement asks again at once: its filter releases both fills and takes
  // its own node back, so only s's node is left freed when the sweep comes.
  PastTheTtl(f);
  ASSERT_EQ(f.FilterOffered(Replacement("u"), {e}).node_names, std::vector<std::string>{e});
  ASSERT_TRUE(wakes.Wait()) << "nothing woke the replacement";
  EXPECT_EQ(wakes.Get().front(), std::make_pair(std::string("default/r"), d));
  const auto r = f.FilterOffered(Replacement("r"), {d});
  ASSERT_EQ(r.node_names, std::vector<std::string>{d}) << r.error;
}

}  // namespace
}  // namespace topogang
