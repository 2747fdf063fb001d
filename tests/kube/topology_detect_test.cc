// topogangd in cluster mode with no tiers configured (`preset: auto`): KubeSync detects the
// label family from the Node objects of the fake API server, logs it once, and keeps it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kube/kube_sync.h"
#include "scheduler/clock.h"
#include "tests/support/fake_apiserver.h"

namespace topogang {
namespace {

using ::testing::ElementsAre;
using testing::FakeApiServer;
using ::testing::HasSubstr;
using testing::MakeNode;
using ::testing::Not;
using Labels = std::map<std::string, std::string>;

Labels V1(int i) {
  return {{"fabric.topograph.run/tier-1", absl::StrCat("s2-", i / 8)},
          {"fabric.topograph.run/tier-0", absl::StrCat("s1-", i / 4)},
          {"accelerator.topograph.run/domain", absl::StrCat("nvl", i / 4)},
          {"nvidia.com/gpu.product", "GB200"}};
}

template <typename Pred>
bool Eventually(Pred pred) {
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    if (pred()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return pred();
}

// KubeSync over a DaemonState, no extender: rebuilds replace the scheduler directly.
class AutoDaemon {
 public:
  explicit AutoDaemon(FakeApiServer& api) {
    KubeConfig kc;
    kc.server = api.url();
    auto client = std::make_shared<KubeClient>(kc);
    TopologyConfig topology = *PresetTopology("auto");
    state_ = std::make_unique<DaemonState>(
        GangScheduler(*Cluster::Build(ClusterSpec{}, topology), SchedulerOptions{}), clock_);
    KubeSyncOptions so;
    so.backoff_initial = absl::Milliseconds(10);
    so.backoff_max = absl::Milliseconds(100);
    so.rebuild_quiet = absl::Milliseconds(20);
    sync_ = std::make_unique<KubeSync>(client, *state_, topology, "nvidia.com/gpu", so);
    sync_->Start();
  }
  ~AutoDaemon() { sync_->Stop(); }
  KubeSync& sync() { return *sync_; }
  std::vector<std::string> Levels() {
    return state_->With([](GangScheduler& s) { return s.cluster().level_names(); });
  }
  int Nodes() {
    return state_->With([](GangScheduler& s) { return s.cluster().num_nodes(); });
  }

 private:
  SystemClock clock_;
  std::unique_ptr<DaemonState> state_;
  std::unique_ptr<KubeSync> sync_;
};

TEST(KubeTopologyDetect, TopographV1FromTheFirstListIsLoggedOnceAndKept) {
  FakeApiServer api;
  for (int i = 0; i < 16; ++i) {
    api.PutNode(MakeNode(absl::StrFormat("gb200-%02d", i), 4, V1(i)));
  }
  api.PutNode(MakeNode("cpu-0", 0, {{"topology.k8s.aws/network-node-layer-1", "nn"}}));
  ::testing::internal::CaptureStderr();
  std::string log;
  {
    AutoDaemon d(api);
    ASSERT_TRUE(d.sync().WaitSynced(absl::Seconds(10)));
    EXPECT_THAT(d.Levels(), ElementsAre("cluster", "tier-1", "tier-0", "accelerator", "node"));
    // A node of another family joins later: the tiers stay, the newcomer is isolated.
    api.PutNode(MakeNode("aws-0", 8, {{"topology.k8s.aws/network-node-layer-1", "nn-1"}}));
    EXPECT_TRUE(Eventually([&] { return d.Nodes() == 17; }));
    EXPECT_THAT(d.Levels(), ElementsAre("cluster", "tier-1", "tier-0", "accelerator", "node"));
    log = ::testing::internal::GetCapturedStderr();
  }
  EXPECT_THAT(log, HasSubstr("topogangd: topology: detected NVIDIA Topograph v1 labels on 16 of "
                             "16 GPU nodes: tiers tier-1 > tier-0 > accelerator"));
  EXPECT_EQ(log.find("topology: detected"), log.rfind("topology: detected")) << "one line:\n"
                                                                             << log;
  EXPECT_THAT(log, Not(HasSubstr("mixed labels")));
}

TEST(KubeTopologyDetect, UnlabelledNodesWaitForTheirLabelsThenAMixIsReported) {
  FakeApiServer api;
  for (int i = 0; i < 4; ++i) api.PutNode(MakeNode(absl::StrFormat("gpu-%d", i), 8, {}));
  ::testing::internal::CaptureStderr();
  std::string log;
  {
    AutoDaemon d(api);
    ASSERT_TRUE(d.sync().WaitSynced(absl::Seconds(10)));
    EXPECT_THAT(d.Levels(), ElementsAre("cluster", "node")) << "no family yet: flat";
    // Topograph labels three of the four nodes: a label change decides the family.
    for (int i = 0; i < 3; ++i) api.PutNode(MakeNode(absl::StrFormat("gpu-%d", i), 8, V1(i)));
    EXPECT_TRUE(Eventually([&] { return d.Levels().size() == 5; }));
    EXPECT_THAT(d.Levels(), ElementsAre("cluster", "tier-1", "tier-0", "accelerator", "node"));
    log = ::testing::internal::GetCapturedStderr();
  }
  EXPECT_THAT(log, HasSubstr("none of the 4 GPU nodes carries labels of a known family"));
  EXPECT_THAT(log, HasSubstr("topology: detected NVIDIA Topograph v1 labels"));
  // Reported once, when the family was fixed: however many were labelled by then, gpu-3 was not.
  EXPECT_THAT(log, HasSubstr("carry none ("));
  EXPECT_THAT(log, HasSubstr("gpu-3)"));
}

// A GB200 cluster where the GPU operator labels the NVLink cliques before Topograph labels the
// network: the clique-only tiers are provisional, and the network family, once it arrives,
// becomes the fixed tiers.
TEST(KubeTopologyDetect, CliquesAloneDoNotFixTheTiers) {
  FakeApiServer api;
  for (int i = 0; i < 8; ++i) {
    api.PutNode(MakeNode(absl::StrFormat("gb200-%d", i), 4,
                         {{"nvidia.com/gpu.clique", absl::StrCat("uuid.", i / 4)}}));
  }
  ::testing::internal::CaptureStderr();
  {
    AutoDaemon d(api);
    ASSERT_TRUE(d.sync().WaitSynced(absl::Seconds(10)));
    EXPECT_THAT(d.Levels(), ElementsAre("cluster", "nvlink", "node"));
    for (int i = 0; i < 8; ++i) {
      Labels l = V1(i);
      l["nvidia.com/gpu.clique"] = absl::StrCat("uuid.", i / 4);
      api.PutNode(MakeNode(absl::StrFormat("gb200-%d", i), 4, l));
    }
    EXPECT_TRUE(Eventually([&] { return d.Levels().size() == 5; }));
    EXPECT_THAT(d.Levels(), ElementsAre("cluster", "tier-1", "tier-0", "accelerator", "node"));
  }
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("no network labels; nvidia.com/gpu.clique on 8 of 8"));
  EXPECT_THAT(log, HasSubstr("detected NVIDIA Topograph v1 labels on 8 of 8"));
}

}  // namespace
}  // namespace topogang
