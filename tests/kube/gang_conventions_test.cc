// Over 500 lines: one realistic pod and owner object per convention (as each controller writes
// them), and the precedence/conflict cases between them, kept side by side.
//
// The resolver (k8s/gang_conventions.h) on real object JSON: each pod below is shaped as its
// controller creates it, each group object as the API server returns it. Sources of the keys:
//  - PodGroup/Workload: kubernetes staging/src/k8s.io/api/scheduling/{v1beta1,v1alpha2,v1alpha1}
//  - scheduler-plugins: apis/scheduling/v1alpha1/types.go (PodGroupLabel, spec.minMember)
//  - JobSet: api/jobset/v1alpha2/jobset_types.go (jobset.sigs.k8s.io/* labels on Jobs and pods)
//  - LeaderWorkerSet: api/leaderworkerset/v1/leaderworkerset_types.go, pkg/webhooks/pod_webhook.go
//  - training-operator: pkg/apis/kubeflow.org/v1/common_types.go (training.kubeflow.org/*)
#include "k8s/gang_conventions.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>

namespace topogang {
namespace {

using K = GangResolution::Kind;

class FakeLookup : public GroupObjectLookup {
 public:
  void Add(GroupKind kind, const std::string& json) {
    auto g = ParseGroupObject(kind, Json::parse(json), "nvidia.com/gpu");
    ASSERT_TRUE(g.ok()) << g.status();
    objects_[{kind, g->Key()}] = *g;
  }
  void NotServed(GroupKind kind) { unserved_[kind] = true; }
  Result Find(GroupKind kind, const std::string& ns, const std::string& name) const override {
    Result r;
    if (unserved_.count(kind)) {
      r.state = State::kUnavailable;
      r.why = "the cluster does not serve it";
      return r;
    }
    auto it = objects_.find({kind, ns + "/" + name});
    if (it == objects_.end()) return r;
    r.state = State::kFound;
    r.object = it->second;
    return r;
  }

 private:
  std::map<std::pair<GroupKind, std::string>, GroupObject> objects_;
  std::map<GroupKind, bool> unserved_;
};

PodInfo Pod(const std::string& json) {
  auto p = ParsePod(Json::parse(json), "nvidia.com/gpu");
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : PodInfo{};
}

std::string Tier(const std::string& label) {
  if (label == "network.topology.nvidia.com/leaf") return "leaf";
  if (label == "kubernetes.io/hostname") return "node";
  return "";
}

GangResolution Resolve(const PodInfo& pod, const FakeLookup& l) {
  return ResolveGang(pod, &l, Tier);
}

// --- scheduler-plugins coscheduling -----------------------------------------------------------

constexpr char kPluginsPodGroup[] = R"({
  "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
  "metadata": {"name": "nccl-test", "namespace": "ml", "resourceVersion": "81234"},
  "spec": {"minMember": 4, "scheduleTimeoutSeconds": 60},
  "status": {"phase": "Pending"}})";

constexpr char kPluginsPod[] = R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "nccl-test-2", "namespace": "ml", "uid": "u-nccl-2",
    "labels": {"scheduling.x-k8s.io/pod-group": "nccl-test", "app": "nccl"}},
  "spec": {"schedulerName": "topogang-scheduler", "containers": [{"name": "nccl",
    "image": "nvcr.io/nvidia/pytorch:25.01-py3",
    "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
  "status": {"phase": "Pending"}})";

TEST(GangConventions, SchedulerPluginsPodGroupSizesTheGang) {
  FakeLookup l;
  l.Add(GroupKind::kPluginsPodGroup, kPluginsPodGroup);
  GangResolution r = Resolve(Pod(kPluginsPod), l);
  ASSERT_EQ(r.kind, K::kGang) << r.message;
  EXPECT_EQ(r.gang.id, "ml/nccl-test");
  EXPECT_EQ(r.gang.size, 4);
  EXPECT_EQ(r.gang.source, "scheduling.x-k8s.io/pod-group");
  EXPECT_FALSE(r.gang.upstream);
}

TEST(GangConventions, MissingPodGroupWaitsInsteadOfGuessing) {
  FakeLookup l;
  GangResolution r = Resolve(Pod(kPluginsPod), l);
  ASSERT_EQ(r.kind, K::kWaiting);
  EXPECT_NE(r.message.find("waiting for PodGroup (scheduling.x-k8s.io) ml/nccl-test"),
            std::string::npos)
      << r.message;
}

TEST(GangConventions, UnservedPodGroupKindIsAnError) {
  FakeLookup l;
  l.NotServed(GroupKind::kPluginsPodGroup);
  GangResolution r = Resolve(Pod(kPluginsPod), l);
  ASSERT_EQ(r.kind, K::kError);
  EXPECT_NE(r.message.find("does not serve"), std::string::npos) << r.message;
}

TEST(GangConventions, LegacySchedulerPluginsLabel) {
  FakeLookup l;
  l.Add(GroupKind::kLegacyPluginsPodGroup, R"({"metadata": {"name": "old", "namespace": "ml"},
    "spec": {"minMember": 2}})");
  GangResolution r = Resolve(Pod(R"({"metadata": {"name": "p", "namespace": "ml",
    "labels": {"pod-group.scheduling.sigs.k8s.io": "old"}}, "spec": {"containers": [
    {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})"),
                             l);
  ASSERT_EQ(r.kind, K::kGang) << r.message;
  EXPECT_EQ(r.gang.size, 2);
  EXPECT_EQ(r.gang.id, "ml/old");
}

TEST(GangConventions, MinMemberZeroIsNoGang) {
  FakeLookup l;
  l.Add(GroupKind::kPluginsPodGroup,
        R"({"metadata": {"name": "nccl-test", "namespace": "ml"}, "spec": {}})");
  EXPECT_EQ(Resolve(Pod(kPluginsPod), l).kind, K::kNone);
}

// --- upstream PodGroup (KEP-4671) ----------------------------------------------------------------

// v1beta1 (1.37), as the Job controller or JobSet materializes it from a Workload template.
constexpr char kUpstreamPodGroup[] = R"({
  "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
  "metadata": {"name": "train-workers-0", "namespace": "ml", "uid": "pg-uid-1",
    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train",
      "uid": "job-uid", "controller": true}]},
  "spec": {
    "workloadRef": {"workloadName": "train", "templateName": "workers"},
    "schedulingPolicy": {"gang": {"minCount": 16}},
    "schedulingConstraints": {"topology": [{"key": "network.topology.nvidia.com/leaf"}]},
    "disruptionMode": {"single": {}}, "priority": 0},
  "status": {"conditions": []}})";

constexpr char kUpstreamPod[] = R"({
  "metadata": {"name": "train-0-x7k2p", "namespace": "ml", "uid": "u-train-0",
    "labels": {"batch.kubernetes.io/job-name": "train",
      "batch.kubernetes.io/job-completion-index": "0"},
    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train",
      "uid": "job-uid", "controller": true, "blockOwnerDeletion": true}]},
  "spec": {"schedulingGroup": {"podGroupName": "train-workers-0"},
    "containers": [{"name": "trainer", "resources": {"requests": {"nvidia.com/gpu": "8"},
      "limits": {"nvidia.com/gpu": "8"}}}]}})";

TEST(GangConventions, UpstreamPodGroupGivesSizeTierAndPermitBarrier) {
  FakeLookup l;
  l.Add(GroupKind::kPodGroup, kUpstreamPodGroup);
  PodInfo pod = Pod(kUpstreamPod);
  EXPECT_EQ(pod.scheduling_group, "train-workers-0");
  EXPECT_EQ(pod.controller.kind, "Job");
  GangResolution r = Resolve(pod, l);
  ASSERT_EQ(r.kind, K::kGang) << r.message;
  EXPECT_EQ(r.gang.id, "ml/train-workers-0");
  EXPECT_EQ(r.gang.size, 16);
  EXPECT_EQ(r.gang.required_tier, "leaf");
  EXPECT_TRUE(r.gang.upstream);
}

TEST(GangConventions, UpstreamV1alpha2TopologyConstraintsSpelling) {
  FakeLookup l;
  l.Add(GroupKind::kPodGroup, R"({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
    "metadata": {"name": "train-workers-0", "namespace": "ml"},
    "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
      "schedulingConstraints": {"topologyConstraints": [{"topologyKey": "kubernetes.io/hostname"}]}}})");
  GangResolution r = Resolve(Pod(kUpstreamPod), l);
  ASSERT_EQ(r.kind, K::kGang) << r.message;
  EXPECT_EQ(r.gang.size, 2);
  EXPECT_EQ(r.gang.required_tier, "node");
}

TEST(GangConventions, UpstreamTopologyKeyWithoutATierIsAnError) {
  FakeLookup l;
  l.Add(GroupKind::kPodGroup, R"({"metadata": {"name": "train-workers-0", "namespace": "ml"},
    "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
      "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]}}})");
  GangResolution r = Resolve(Pod(kUpstreamPod), l);
  ASSERT_EQ(r.kind, K::kError);
  EXPECT_NE(r.message.find("topology.kubernetes.io/rack"), std::string::npos) << r.message;
}

TEST(GangConventions, UpstreamBasicPolicyIsNoGang) {
  FakeLookup l;
  l.Add(GroupKind::kPodGroup, R"({"metadata": {"name": "train-workers-0", "namespace": "ml"},
    "spec": {"schedulingPolicy": {"basic": {}}}})");
  EXPECT_EQ(Resolve(Pod(kUpstreamPod), l).kind, K::kNone);
}

TEST(GangConventions, Upstream135WorkloadRefPerReplicaKey) {
  FakeLookup l;
  l.Add(GroupKind::kWorkload, R"({"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
    "metadata": {"name": "lws-infer", "namespace": "ml"},
    "spec": {"controllerRef": {"apiGroup": "leaderworkerset.x-k8s.io", "kind": "LeaderWorkerSet",
      "name": "infer"}, "podGroups": [{"name": "group", "policy": {"gang": {"minCount": 4}}},
      {"name": "router", "policy": {"basic": {}}}]}})");
  PodInfo pod = Pod(R"({"metadata": {"name": "infer-1-2", "namespace": "ml"},
    "spec": {"workloadRef": {"name": "lws-infer", "podGroup": "group", "podGroupReplicaKey": "1"},
      "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}})");
  GangResolution r = Resolve(pod, l);
  ASSERT_EQ(r.kind, K::kGang) << r.message;
  EXPECT_EQ(r.gang.id, "ml/workload:lws-infer/group/1");
  EXPECT_EQ(r.gang.size, 4);
  EXPECT_TRUE(r.gang.upstream);
  pod.workload_ref.pod_group = "router";
  EXPECT_EQ(Resolve(pod, l).kind, K::kNone);
  pod.workload_ref.pod_group = "nope";
  EXPECT_EQ(Resolve(pod, l).kind, K::kError);
}

// --- JobSet
// ---------------------------------------------------------------------------------------

// A JobSet of 2 "workers" Jobs x 4 pods (8 GPUs each) plus a CPU-only "driver" Job.
constexpr char kJobSet[] = R"({
  "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
  "metadata": {"name": "llama", "namespace": "ml"},
  "spec": {"replicatedJobs": [
    {"name": "driver", "replicas": 1, "template": {"spec": {"parallelism": 1, "completions": 1,
      "template": {"spec": {"containers": [{"name": "d", "resources": {"requests": {"cpu": "2"}}}]}}}}},
    {"name": "workers", "replicas": 2, "template": {"spec": {"parallelism": 4, "completions": 4,
      "completionMode": "Indexed", "backoffLimit": 0,
      "template": {"spec": {"containers": [{"name": "w",
        "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}}]}})";

// What the JobSet controller puts on a pod (via the Job template) and the Job controller adds.
constexpr char kJobSetPod[] = R"({
  "metadata": {"name": "llama-workers-1-2-abcde", "namespace": "ml", "uid": "u-js-1-2",
    "labels": {"jobset.sigs.k8s.io/jobset-name": "llama",
      "jobset.sigs.k8s.io/jobset-uid": "js-uid",
      "jobset.sigs.k8s.io/replicatedjob-name": "workers",
      "jobset.sigs.k8s.io/replicatedjob-replicas": "2",
      "jobset.sigs.k8s.io/job-index": "1", "jobset.sigs.k8s.io/job-global-index": "2",
      "jobset.sigs.k8s.io/restart-attempt": "0",
      "batch.kubernetes.io/job-completion-index": "2",
      "batch.kubernetes.io/job-name": "llama-workers-1"},
    "annotations": {"jobset.sigs.k8s.io/jobset-name": "llama",
      "jobset.sigs.k8s.io/replicatedjob-name": "workers", "jobset.sigs.k8s.io/job-index": "1",
      "jobset.sigs.k8s.io/global-replicas": "3"},
    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "llama-workers-1",
      "uid": "j1", "controller": true}]},
  "spec": {"subdomain": "llama", "containers": [{"name": "w",
    "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}})";

TEST(GangConventions, JobSetIsOneGangOfItsGpuPods) {
  FakeLookup l;
  l.Add(GroupKind::kJobSet, kJobSet);
  GangResolution r = Resolve(Pod(kJobSetPod), l);
  ASSERT_EQ(r.kind, K::kGang) << r.message;
  EXPECT_EQ(r.gang.id, "ml/jobset:llama");
  EXPECT_EQ(r.gang.size, 8);  // 2 Jobs x 4 GPU pods; the CPU driver is no member
  EXPECT_EQ(r.gang.index, 1 * 4 + 2);
  EXPECT_EQ(r.gang.source, "jobset.sigs.k8s.io/jobset-name");
}

TEST(GangConventions, JobSetCpuPodIsNoMember) {
  FakeLookup l;
  l.Add(GroupKind::kJobSet, kJobSet);
  GangResolution r = Resolve(Pod(R"({"metadata": {"name": "llama-driver-0-0-q", "namespace": "ml",
    "labels": {"jobset.sigs.k8s.io/jobset-name": "llama",
      "jobset.sigs.k8s.io/replicatedjob-name": "driver"}},
    "spec": {"containers": [{"name": "d"}]}})"),
                             l);
  EXPECT_EQ(r.kind, K::kNone);
}

// Kubeflow Trainer v2: a TrainJob runs as a JobSet whose "node" job depends on CPU initializers;
// a gang of everything would wait forever, so each ReplicatedJob is its own gang.
TEST(GangConventions, TrainerV2JobSetWithDependsOnIsOneGangPerReplicatedJob) {
  FakeLookup l;
  l.Add(GroupKind::kJobSet, R"({"metadata": {"name": "tj", "namespace": "ml",
    "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"},
    "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
      "name": "tj", "uid": "t", "controller": true}]},
    "spec": {"replicatedJobs": [
      {"name": "dataset-initializer", "template": {"spec": {"template": {"spec": {
        "containers": [{"name": "dataset-initializer"}]}}}}},
      {"name": "node", "dependsOn": [{"name": "dataset-initializer", "status": "Complete"}],
       "template": {"spec": {"parallelism": 4, "completions": 4, "template": {"spec": {
        "containers": [{"name": "node", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}}]}})");
  GangResolution r = Resolve(Pod(R"({"metadata": {"name": "tj-node-0-1-x", "namespace": "ml",
    "labels": {"jobset.sigs.k8s.io/jobset-name": "tj",
      "jobset.sigs.k8s.io/replicatedjob-name": "node", "jobset.sigs.k8s.io/job-index": "0",
      "batch.kubernetes.io/job-completion-index": "1"}},
    "spec": {"containers": [{"name": "node", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}})"),
                             l);
  ASSERT_EQ(r.kind, K::kGang) << r.message;
  EXPECT_EQ(r.gang.id, "ml/jobset:tj/node");
  EXPECT_EQ(r.gang.size, 4);
  EXPECT_EQ(r.gang.index, 1);
}

TEST(GangConventions, JobSetNotArrivedWaits) {
  FakeLookup l;
  GangResolution r = Resolve(Pod(kJobSetPod), l);
  ASSERT_EQ(r.kind, K::kWaiting);
  EXPECT_NE(r.message.find("JobSet ml/llama"), std::string::npos) << r.message;
}

// --- LeaderWorkerSet
// ------------------------------------------------------------------------------

std::string Lws(const std::string& startup) {
  return R"({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
    "metadata": {"name": "vllm", "namespace": "serve"},
    "spec": {"replicas": 2, "startupPolicy": ")" +
         startup + R"(", "leaderWorkerTemplate": {"size": 4,
      "restartPolicy": "RecreateGroupOnPodRestart",
      "workerTemplate": {"spec": {"containers": [{"name": "vllm",
        "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}})";
}

// The leader of group 1 and worker 2 of group 1, labels as the LWS controller and its pod
// webhook write them.
constexpr char kLwsLeader[] = R"({"metadata": {"name": "vllm-1", "namespace": "serve",
  "labels": {"leaderworkerset.sigs.k8s.io/name": "vllm", "leaderworkerset.sigs.k8s.io/group-index": "1",
    "leaderworkerset.sigs.k8s.io/worker-index": "0",
    "leaderworkerset.sigs.k8s.io/group-key": "9a1f", "leaderworkerset.sigs.k8s.io/template-revision-hash": "5d8"},
  "annotations": {"leaderworkerset.sigs.k8s.io/size": "4"},
  "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "vllm",
    "uid": "s", "controller": true}]},
  "spec": {"containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}})";
constexpr char kLwsWorker[] = R"({"metadata": {"name": "vllm-1-2", "namespace": "serve",
  "labels": {"leaderworkerset.sigs.k8s.io/name": "vllm", "leaderworkerset.sigs.k8s.io/group-index": "1",
    "leaderworkerset.sigs.k8s.io/worker-index": "2", "leaderworkerset.sigs.k8s.io/group-key": "9a1f"},
  "annotations": {"leaderworkerset.sigs.k8s.io/size": "4",
    "leaderworkerset.sigs.k8s.io/leader-name": "vllm-1"},
  "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "vllm-1",
    "uid": "s1", "controller": true}]},
  "spec": {"containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}})";

TEST(GangConventions, LeaderWorkerSetGroupIsOneGang) {
  FakeLookup l;
  l.Add(GroupKind::kLeaderWorkerSet, Lws("LeaderCreated"));
  GangResolution leader = Resolve(Pod(kLwsLeader), l);
  GangResolution worker = Resolve(Pod(kLwsWorker), l);
  ASSERT_EQ(leader.kind, K::kGang) << leader.message;
  ASSERT_EQ(worker.kind, K::kGang) << worker.message;
  EXPECT_EQ(leader.gang.id, "serve/lws:vllm/1");
  EXPECT_EQ(worker.gang.id, leader.gang.id);
  EXPECT_EQ(worker.gang.size, 4);
  EXPECT_EQ(leader.gang.index, 0);
  EXPECT_EQ(worker.gang.index, 2);
}

TEST(GangConventions, LeaderReadyLeaderGoesAloneWorkersFormTheGang) {
  FakeLookup l;
  l.Add(GroupKind::kLeaderWorkerSet, Lws("LeaderReady"));
  EXPECT_EQ(Resolve(Pod(kLwsLeader), l).kind, K::kNone);
  GangResolution worker = Resolve(Pod(kLwsWorker), l);
  ASSERT_EQ(worker.kind, K::kGang) << worker.message;
  EXPECT_EQ(worker.gang.size, 3);
  EXPECT_EQ(worker.gang.index, 1);
}

// --- PyTorchJob
// -----------------------------------------------------------------------------------

std::string PyTorchJob(bool elastic) {
  return std::string(R"({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
    "metadata": {"name": "bert", "namespace": "ml"},
    "spec": {)") +
         (elastic ? R"("elasticPolicy": {"minReplicas": 1, "maxReplicas": 4},)" : "") +
         R"("pytorchReplicaSpecs": {
      "Worker": {"replicas": 3, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [
        {"name": "pytorch", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}},
      "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [
        {"name": "pytorch", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}}})";
}

// A worker as training-operator v1 creates it.
constexpr char kPyTorchWorker[] = R"({"metadata": {"name": "bert-worker-1", "namespace": "ml",
  "labels": {"training.kubeflow.org/job-name": "bert",
    "training.kubeflow.org/operator-name": "pytorchjob-controller",
    "training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "1"},
  "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "bert",
    "uid": "b", "controller": true, "blockOwnerDeletion": true}]},
  "spec": {"containers": [{"name": "pytorch", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}})";

TEST(GangConventions, PyTorchJobIsOneGangMasterFirst) {
  FakeLookup l;
  l.Add(GroupKind::kPyTorchJob, PyTorchJob(false));
  GangResolution r = Resolve(Pod(kPyTorchWorker), l);
  ASSERT_EQ(r.kind, K::kGang) << r.message;
  EXPECT_EQ(r.gang.id, "ml/pytorchjob:bert");
  EXPECT_EQ(r.gang.size, 4);
  EXPECT_EQ(r.gang.index, 1 + 1);
}

// elasticPolicy.minReplicas workers plus the Master: an elastic gang of 2..4 (#13). Without a
// minimum it says nothing about when the job can start: scheduled per pod.
TEST(GangConventions, ElasticPyTorchJobIsAnElasticGangOtherKubeflowKindsAreNoGang) {
  FakeLookup l;
  l.Add(GroupKind::kPyTorchJob, PyTorchJob(true));
  GangResolution r = Resolve(Pod(kPyTorchWorker), l);
  ASSERT_EQ(r.kind, K::kGang) << r.message;
  EXPECT_EQ(r.gang.size, 4);
  EXPECT_EQ(r.gang.min_members, 2);
  std::string no_min = PyTorchJob(true);
  no_min.replace(no_min.find(R"("minReplicas": 1, )"), 18, "");
  FakeLookup m;
  m.Add(GroupKind::kPyTorchJob, no_min);
  EXPECT_EQ(Resolve(Pod(kPyTorchWorker), m).kind, K::kNone);
  GangResolution tf = Resolve(Pod(R"({"metadata": {"name": "t-worker-0", "namespace": "ml",
    "labels": {"training.kubeflow.org/job-name": "t",
      "training.kubeflow.org/operator-name": "tfjob-controller"}},
    "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})"),
                              l);
  EXPECT_EQ(tf.kind, K::kNone);
}

// --- Precedence and conflicts
// ---------------------------------------------------------------------

// training-operator with gang scheduling on labels its pods for scheduler-plugins too: the
// PodGroup it creates is the authority, the PyTorchJob is not even looked up.
TEST(GangConventions, ExplicitGroupOverridesTheControllerConvention) {
  FakeLookup l;
  l.Add(GroupKind::kPluginsPodGroup, R"({"metadata": {"name": "bert", "namespace": "ml"},
    "spec": {"minMember": 4}})");
  PodInfo pod = Pod(kPyTorchWorker);
  pod.labels["scheduling.x-k8s.io/pod-group"] = "bert";
  GangResolution r = Resolve(pod, l);
  ASSERT_EQ(r.kind, K::kGang) << r.message;
  EXPECT_EQ(r.gang.id, "ml/bert");
  EXPECT_EQ(r.gang.source, "scheduling.x-k8s.io/pod-group");
}

TEST(GangConventions, AgreeingExplicitConventionsTopogangWins) {
  FakeLookup l;
  l.Add(GroupKind::kPluginsPodGroup, kPluginsPodGroup);
  PodInfo pod = Pod(kPluginsPod);
  pod.labels["topogang.io/gang"] = "nccl-test";
  pod.labels["topogang.io/gang-size"] = "4";
  pod.labels["topogang.io/required-tier"] = "leaf";
  GangResolution r = Resolve(pod, l);
  ASSERT_EQ(r.kind, K::kGang) << r.message;
  EXPECT_EQ(r.gang.source, "topogang.io/gang");
  EXPECT_EQ(r.gang.required_tier, "leaf");
}

TEST(GangConventions, DisagreeingExplicitConventionsAreAConflict) {
  FakeLookup l;
  l.Add(GroupKind::kPluginsPodGroup, kPluginsPodGroup);
  PodInfo pod = Pod(kPluginsPod);
  pod.labels["topogang.io/gang"] = "nccl-test";
  pod.labels["topogang.io/gang-size"] = "8";
  GangResolution r = Resolve(pod, l);
  ASSERT_EQ(r.kind, K::kError);
  EXPECT_NE(r.message.find("conflicting gang conventions: topogang.io/gang names gang "
                           "ml/nccl-test of 8 pods, but scheduling.x-k8s.io/pod-group names gang "
                           "ml/nccl-test of 4 pods"),
            std::string::npos)
      << r.message;
}

TEST(GangConventions, UpstreamAndSchedulerPluginsNamingDifferentGroupsConflict) {
  FakeLookup l;
  l.Add(GroupKind::kPodGroup, kUpstreamPodGroup);
  l.Add(GroupKind::kPluginsPodGroup, kPluginsPodGroup);
  PodInfo pod = Pod(kUpstreamPod);
  pod.namespace_ = "ml";
  pod.labels["scheduling.x-k8s.io/pod-group"] = "nccl-test";
  EXPECT_EQ(Resolve(pod, l).kind, K::kError);
}

TEST(GangConventions, TierKeyDisagreeingWithPodGroupTopologyIsAnError) {
  FakeLookup l;
  l.Add(GroupKind::kPodGroup, kUpstreamPodGroup);
  PodInfo pod = Pod(kUpstreamPod);
  pod.labels["topogang.io/required-tier"] = "spine";
  GangResolution r = Resolve(pod, l);
  ASSERT_EQ(r.kind, K::kError);
  EXPECT_NE(r.message.find("disagrees"), std::string::npos) << r.message;
}

TEST(GangConventions, TopogangAndKueueLabelsStillWorkWithoutALookup) {
  GangResolution r = ResolveGang(Pod(R"({"metadata": {"name": "p", "namespace": "a",
    "labels": {"kueue.x-k8s.io/pod-group-name": "g"},
    "annotations": {"kueue.x-k8s.io/pod-group-total-count": "3"}},
    "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})"),
                                 nullptr, Tier);
  ASSERT_EQ(r.kind, K::kGang) << r.message;
  EXPECT_EQ(r.gang.id, "a/g");
  EXPECT_EQ(r.gang.size, 3);
  // Standalone mode cannot look objects up: a clear error, not a wait.
  EXPECT_EQ(ResolveGang(Pod(kPluginsPod), nullptr, Tier).kind, K::kError);
}

TEST(GangConventions, HostileValuesAreErrorsNotCrashes) {
  FakeLookup l;
  l.Add(GroupKind::kJobSet, kJobSet);
  PodInfo pod = Pod(kJobSetPod);
  pod.labels["jobset.sigs.k8s.io/job-index"] = "-1";
  EXPECT_EQ(Resolve(pod, l).kind, K::kError);
  pod.labels["jobset.sigs.k8s.io/job-index"] = "99999999999999";
  EXPECT_EQ(Resolve(pod, l).kind, K::kError);
  pod = Pod(kJobSetPod);
  pod.labels["jobset.sigs.k8s.io/replicatedjob-name"] = "nope";
  EXPECT_EQ(Resolve(pod, l).kind, K::kError);
  for (const char* bad :
       {R"({"metadata": {"name": "x"}, "spec": {"minMember": 99999999}})",
        R"({"metadata": {"name": "x"}, "spec": {"minMember": "4"}})",
        R"({"metadata": {"name": "x"}, "spec": []})", R"([1, 2])", R"({"metadata": {}})"}) {
    EXPECT_FALSE(
        ParseGroupObject(GroupKind::kPluginsPodGroup, Json::parse(bad), "nvidia.com/gpu").ok())
        << bad;
  }
  EXPECT_FALSE(ParseGroupObject(GroupKind::kJobSet,
                                Json::parse(R"({"metadata": {"name": "x"}, "spec": {
                                  "replicatedJobs": [{"name": "a", "replicas": 100000,
                                  "template": {"spec": {"parallelism": 100000}}}]}})"),
                                "nvidia.com/gpu")
                   .ok());
  auto lws = Pod(kLwsWorker);
  lws.annotations["leaderworkerset.sigs.k8s.io/size"] = "abc";
  l.Add(GroupKind::kLeaderWorkerSet, Lws("LeaderCreated"));
  EXPECT_EQ(Resolve(lws, l).kind, K::kError);
}

}  // namespace
}  // namespace topogang
