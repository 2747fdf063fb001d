// The gang queue's order, end to end: the real topogangd behind the kube-scheduler emulator.
// Gangs of the same size wait on a full cluster; nodes free one by one. kube-scheduler retries
// the waiting pods in its own order, and an older pod has been refused more often, so its backoff
// (1 s doubling to 10 s) is longer: the first pod to reach topogangd once room appears is often a
// younger gang's. Whoever asks, the gangs must start in the order they arrived, also when they
// came while the cluster was full and kube-scheduler never asked topogangd about them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/kubesched/daemon_harness.h"

namespace topogang::kubesched {
namespace {

using testing::GangPod;

constexpr int kNodes = 8, kGangs = 6;

class QueueOrderEndToEnd : public testing::EmulatedDaemonTest {
 protected:
  void SetUp() override {
    for (int i = 0; i < kNodes; ++i) testing::PutGpuNode(api, absl::StrCat("n", i), "leaf-0");
    StartAll();
  }
  // Gangs (of kGangs) whose pods are all bound.
  std::vector<int> Started() {
    std::vector<int> out;
    for (int g = 0; g < kGangs; ++g) {
      if (!BoundNode(absl::StrCat("g", g, "-0")).empty() &&
          !BoundNode(absl::StrCat("g", g, "-1")).empty()) {
        out.push_back(g);
      }
    }
    return out;
  }
  void StartInArrivalOrder(bool full);
  int Refusals(int gang) {
    auto r = emu->Record(absl::StrCat("default/g", gang, "-0"));
    return r ? r->fit_errors : 0;
  }
};

// `full`: every node is busy while the gangs come, so kube-scheduler's own filters refuse them
// and topogangd first hears of them once a node frees, in the order kube-scheduler retries them;
// only its pod watch saw them arrive. Otherwise one node is free and each gang is refused by
// topogangd as it comes.
void QueueOrderEndToEnd::StartInArrivalOrder(bool full) {
  const int busy_nodes = full ? kNodes : kNodes - 1;
  for (int i = 0; i < busy_nodes; ++i) {
    Json busy = GangPod(absl::StrCat("busy-", i), "", 1, 8,
                        Json{{"nodeName", absl::StrCat("n", i)}}, "default-scheduler");
    busy["status"]["phase"] = "Running";
    api.PutPod(busy);
  }
  // Gangs of two whole nodes, one after another, each refused once before the next comes: their
  // arrival order. The first half is retried and refused a few more times before the second
  // half comes (a short job ended: kube-scheduler retries what it refused), as older pods are:
  // their backoffs are longer now.
  auto create = [&](int g) {
    for (int m = 0; m < 2; ++m) {
      api.PutPod(GangPod(absl::StrCat("g", g, "-", m), absl::StrCat("g", g), 2, 8));
    }
    ASSERT_TRUE(emu->WaitFor([&] { return Refusals(g) > 0; })) << topogangd.LogTail(30);
  };
  for (int g = 0; g < kGangs / 2; ++g) ASSERT_NO_FATAL_FAILURE(create(g));
  for (int tick = 0; tick < 3; ++tick) {
    const int before = Refusals(0);
    // On the free node; with none, a pod without GPUs.
    Json job =
        GangPod(absl::StrCat("tick-", tick), "", 1, full ? 0 : 8,
                Json{{"nodeName", absl::StrCat("n", full ? 0 : kNodes - 1)}}, "default-scheduler");
    job["status"]["phase"] = "Running";
    api.PutPod(job);
    api.DeletePod("default", absl::StrCat("tick-", tick));
    ASSERT_TRUE(emu->WaitFor([&] { return Refusals(0) > before; })) << topogangd.LogTail(30);
  }
  for (int g = kGangs / 2; g < kGangs; ++g) ASSERT_NO_FATAL_FAILURE(create(g));
  // The jobs end one by one; every second free node makes room for one more gang.
  std::vector<int> want;
  for (int i = 0; i < busy_nodes; ++i) {
    const int next = static_cast<int>(want.size());  // the oldest gang still waiting
    const int before = Refusals(kGangs - 1), before_next = Refusals(next);
    api.DeletePod("default", absl::StrCat("busy-", i));
    const int free_nodes = i + 1 + (kNodes - busy_nodes);
    if (free_nodes / 2 > static_cast<int>(want.size()) && want.size() < kGangs) {
      want.push_back(static_cast<int>(want.size()));
      ASSERT_TRUE(emu->WaitFor([&] { return Started().size() == want.size(); }, absl::Seconds(20)))
          << topogangd.LogTail(30);
      EXPECT_EQ(Started(), want) << "after job " << i << " ended\n" << topogangd.LogTail(40);
    } else {
      // The youngest and the oldest waiting gang are refused again: everyone has asked
      // topogangd since the node freed. (Had the next node freed before the older pods' longer
      // backoffs ran out, a younger gang would be the only one asking, and start: see
      // docs/extender.md.)
      ASSERT_TRUE(emu->WaitFor(
          [&] { return Refusals(kGangs - 1) > before && Refusals(next) > before_next; }));
    }
  }
}

TEST_F(QueueOrderEndToEnd, SameSizeGangsStartInArrivalOrderAsNodesFree) {
  StartInArrivalOrder(false);
}

TEST_F(QueueOrderEndToEnd, GangsThatCameWhileTheClusterWasFullStartInArrivalOrder) {
  StartInArrivalOrder(true);
}

// The first test with topogangd's watches 40 ms behind kube-scheduler's (0.4 s of the emulator's
// time), as on a cluster where topogangd's informer trails kube-scheduler's. The first gang asks
// before topogangd has seen the jobs on the busy nodes: they are not offered and look free here,
// "refused with room", nodes it may never use. Once its watch shows them taken moments later,
// topogangd drops that verdict (GangLedger::refused_since_). Before, the gang could not be
// planned on the first node to free and a younger gang started there: 6 of 6 runs failed, also
// with a 100 ms lag, or 20 ms per event and none.
class QueueOrderWhileOurWatchTrails : public QueueOrderEndToEnd {
 protected:
  void SetUp() override {
    api.SetWatchLag("topogangd/", absl::Milliseconds(40));  // before topogangd opens its watches
    QueueOrderEndToEnd::SetUp();
  }
};

TEST_F(QueueOrderWhileOurWatchTrails, SameSizeGangsStartInArrivalOrder) {
  StartInArrivalOrder(false);
}

}  // namespace
}  // namespace topogang::kubesched
