// A gang whose pods the API server no longer has when its barrier opens. kube-scheduler's cache
// lags the API server, so a pod can be filtered after topogang saw it deleted; no deletion event
// will come for it then, and its binding is the first to learn it is gone.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "daemon/binder.h"
#include "tests/support/service_fixture.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

using testing::GangPod;
using testing::MakePod;

// The API server no longer has the pods (deleted before their filters reached topogang, as
// kube-scheduler's cache lags the API server, so topogang saw their deletion before it saw them):
// every binding finds them gone, and no deletion event will come for them. Their GPUs must come
// back, not stay with a gang that runs nothing (found by kubesched_churn_test: a cancelled gang
// kept one GPU for good).
class GoneBinder : public Binder {
 public:
  absl::Status Bind(const PodBinding& b) override {
    return absl::NotFoundError("topogang refuses to bind pod " + b.pod_namespace + "/" +
                               b.pod_name + ": the API server has no such pod");
  }
};

TEST(BindPodGoneTest, AGangWhosePodsAreGoneWhenItBindsGivesItsGpusBack) {
  GoneBinder gone;
  testing::ServiceFixture f(16, absl::Seconds(30), {}, &gone);
  std::vector<std::future<std::string>> binds;
  for (int i = 0; i < 2; ++i) {
    const Json pod = MakePod(GangPod("cancelled", 2, i, 1));
    binds.push_back(f.Bind(pod, f.FilterOne(pod)));
  }
  for (auto& b : binds) {
    ASSERT_EQ(b.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    EXPECT_NE(b.get().find("no such pod"), std::string::npos);
  }
  for (int i = 0; i < 500 && f.UsedGpus() > 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(f.UsedGpus(), 0);
  const GangLedger::Stats st = f.ledger.GetStats();
  EXPECT_EQ(st.running_gangs + st.reserved_gangs, 0);
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

}  // namespace
}  // namespace topogang
