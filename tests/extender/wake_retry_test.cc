// A pod refused for lack of room, woken by kube-scheduler after a quiet spell (a job ended), may
// reach topogangd before topogangd's watch has applied the change that woke it. Its first
// refusal after wake_retry of quiet is a filter Error, so kube-scheduler tries it again after
// its backoff instead of parking it until the next event or for 5 minutes; refusals closer
// together stay plain refusals, so no pod loops through backoff (GangLedgerOptions::wake_retry).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "extender/extender_service.h"
#include "tests/support/service_fixture.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

namespace t = testing;

// Fills the 4 nodes of the fixture with one 8-GPU job each.
void Fill(t::ServiceFixture& f) {
  for (int i = 0; i < 4; ++i) {
    const Json pod = t::MakePod(t::GangPod("job" + std::to_string(i), 1, 0, 8));
    const std::string node = f.names[i];
    ASSERT_EQ(f.FilterOffered(pod, {node}).node_names, std::vector<std::string>{node});
    auto bound = f.Bind(pod, node);
    ASSERT_EQ(bound.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  }
}

TEST(WakeRetryTest, ARefusalAfterAQuietSpellIsAnErrorOnce) {
  t::ServiceFixture f(4);
  ASSERT_NO_FATAL_FAILURE(Fill(f));
  const Json gang = t::MakePod(t::GangPod("g", 2, 0, 8));
  const Json single = t::MakePod(t::GangPod("s", 1, 0, 8));
  for (const Json& pod : {gang, single}) {
    SCOPED_TRACE(pod["metadata"]["name"].get<std::string>());
    ExtenderFilterResult r = f.FilterOffered(pod, f.names);
    EXPECT_TRUE(r.node_names.empty());
    EXPECT_EQ(r.error, "") << "a first refusal is a plain refusal";
    f.clock.Advance(absl::Seconds(10));  // kube-scheduler's backoff, or a busy cluster's events
    r = f.FilterOffered(pod, f.names);
    EXPECT_EQ(r.error, "");
    f.clock.Advance(absl::Seconds(40));  // quiet, then a job ends and the pod is woken
    r = f.FilterOffered(pod, f.names);
    EXPECT_TRUE(r.node_names.empty());
    EXPECT_NE(r.error.find("cannot be placed now"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("tries again after its backoff"), std::string::npos) << r.error;
    f.clock.Advance(absl::Seconds(10));  // its retry after backoff: refused plainly, no loop
    r = f.FilterOffered(pod, f.names);
    EXPECT_EQ(r.error, "");
    EXPECT_TRUE(r.node_names.empty());
  }
}

TEST(WakeRetryTest, ZeroTurnsItOff) {
  GangLedgerOptions o = t::ServiceFixture::Options(absl::Seconds(10), {});
  o.wake_retry = absl::ZeroDuration();
  FakeClock clock;
  DaemonState state(GangScheduler(t::TestCluster(1)), clock);
  MemoryBinder binder;
  GangLedger ledger(state, binder, o);
  ExtenderService service(ledger);
  const std::vector<std::string> names = t::NodeNames(1);
  const Json job = t::MakePod(t::GangPod("job", 1, 0, 8));
  ASSERT_EQ(service.Filter(t::MakeArgs(job, names)).node_names, names);
  auto bound = t::BindPod(service, job, names[0]);
  ASSERT_EQ(bound.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  const Json pod = t::MakePod(t::GangPod("g", 2, 0, 4));  // the node is full
  ASSERT_TRUE(service.Filter(t::MakeArgs(pod, names)).node_names.empty());
  clock.Advance(absl::Hours(1));
  const ExtenderFilterResult r = service.Filter(t::MakeArgs(pod, names));
  EXPECT_TRUE(r.node_names.empty());
  EXPECT_EQ(r.error, "");
}

}  // namespace
}  // namespace topogang
