// The control plane's own time in the simulator (sim/pod_line.h): one loop binds the started
// gangs' pods in start order, and a gang runs once its last pod is bound; one line creates the
// jobs' pods in arrival order, and a policy sees a job once its last pod exists.
#include "sim/pod_line.h"

#include <gtest/gtest.h>

#include "sim/engine.h"
#include "sim/trace.h"
#include "tests/sim/mini_trace.h"

namespace topogang::sim {
namespace {

TEST(PodLine, OffStartsAtOnce) {
  PodLine off(0);
  EXPECT_FALSE(off.enabled());
  EXPECT_EQ(off.Delay(5, 512, 10), 0);
}

TEST(PodLine, PodsOfGangsStartedTogetherWaitForEachOther) {
  PodLine line(/*pods_per_s=*/100);
  // 512 pods at 100/s after a 10 s lag: done 15.12 s after they were handed over.
  EXPECT_NEAR(line.Delay(0, 512, 10), 15.12, 1e-9);
  // One pod handed over at 10, with no lag, queues behind them: done at 15.13.
  EXPECT_NEAR(line.Delay(10, 1), 5.13, 1e-9);
  // Once the line is idle again only the lag and its own pods count.
  EXPECT_NEAR(line.Delay(100, 4, 10), 10.04, 1e-9);
  EXPECT_NEAR(line.Delay(200, 4), 0.04, 1e-9);
}

using mini::MiniCluster;
using mini::Parse;

// The proxy model (these jobs do not communicate, so they run their trace durations), with the
// control plane priced as given and a 10 s retry for a gang that waited.
SimOptions ControlPlane(double bind_pods_per_s, double pods_created_per_s) {
  SimOptions opt;
  opt.comm_model = CommModel::kProxy;
  opt.bind_pods_per_s = bind_pods_per_s;
  opt.bind_retry_s = 10;
  opt.pods_created_per_s = pods_created_per_s;
  return opt;
}

TEST(PodLine, PodsInBackoffLeaveTheLineToPodsThatAskNow) {
  PodLine line(/*pods_per_s=*/100);
  // A retried gang's 512 pods join at 10 and are done at 15.12.
  EXPECT_NEAR(line.Delay(0, 512, 10), 15.12, 1e-9);
  // A one-pod gang that asks at 1 is bound at once, in the idle time before them.
  EXPECT_NEAR(line.Delay(1, 1), 0.01, 1e-9);
  // 1,000 pods (10 s) asking at 2: 8 s of them in the idle time up to 10, the other 2 s after
  // the retried gang, done at 15.12 + 2 = 17.12; nothing promised before is moved.
  EXPECT_NEAR(line.Delay(2, 1000), 15.12, 1e-9);
  // The line is now busy from 2 to 17.12 without a gap: one more pod is done at 17.13.
  EXPECT_NEAR(line.Delay(3, 1), 14.13, 1e-9);
}

TEST(PodLine, TheEngineStartsAGangOnceItsPodsAreBound) {
  // At 1 pod/s, with a 10 s retry for a gang that waited:
  // t=0 a (1 pod) starts as it arrives: bound at 1 (no retry), runs 100 s to 101;
  // t=10 c (1 pod) backfills while b (4 pods, the whole cluster) waits: bound at 11, ends 111;
  // t=111 b is started: it waited, so its pods are retried at 121 and bound at 125; ends 175.
  // Without the line (Engine.MetricsOfAHandComputedTrace): 0/100, 10/110, 110/160.
  auto r = Simulate(MiniCluster(), mini::ThreeJobs(), "topogang", ControlPlane(1, 0));
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& j = r->jobs;
  EXPECT_DOUBLE_EQ(j[0].start, 1);
  EXPECT_DOUBLE_EQ(j[0].end, 101);
  EXPECT_DOUBLE_EQ(j[2].start, 11);
  EXPECT_DOUBLE_EQ(j[2].end, 111);
  EXPECT_DOUBLE_EQ(j[1].start, 125);
  EXPECT_DOUBLE_EQ(j[1].end, 175);
  EXPECT_EQ(r->summary.completed, 3);
}

TEST(PodLine, TheEngineSeesAJobOnceItsPodsAreCreated) {
  // The same trace, pods created at 1 pod/s in arrival order: a (1 pod) exists at 1, b (4 pods)
  // at 5, c (1 pod, arriving at 10) at 11. a runs 1-101; c backfills 11-111 while b waits for
  // the whole cluster; b runs 111-161. JCTs count from the arrivals, which do not move.
  auto r = Simulate(MiniCluster(), mini::ThreeJobs(), "topogang", ControlPlane(0, 1));
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

TEST(PodLine, AGangStoppedWhileItsPodsBindGetsNoGoodputForTheBindItDidNotFinish) {
  // `a` takes all 32 GPUs; its 4 pods bind at 1 pod/s, so it would run from 4. Node 0 fails at
  // 2 and is back at 12: `a` is killed (no room to repair it), requeued at 2 (its new pods ask
  // from then), and restarted at 12; it waited, so its pods are retried at 22 and bound at 26,
  // and it runs to 126. `z` arrives at 200, the end of the goodput window. Useful work: 32 GPUs
  // x 100 s = 3,200 GPU-s of 6,400. Charging the whole first bind (4 s) though it was stopped
  // after 2 would read 0.49; it waited from 2 to 26 to run again.
  Trace t = Parse("a,0,4,8,100,0,,\nz,200,1,8,1,0,,\n@fail,2,node-placeholder,10\n");
  Cluster c = MiniCluster();
  t.events[0].node = c.node(0).name;
  auto r = Simulate(c, t, "topogang", ControlPlane(1, 0));
  ASSERT_TRUE(r.ok()) << r.status();
  const JobResult& a = r->jobs[0];
  EXPECT_EQ(a.restarts, 1);
  EXPECT_DOUBLE_EQ(a.start, 26);
  EXPECT_DOUBLE_EQ(a.end, 126);
  EXPECT_NEAR(r->summary.goodput, 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(r->summary.max_recovery, 24);
}

}  // namespace
}  // namespace topogang::sim
