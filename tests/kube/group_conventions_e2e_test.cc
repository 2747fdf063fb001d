// Gangs from the conventions users already write, end to end: the fake API server serves the
// group objects (discovery, list, watch), GroupObjectsWatch caches them, and the extender verbs
// (filter, bind) place and bind each gang through KubeBinder. One test per object kind.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/gang_ledger.h"
#include "extender/extender_service.h"
#include "kube/group_objects_watch.h"
#include "kube/kube_client.h"
#include "tests/support/fake_apiserver.h"
#include "tests/support/service_util.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

using testing::FakeApiServer;

class ConventionDaemon {
 public:
  explicit ConventionDaemon(FakeApiServer& api, GangLedgerOptions::GangBarrier barrier =
                                                    GangLedgerOptions::GangBarrier::kAuto)
      : api_(api),
        state_(GangScheduler(testing::TestCluster(16)), clock_),
        client_(MakeClient(api)),
        binder_(client_),
        ledger_(state_, binder_, Options(barrier)),
        service_(ledger_) {
    GroupObjectsWatchOptions wo;
    wo.backoff_initial = absl::Milliseconds(10);
    wo.backoff_max = absl::Milliseconds(50);
    wo.rediscover = absl::Milliseconds(100);
    watch_ = std::make_unique<GroupObjectsWatch>(MakeClient(api), wo);
    ledger_.SetGroupLookup(watch_.get());
    ledger_.SetNotify([this](const GangNotice& n) {
      std::lock_guard<std::mutex> l(mu_);
      notices_.push_back(n);
    });
    watch_->Start();
    EXPECT_TRUE(watch_->WaitSynced(absl::Seconds(10)));
  }
  ~ConventionDaemon() {
    ledger_.SetNotify(nullptr);
    watch_->Stop();
  }
  static std::shared_ptr<KubeClient> MakeClient(FakeApiServer& api) {
    KubeConfig kc;
    kc.server = api.url();
    return std::make_shared<KubeClient>(kc);
  }
  static GangLedgerOptions Options(GangLedgerOptions::GangBarrier barrier) {
    GangLedgerOptions o;
    o.bind_window = absl::Seconds(10);
    o.tick = absl::Milliseconds(20);
    o.sweep = absl::Milliseconds(20);
    o.gang_barrier = barrier;
    return o;
  }
  ExtenderFilterResult Filter(const Json& pod) {
    return service_.Filter(testing::MakeArgs(pod, testing::NodeNames(16)));
  }
  // Waits (bounded) until the watch has the object, then filters and binds every pod; returns
  // the nodes they were steered to.
  std::vector<std::string> PlaceAndBind(const std::vector<Json>& pods) {
    std::vector<std::string> nodes;
    for (const Json& p : pods) {
      api_.PutPod(p);
      ExtenderFilterResult r = Filter(p);
      EXPECT_EQ(r.error, "") << p["metadata"]["name"];
      EXPECT_EQ(r.node_names.size(), 1u) << p["metadata"]["name"];
      nodes.push_back(r.node_names.empty() ? "" : r.node_names[0]);
    }
    std::vector<std::future<std::string>> binds;
    for (size_t i = 0; i < pods.size(); ++i) {
      binds.push_back(testing::BindPod(service_, pods[i], nodes[i]));
    }
    for (auto& b : binds) {
      EXPECT_EQ(b.wait_for(std::chrono::seconds(10)), std::future_status::ready);
      EXPECT_EQ(b.get(), "");
    }
    return nodes;
  }
  std::vector<GangNotice> notices() {
    std::lock_guard<std::mutex> l(mu_);
    return notices_;
  }
  GroupObjectsWatch& watch() { return *watch_; }
  GangLedger& ledger() { return ledger_; }
  ExtenderService& service() { return service_; }
  DaemonState& state() { return state_; }

 private:
  FakeApiServer& api_;
  FakeClock clock_;
  DaemonState state_;
  std::shared_ptr<KubeClient> client_;
  KubeBinder binder_;
  GangLedger ledger_;
  ExtenderService service_;
  std::unique_ptr<GroupObjectsWatch> watch_;
  std::mutex mu_;
  std::vector<GangNotice> notices_;
};

// A GPU pod of `gpus` GPUs with the given labels / annotations / spec fields merged in.
Json GpuPod(const std::string& name, const std::string& ns, int gpus,
            const std::map<std::string, std::string>& labels,
            const std::map<std::string, std::string>& annotations = {}) {
  testing::PodOpts o;
  o.name = name;
  o.ns = ns;
  o.gpus = gpus;
  o.labels = labels;
  o.annotations = annotations;
  return testing::MakePod(o);
}

bool Found(GroupObjectsWatch& w, GroupKind kind, const std::string& ns, const std::string& name) {
  return w.Find(kind, ns, name).state == GroupObjectLookup::State::kFound;
}

int GangMembers(DaemonState& state, const std::string& id) {
  return state.With([&](GangScheduler& s) {
    const GangRecord* r = s.Find(id);
    return r == nullptr ? -1 : static_cast<int>(r->placement.members.size());
  });
}

TEST(GroupConventionsE2E, ClusterWithoutGroupKindsIsNormal) {
  FakeApiServer api;
  ConventionDaemon d(api);
  EXPECT_GE(api.discovery_requests(), kNumGroupKinds);
  EXPECT_EQ(api.open_watches(), 0);  // nothing served: nothing watched
  for (const GroupKindInfo& k : AllGroupKinds()) EXPECT_EQ(d.watch().ServedVersion(k.kind), "");
  // topogang's own labels work as before.
  d.PlaceAndBind({testing::MakePod(testing::GangPod("g", 2, 0, 8)),
                  testing::MakePod(testing::GangPod("g", 2, 1, 8))});
  EXPECT_EQ(api.bindings().size(), 2u);
}

TEST(GroupConventionsE2E, SchedulerPluginsPodGroupWaitsThenSizesTheGang) {
  FakeApiServer api;
  api.ServeResource("scheduling.x-k8s.io", "v1alpha1", "podgroups");
  ConventionDaemon d(api);
  EXPECT_EQ(d.watch().ServedVersion(GroupKind::kPluginsPodGroup), "v1alpha1");
  std::vector<Json> pods;
  for (int i = 0; i < 3; ++i) {
    pods.push_back(
        GpuPod(absl::StrCat("nccl-", i), "ml", 8, {{"scheduling.x-k8s.io/pod-group", "nccl"}}));
  }
  // The PodGroup has not arrived: the pod waits (an error, so kube-scheduler retries it soon).
  ExtenderFilterResult early = d.Filter(pods[0]);
  EXPECT_NE(early.error.find("waiting for PodGroup (scheduling.x-k8s.io) ml/nccl"),
            std::string::npos)
      << early.error;
  EXPECT_TRUE(d.notices().empty());  // waiting is no warning
  api.PutObject("scheduling.x-k8s.io", "v1alpha1", "podgroups", Json::parse(R"({
    "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
    "metadata": {"name": "nccl", "namespace": "ml"}, "spec": {"minMember": 3}})"));
  ASSERT_TRUE(
      api.WaitFor([&] { return Found(d.watch(), GroupKind::kPluginsPodGroup, "ml", "nccl"); }));
  d.PlaceAndBind(pods);
  EXPECT_EQ(GangMembers(d.state(), "ml/nccl"), 3);
  EXPECT_EQ(api.bindings().size(), 3u);
  // A fourth pod naming the same PodGroup is one too many.
  Json extra = GpuPod("nccl-3", "ml", 8, {{"scheduling.x-k8s.io/pod-group", "nccl"}});
  EXPECT_TRUE(d.Filter(extra).node_names.empty());
}

TEST(GroupConventionsE2E, UpstreamPodGroupOfTheServedVersionWithTopology) {
  FakeApiServer api;
  // A 1.36 cluster: scheduling.k8s.io serves v1alpha2 only (the watch picks it).
  api.ServeResource("scheduling.k8s.io", "v1alpha2", "podgroups");
  ConventionDaemon d(api);
  EXPECT_EQ(d.watch().ServedVersion(GroupKind::kPodGroup), "v1alpha2");
  api.PutObject("scheduling.k8s.io", "v1alpha2", "podgroups", Json::parse(R"({
    "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
    "metadata": {"name": "train-0", "namespace": "ml"},
    "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "train",
        "podGroupTemplateName": "workers"}},
      "schedulingPolicy": {"gang": {"minCount": 4}},
      "schedulingConstraints": {"topology": [{"key": "topology.example.com/rack"}]}}})"));
  ASSERT_TRUE(api.WaitFor([&] { return Found(d.watch(), GroupKind::kPodGroup, "ml", "train-0"); }));
  std::vector<Json> pods;
  for (int i = 0; i < 4; ++i) {
    Json p = GpuPod(absl::StrCat("train-", i), "ml", 8, {});
    p["spec"]["schedulingGroup"] = {{"podGroupName", "train-0"}};
    pods.push_back(p);
  }
  std::vector<std::string> nodes = d.PlaceAndBind(pods);
  // Within one rack (the PodGroup's topology key maps onto the "rack" tier): 4 nodes per rack.
  std::set<int> racks;  // gpu-node-NNN: 4 nodes per rack
  for (const std::string& n : nodes) racks.insert(std::stoi(n.substr(9)) / 4);
  EXPECT_EQ(racks.size(), 1u);
  EXPECT_EQ(GangMembers(d.state(), "ml/train-0"), 4);
}

// A 1.37 cluster serves scheduling.k8s.io v1beta1 (GA-track fields) and v1alpha3 (alpha-only
// fields) side by side: the watch takes v1beta1. A cluster with only v1alpha3 gets v1alpha3. The
// PodGroup shape is the same in each (spec.schedulingPolicy.gang.minCount).
TEST(GroupConventionsE2E, UpstreamPodGroupPrefersV1beta1AndReadsEachServedVersion) {
  for (const char* only : {"v1beta1", "v1alpha3"}) {
    FakeApiServer api;
    api.ServeResource("scheduling.k8s.io", "v1alpha3", "podgroups");
    if (std::string(only) == "v1beta1") {
      api.ServeResource("scheduling.k8s.io", "v1beta1", "podgroups");
    }
    ConventionDaemon d(api);
    ASSERT_EQ(d.watch().ServedVersion(GroupKind::kPodGroup), only);
    api.PutObject("scheduling.k8s.io", only, "podgroups",
                  Json::parse(absl::StrCat(R"({
      "apiVersion": "scheduling.k8s.io/)",
                                           only, R"(",
      "kind": "PodGroup", "metadata": {"name": "pg", "namespace": "ml"},
      "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": "All",
               "priority": 1000}})")));
    ASSERT_TRUE(api.WaitFor([&] { return Found(d.watch(), GroupKind::kPodGroup, "ml", "pg"); }))
        << only;
    std::vector<Json> pods;
    for (int i = 0; i < 2; ++i) {
      Json p = GpuPod(absl::StrCat("pg-", i), "ml", 8, {});
      p["spec"]["schedulingGroup"] = {{"podGroupName", "pg"}};
      pods.push_back(p);
    }
    d.PlaceAndBind(pods);
    EXPECT_EQ(GangMembers(d.state(), "ml/pg"), 2) << only;
    EXPECT_EQ(api.bindings().size(), 2u) << only;
  }
}

// A 1.35 cluster: pods name a Workload and one of its pod groups through spec.workloadRef; the
// gang policy applies per podGroupReplicaKey.
TEST(GroupConventionsE2E, WorkloadV1alpha1GangPerReplicaKey) {
  FakeApiServer api;
  api.ServeResource("scheduling.k8s.io", "v1alpha1", "workloads");
  ConventionDaemon d(api);
  ASSERT_EQ(d.watch().ServedVersion(GroupKind::kWorkload), "v1alpha1");
  api.PutObject("scheduling.k8s.io", "v1alpha1", "workloads", Json::parse(R"({
    "apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
    "metadata": {"name": "llm", "namespace": "ml"},
    "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}},
                           {"name": "driver", "policy": {"basic": {}}}]}})"));
  ASSERT_TRUE(api.WaitFor([&] { return Found(d.watch(), GroupKind::kWorkload, "ml", "llm"); }));
  std::vector<Json> pods;
  for (int i = 0; i < 2; ++i) {
    Json p = GpuPod(absl::StrCat("w-", i), "ml", 8, {});
    p["spec"]["workloadRef"] = {
        {"name", "llm"}, {"podGroup", "workers"}, {"podGroupReplicaKey", "0"}};
    pods.push_back(p);
  }
  d.PlaceAndBind(pods);
  EXPECT_EQ(GangMembers(d.state(), "ml/workload:llm/workers/0"), 2);
  // The basic (non-gang) group: an ordinary pod, bound on its own.
  Json driver = GpuPod("driver", "ml", 1, {});
  driver["spec"]["workloadRef"] = {{"name", "llm"}, {"podGroup", "driver"}};
  d.PlaceAndBind({driver});
  EXPECT_EQ(api.bindings().size(), 3u);
}

// An object that stops parsing is dropped rather than kept with stale values, and a version the
// cluster stops serving is discovered again.
TEST(GroupConventionsE2E, UnreadableObjectsAreDroppedNotKeptStale) {
  FakeApiServer api;
  api.ServeResource("scheduling.x-k8s.io", "v1alpha1", "podgroups");
  ConventionDaemon d(api);
  api.PutObject(
      "scheduling.x-k8s.io", "v1alpha1", "podgroups",
      Json::parse(R"({"metadata": {"name": "g", "namespace": "ml"}, "spec": {"minMember": 2}})"));
  ASSERT_TRUE(
      api.WaitFor([&] { return Found(d.watch(), GroupKind::kPluginsPodGroup, "ml", "g"); }));
  api.PutObject("scheduling.x-k8s.io", "v1alpha1", "podgroups",
                Json::parse(R"({"metadata": {"name": "g", "namespace": "ml"},
                                "spec": {"minMember": "two"}})"));
  EXPECT_TRUE(
      api.WaitFor([&] { return !Found(d.watch(), GroupKind::kPluginsPodGroup, "ml", "g"); }));
}

TEST(GroupConventionsE2E, JobSetPodsBecomeOneGang) {
  FakeApiServer api;
  api.ServeResource("jobset.x-k8s.io", "v1alpha2", "jobsets");
  ConventionDaemon d(api);
  api.PutObject("jobset.x-k8s.io", "v1alpha2", "jobsets", Json::parse(R"({
    "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
    "metadata": {"name": "llama", "namespace": "ml"},
    "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {
      "parallelism": 2, "completions": 2, "completionMode": "Indexed", "template": {"spec": {
        "containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}}]}})"));
  ASSERT_TRUE(api.WaitFor([&] { return Found(d.watch(), GroupKind::kJobSet, "ml", "llama"); }));
  std::vector<Json> pods;
  for (int job = 0; job < 2; ++job) {
    for (int c = 0; c < 2; ++c) {
      pods.push_back(GpuPod(absl::StrCat("llama-workers-", job, "-", c, "-x"), "ml", 8,
                            {{"jobset.sigs.k8s.io/jobset-name", "llama"},
                             {"jobset.sigs.k8s.io/replicatedjob-name", "workers"},
                             {"jobset.sigs.k8s.io/job-index", std::to_string(job)},
                             {"batch.kubernetes.io/job-completion-index", std::to_string(c)}}));
    }
  }
  d.PlaceAndBind(pods);
  EXPECT_EQ(GangMembers(d.state(), "ml/jobset:llama"), 4);
}

TEST(GroupConventionsE2E, LeaderWorkerSetGroupBecomesOneGang) {
  FakeApiServer api;
  api.ServeResource("leaderworkerset.x-k8s.io", "v1", "leaderworkersets");
  ConventionDaemon d(api);
  api.PutObject("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", Json::parse(R"({
    "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
    "metadata": {"name": "vllm", "namespace": "serve"},
    "spec": {"replicas": 1, "startupPolicy": "LeaderCreated", "leaderWorkerTemplate": {"size": 3,
      "workerTemplate": {"spec": {"containers": [{"name": "vllm",
        "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}})"));
  ASSERT_TRUE(
      api.WaitFor([&] { return Found(d.watch(), GroupKind::kLeaderWorkerSet, "serve", "vllm"); }));
  std::vector<Json> pods;
  for (int w = 0; w < 3; ++w) {
    pods.push_back(GpuPod(w == 0 ? "vllm-0" : absl::StrCat("vllm-0-", w), "serve", 8,
                          {{"leaderworkerset.sigs.k8s.io/name", "vllm"},
                           {"leaderworkerset.sigs.k8s.io/group-index", "0"},
                           {"leaderworkerset.sigs.k8s.io/worker-index", std::to_string(w)}},
                          {{"leaderworkerset.sigs.k8s.io/size", "3"}}));
  }
  d.PlaceAndBind(pods);
  EXPECT_EQ(GangMembers(d.state(), "serve/lws:vllm/0"), 3);
}

TEST(GroupConventionsE2E, PyTorchJobPodsBecomeOneGang) {
  FakeApiServer api;
  api.ServeResource("kubeflow.org", "v1", "pytorchjobs");
  ConventionDaemon d(api);
  api.PutObject("kubeflow.org", "v1", "pytorchjobs", Json::parse(R"({
    "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
    "metadata": {"name": "bert", "namespace": "ml"},
    "spec": {"pytorchReplicaSpecs": {
      "Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "pytorch",
        "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}},
      "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "pytorch",
        "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}}}}})"));
  ASSERT_TRUE(api.WaitFor([&] { return Found(d.watch(), GroupKind::kPyTorchJob, "ml", "bert"); }));
  std::vector<Json> pods;
  for (auto [type, index] :
       {std::pair{"master", 0}, std::pair{"worker", 0}, std::pair{"worker", 1}}) {
    Json p = GpuPod(absl::StrCat("bert-", type, "-", index), "ml", 4,
                    {{"training.kubeflow.org/job-name", "bert"},
                     {"training.kubeflow.org/operator-name", "pytorchjob-controller"},
                     {"training.kubeflow.org/replica-type", type},
                     {"training.kubeflow.org/replica-index", std::to_string(index)}});
    p["metadata"]["ownerReferences"] = Json::parse(R"([{"apiVersion": "kubeflow.org/v1",
      "kind": "PyTorchJob", "name": "bert", "uid": "b", "controller": true}])");
    pods.push_back(p);
  }
  d.PlaceAndBind(pods);
  EXPECT_EQ(GangMembers(d.state(), "ml/pytorchjob:bert"), 3);
}

TEST(GroupConventionsE2E, WatchFollowsChangesAndDeletes) {
  FakeApiServer api;
  api.ServeResource("scheduling.x-k8s.io", "v1alpha1", "podgroups");
  ConventionDaemon d(api);
  Json pg =
      Json::parse(R"({"metadata": {"name": "g", "namespace": "ml"}, "spec": {"minMember": 2}})");
  api.PutObject("scheduling.x-k8s.io", "v1alpha1", "podgroups", pg);
  ASSERT_TRUE(
      api.WaitFor([&] { return Found(d.watch(), GroupKind::kPluginsPodGroup, "ml", "g"); }));
  pg["spec"]["minMember"] = 5;
  api.PutObject("scheduling.x-k8s.io", "v1alpha1", "podgroups", pg);
  ASSERT_TRUE(api.WaitFor([&] {
    return d.watch().Find(GroupKind::kPluginsPodGroup, "ml", "g").object.min_count == 5;
  }));
  api.DeleteObject("scheduling.x-k8s.io", "v1alpha1", "podgroups", "ml", "g");
  ASSERT_TRUE(
      api.WaitFor([&] { return !Found(d.watch(), GroupKind::kPluginsPodGroup, "ml", "g"); }));
  // After a compaction the watch relists and still sees new objects.
  api.Compact();
  api.PutObject(
      "scheduling.x-k8s.io", "v1alpha1", "podgroups",
      Json::parse(R"({"metadata": {"name": "h", "namespace": "ml"}, "spec": {"minMember": 2}})"));
  EXPECT_TRUE(
      api.WaitFor([&] { return Found(d.watch(), GroupKind::kPluginsPodGroup, "ml", "h"); }));
}

// The API server ends each watch after the client's timeoutSeconds (300 here: every 100 ms at
// this scale): the watch resumes from the last resourceVersion it saw, with no relist, and sees
// every change made across the ends.
TEST(GroupConventionsE2E, WatchesTheApiServerEndsResumeWithoutARelist) {
  FakeApiServer api;
  api.SetWatchTimeouts(/*time_scale=*/3000);
  api.ServeResource("scheduling.x-k8s.io", "v1alpha1", "podgroups");
  ConventionDaemon d(api);
  const std::string kind = "scheduling.x-k8s.io/v1alpha1/podgroups";
  const int lists = api.lists(kind), watches = api.watches(kind);
  // PodGroup i asks for i + 2 members; each is deleted four later, so pg-36..pg-39 stay.
  for (int i = 0; i < 40; ++i) {
    api.PutObject("scheduling.x-k8s.io", "v1alpha1", "podgroups",
                  {{"metadata", {{"name", absl::StrCat("pg-", i)}, {"namespace", "ml"}}},
                   {"spec", {{"minMember", i + 2}}}});
    if (i >= 4) {
      api.DeleteObject("scheduling.x-k8s.io", "v1alpha1", "podgroups", "ml",
                       absl::StrCat("pg-", i - 4));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  for (int i = 36; i < 40; ++i) {
    EXPECT_TRUE(api.WaitFor([&] {
      return d.watch()
                 .Find(GroupKind::kPluginsPodGroup, "ml", absl::StrCat("pg-", i))
                 .object.min_count == i + 2;
    })) << "pg-"
        << i;
  }
  EXPECT_FALSE(Found(d.watch(), GroupKind::kPluginsPodGroup, "ml", "pg-35"));
  EXPECT_GE(api.timed_out_watches(), 5);
  EXPECT_GE(api.watches(kind), watches + 5);
  EXPECT_EQ(api.lists(kind), lists);
}

TEST(GroupConventionsE2E, ForbiddenKindIsAClearErrorAndConflictsPostOneWarning) {
  FakeApiServer api;
  api.ServeResource("jobset.x-k8s.io", "v1alpha2", "jobsets");
  api.ForbidResource("jobset.x-k8s.io", "jobsets", true);
  ConventionDaemon d(api);
  Json p = GpuPod(
      "js-0", "ml", 8,
      {{"jobset.sigs.k8s.io/jobset-name", "js"}, {"jobset.sigs.k8s.io/replicatedjob-name", "w"}});
  ExtenderFilterResult r = d.Filter(p);
  EXPECT_NE(r.error.find("HTTP 403"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("deploy/rbac.yaml"), std::string::npos) << r.error;

  // Two conventions naming different gangs: an error and one Warning event, not one per retry.
  Json c = testing::MakePod(testing::GangPod("a", 2, 0, 8));
  c["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = "b";
  c["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = "2";
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(d.Filter(c).error.find("conflicting gang conventions"), std::string::npos);
  }
  int conflicts = 0;
  for (const GangNotice& n : d.notices()) {
    if (n.reason == "GangConflict") {
      ++conflicts;
      EXPECT_EQ(n.type, "Warning");
      ASSERT_EQ(n.pods.size(), 1u);
      EXPECT_EQ(n.pods[0].pod_name, "a-0");
    }
  }
  EXPECT_EQ(conflicts, 1);
}

}  // namespace
}  // namespace topogang
