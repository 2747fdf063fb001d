// The control plane's own time in the simulator (sim/pod_line.h): one loop binds the started
// gangs' pods in start order, and a gang runs once its last pod is bound; one line creates the
// jobs' pods in arrival order, and a policy sees a job once its last pod exists.
#include "sim/pod_line.h"

#include <gtest/gtest.h>

#include "sim/engine.h"
#include "sim/trace.h"
#include "tests/test_util.h"

namespace topogang::sim {
namespace {

TEST(PodLine, OffStartsAtOnce) {
  PodLine off(0, 10);
  EXPECT_FALSE(off.on());
  EXPECT_EQ(off.Delay(5, 512), 0);
}

TEST(PodLine, PodsOfGangsStartedTogetherWaitForEachOther) {
  PodLine line(/*pods_per_s=*/100, /*retry_s=*/10);
  // 512 pods at 100/s after a 10 s retry: bound 15.12 s after the start.
  EXPECT_NEAR(line.Delay(0, 512), 15.12, 1e-9);
  // A one-pod gang started a second later queues behind them: bound at 15.13.
  EXPECT_NEAR(line.Delay(1, 1), 14.13, 1e-9);
  // Once the loop is idle again only the retry and its own pods count.
  EXPECT_NEAR(line.Delay(100, 4), 10.04, 1e-9);
}

Trace Mini() {
  auto t = ParseTraceCsv(
      "id,arrival_s,members,gpus_per_member,duration_s,comm_fraction,required_tier,preferred_"
      "tier\n"
      "a,0,1,8,100,0,,\n"
      "b,0,4,8,50,0,,\n"
      "c,10,1,8,100,0,,\n",
      "mini.csv");
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

TEST(PodLine, TheEngineStartsAGangOnceItsPodsAreBound) {
  // 32 GPUs (2 leaves x 2 nodes x 8). At 1 pod/s after a 10 s retry:
  // t=0 a (1 pod) is started: bound at 11, runs 100 s to 111;
  // t=10 c (1 pod) backfills while b (4 pods, the whole cluster) waits: bound at 21, ends 121;
  // t=121 b is started: its pods are tried at 131 and bound at 135; it ends at 185.
  // Without the line (Engine.MetricsOfAHandComputedTrace): 0/100, 10/110, 110/160.
  SimOptions opt;
  opt.comm_model = CommModel::kProxy;
  opt.bind_pods_per_s = 1;
  opt.bind_retry_s = 10;
  auto r = Simulate(testing::MakeCluster(1, 1, 2, 2, 8), Mini(), "topogang", opt);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& j = r->jobs;
  EXPECT_DOUBLE_EQ(j[0].start, 11);
  EXPECT_DOUBLE_EQ(j[0].end, 111);
  EXPECT_DOUBLE_EQ(j[2].start, 21);
  EXPECT_DOUBLE_EQ(j[2].end, 121);
  EXPECT_DOUBLE_EQ(j[1].start, 135);
  EXPECT_DOUBLE_EQ(j[1].end, 185);
  EXPECT_EQ(r->summary.completed, 3);
}

TEST(PodLine, TheEngineSeesAJobOnceItsPodsAreCreated) {
  // The same trace, pods created at 1 pod/s in arrival order: a (1 pod) exists at 1, b (4 pods)
  // at 5, c (1 pod, arriving at 10) at 11. a runs 1-101; c backfills 11-111 while b waits for
  // the whole cluster; b runs 111-161. JCTs count from the arrivals, which do not move.
  SimOptions opt;
  opt.comm_model = CommModel::kProxy;
  opt.pods_created_per_s = 1;
  auto r = Simulate(testing::MakeCluster(1, 1, 2, 2, 8), Mini(), "topogang", opt);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& j = r->jobs;
  EXPECT_DOUBLE_EQ(j[0].arrival, 0);
  EXPECT_DOUBLE_EQ(j[0].start, 1);
  EXPECT_DOUBLE_EQ(j[0].end, 101);
  EXPECT_DOUBLE_EQ(j[2].arrival, 10);
  EXPECT_DOUBLE_EQ(j[2].start, 11);
  EXPECT_DOUBLE_EQ(j[2].end, 111);
  EXPECT_DOUBLE_EQ(j[1].start, 111);
  EXPECT_DOUBLE_EQ(j[1].end, 161);
  EXPECT_NEAR(r->summary.mean_wait, (1 + 111 + 1) / 3.0, 1e-9);
}

}  // namespace
}  // namespace topogang::sim
