// Unit tests for the emulator's pure parts: quantities, Pod/Node parsing, the default filters,
// the in-tree scores, the queueing hints and the scheduler cache. Objects are hand-made JSON in
// the API's shape.
#include <gtest/gtest.h>

#include "tests/kubesched/api_objects.h"
#include "tests/kubesched/node_filters.h"
#include "tests/kubesched/node_scores.h"
#include "tests/kubesched/quantity.h"
#include "tests/kubesched/queueing_hints.h"
#include "tests/kubesched/scheduler_cache.h"

namespace topogang::kubesched {
namespace {

PodPtr MakePod(const std::string& name, const std::string& spec_json = "{}",
               const std::string& uid = "") {
  Json pod = {{"metadata", {{"name", name}, {"namespace", "default"}}},
              {"spec", Json::parse(spec_json)}};
  if (!uid.empty()) pod["metadata"]["uid"] = uid;
  if (!pod["spec"].contains("containers")) pod["spec"]["containers"] = Json::array();
  auto p = ParsePod(pod);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

PodPtr GpuPod(const std::string& name, int gpus, const std::string& extra_spec = "{}") {
  Json spec = Json::parse(extra_spec);
  spec["containers"] =
      Json::array({{{"name", "main"},
                    {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}});
  return MakePod(name, spec.dump());
}

NodePtr MakeNode(const std::string& name, const std::string& labels_json = "{}",
                 const std::string& spec_json = "{}", int gpus = 8) {
  Json node = {{"metadata", {{"name", name}, {"labels", Json::parse(labels_json)}}},
               {"spec", Json::parse(spec_json)},
               {"status",
                {{"allocatable",
                  {{"cpu", "191450m"},
                   {"memory", "2063554392Ki"},
                   {"pods", "110"},
                   {"nvidia.com/gpu", std::to_string(gpus)}}}}}};
  auto n = ParseNode(node, 110);
  EXPECT_TRUE(n.ok()) << n.status();
  return *n;
}

NodeState StateOf(NodePtr node) {
  NodeState s;
  s.node = std::move(node);
  return s;
}

TEST(Quantity, ParsesTheApiGrammar) {
  EXPECT_EQ(*ParseQuantityMilli("191450m"), 191450);
  EXPECT_EQ(*ParseQuantityMilli("2"), 2000);
  EXPECT_EQ(*ParseQuantityMilli("0.5"), 500);
  EXPECT_EQ(*ParseQuantityMilli("1.0005"), 1001);  // rounded up
  EXPECT_EQ(*ParseQuantityValue("2063554392Ki"), 2063554392LL * 1024);
  EXPECT_EQ(*ParseQuantityValue("1Gi"), 1LL << 30);
  EXPECT_EQ(*ParseQuantityValue("1.5Gi"), 3LL << 29);
  EXPECT_EQ(*ParseQuantityValue("1k"), 1000);
  EXPECT_EQ(*ParseQuantityValue("1e3"), 1000);
  EXPECT_EQ(*ParseQuantityValue("1E"), 1000000000000000000LL);
  EXPECT_EQ(*ParseQuantityValue("100m"), 1);  // Value() rounds up
  EXPECT_EQ(*ParseQuantityValue("8"), 8);
  EXPECT_FALSE(ParseQuantityValue("").ok());
  EXPECT_FALSE(ParseQuantityValue("8 GPUs").ok());
  EXPECT_FALSE(ParseQuantityValue("Gi").ok());
}

TEST(ParsePod, RequestsFollowContainersInitContainersAndLimits) {
  // Two containers (one with only a GPU limit: the API server copies limits to requests), an
  // init container bigger than both, a sidecar, and overhead.
  PodPtr pod = MakePod("p", R"({
    "containers": [
      {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
      {"name": "b", "resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "500m"}}}],
    "initContainers": [
      {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
      {"name": "init", "resources": {"requests": {"cpu": "4", "nvidia.com/gpu": "1"}}}],
    "overhead": {"cpu": "50m"},
    "priority": 7, "schedulerName": "topogang-scheduler",
    "nodeSelector": {"zone": "a"}})");
  EXPECT_EQ(pod->requests.milli_cpu, 4100 + 50);  // max(1+0.5+0.1, 4+0.1) + overhead
  EXPECT_EQ(pod->requests.memory, 1LL << 30);
  EXPECT_EQ(pod->requests.Scalar("nvidia.com/gpu"), 2);  // max(2, 1)
  EXPECT_EQ(pod->priority, 7);
  EXPECT_EQ(pod->scheduler_name, "topogang-scheduler");
  EXPECT_EQ(pod->node_selector.at("zone"), "a");
  EXPECT_EQ(pod->container_resource_names.count("nvidia.com/gpu"), 1u);
  EXPECT_EQ(pod->uid, "default/p");  // hand-made pods without a uid still get a stable one

  PodPtr plain = MakePod("q");
  EXPECT_EQ(plain->scheduler_name, "default-scheduler");
  EXPECT_TRUE(plain->requests.IsZero());
  EXPECT_EQ(plain->nonzero_milli_cpu, 0);  // no containers at all
}

TEST(ParseNode, ZoneKeyAllocatableAndDefaultPods) {
  Json n = {
      {"metadata",
       {{"name", "n1"},
        {"labels",
         {{"topology.kubernetes.io/zone", "z1"}, {"topology.kubernetes.io/region", "r"}}}}},
      {"spec", {{"unschedulable", true}, {"taints", {{{"key", "k"}, {"effect", "NoSchedule"}}}}}},
      {"status", {{"allocatable", {{"cpu", "4"}, {"nvidia.com/gpu", "8"}}}}}};
  NodePtr node = *ParseNode(n, 42);
  EXPECT_EQ(node->zone_key, std::string("r:\0:z1", 6));
  EXPECT_TRUE(node->unschedulable);
  ASSERT_EQ(node->taints.size(), 1u);
  EXPECT_EQ(node->allocatable.milli_cpu, 4000);
  EXPECT_EQ(node->allocatable.allowed_pods, 42);  // no "pods" entry: the stand-in
  EXPECT_EQ(node->allocatable.Scalar("nvidia.com/gpu"), 8);
}

TEST(NodeUnschedulable, RejectsCordonedNodesUnlessTolerated) {
  NodePtr cordoned = MakeNode("n", "{}", R"({"unschedulable": true})");
  Status s = FilterNodeUnschedulable(*MakePod("p"), *cordoned);
  EXPECT_EQ(s.code, Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.reasons.at(0), "node(s) were unschedulable");
  PodPtr tolerant = MakePod(
      "t", R"({"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                "effect": "NoSchedule"}]})");
  EXPECT_TRUE(FilterNodeUnschedulable(*tolerant, *cordoned).ok());
  EXPECT_TRUE(FilterNodeUnschedulable(*MakePod("p"), *MakeNode("m")).ok());
}

TEST(TaintToleration, OperatorsKeysAndEffects) {
  NodePtr gpu = MakeNode("n", "{}",
                         R"({"taints": [{"key": "nvidia.com/gpu", "value": "present",
                                         "effect": "NoSchedule"}]})");
  Status s = FilterTaintToleration(*MakePod("p"), *gpu);
  EXPECT_EQ(s.code, Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.reasons.at(0), "node(s) had untolerated taint {nvidia.com/gpu: present}");
  auto tolerates = [&](const std::string& tolerations) {
    return FilterTaintToleration(*MakePod("p", R"({"tolerations": )" + tolerations + "}"), *gpu)
        .ok();
  };
  EXPECT_TRUE(tolerates(R"([{"key": "nvidia.com/gpu", "operator": "Exists"}])"));
  EXPECT_TRUE(tolerates(R"([{"key": "nvidia.com/gpu", "value": "present"}])"));  // Equal
  EXPECT_TRUE(tolerates(R"([{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
                             "effect": "NoSchedule"}])"));
  EXPECT_TRUE(tolerates(R"([{"operator": "Exists"}])"));  // empty key + Exists: everything
  EXPECT_FALSE(tolerates(R"([{"key": "nvidia.com/gpu", "value": "absent"}])"));
  EXPECT_FALSE(tolerates(R"([{"key": "nvidia.com/gpu", "operator": "Exists",
                              "effect": "NoExecute"}])"));
  EXPECT_FALSE(tolerates(R"([{"key": "other", "operator": "Exists"}])"));
  // PreferNoSchedule never filters; NoExecute does.
  NodePtr soft = MakeNode("s", "{}", R"({"taints": [{"key": "k", "effect": "PreferNoSchedule"}]})");
  EXPECT_TRUE(FilterTaintToleration(*MakePod("p"), *soft).ok());
  NodePtr hard = MakeNode("h", "{}", R"({"taints": [{"key": "k", "effect": "NoExecute"}]})");
  EXPECT_FALSE(FilterTaintToleration(*MakePod("p"), *hard).ok());
}

TEST(NodeAffinity, SelectorAndRequiredTerms) {
  NodePtr node = MakeNode("gpu-7", R"({"spine": "spine-1", "leaf": "l3", "gen": "9"})");
  auto matches = [&](const std::string& spec) {
    return FilterNodeAffinity(*MakePod("p", spec), *node).ok();
  };
  auto term = [](const std::string& exprs, const std::string& fields = "[]") {
    return R"({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
             {"nodeSelectorTerms": [{"matchExpressions": )" +
           exprs + R"(, "matchFields": )" + fields + "}]}}}}";
  };
  EXPECT_TRUE(matches(R"({"nodeSelector": {"spine": "spine-1"}})"));
  EXPECT_FALSE(matches(R"({"nodeSelector": {"spine": "spine-0"}})"));
  EXPECT_FALSE(matches(R"({"nodeSelector": {"rack": "r1"}})"));
  EXPECT_TRUE(
      matches(term(R"([{"key": "spine", "operator": "In", "values": ["spine-0", "spine-1"]}])")));
  EXPECT_FALSE(matches(term(R"([{"key": "spine", "operator": "NotIn", "values": ["spine-1"]}])")));
  EXPECT_TRUE(matches(term(R"([{"key": "rack", "operator": "NotIn", "values": ["r1"]}])")));
  EXPECT_TRUE(matches(term(R"([{"key": "leaf", "operator": "Exists"}])")));
  EXPECT_FALSE(matches(term(R"([{"key": "leaf", "operator": "DoesNotExist"}])")));
  EXPECT_TRUE(matches(term(R"([{"key": "gen", "operator": "Gt", "values": ["8"]}])")));
  EXPECT_FALSE(matches(term(R"([{"key": "gen", "operator": "Lt", "values": ["9"]}])")));
  EXPECT_FALSE(matches(term(R"([{"key": "spine", "operator": "Gt", "values": ["1"]}])")));
  EXPECT_FALSE(matches(term(R"([{"key": "spine", "operator": "In", "values": []}])")));
  EXPECT_TRUE(
      matches(term("[]", R"([{"key": "metadata.name", "operator": "In", "values": ["gpu-7"]}])")));
  EXPECT_FALSE(matches(
      term("[]", R"([{"key": "metadata.name", "operator": "NotIn", "values": ["gpu-7"]}])")));
  // Terms are ORed; an empty term matches nothing; no terms at all match nothing.
  EXPECT_TRUE(
      matches(R"({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [{"matchExpressions": [{"key": "x", "operator": "Exists"}]},
                             {"matchExpressions": [{"key": "leaf", "operator": "In", "values": ["l3"]}]}]}}}})"));
  EXPECT_FALSE(
      matches(R"({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [{}]}}}})"));
  EXPECT_FALSE(
      matches(R"({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": []}}}})"));
  // nodeSelector AND affinity.
  EXPECT_FALSE(matches(R"({"nodeSelector": {"spine": "spine-0"},
      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [{"matchExpressions": [{"key": "leaf", "operator": "Exists"}]}]}}}})"));
  EXPECT_EQ(
      FilterNodeAffinity(*MakePod("p", R"({"nodeSelector": {"a": "b"}})"), *node).reasons.at(0),
      "node(s) didn't match Pod's node affinity/selector");
}

TEST(NodeResourcesFit, AllocatableMinusRequested) {
  NodeState state = StateOf(MakeNode("n"));
  EXPECT_TRUE(FilterNodeResourcesFit(*GpuPod("p", 8), state).ok());
  state.requested.scalar["nvidia.com/gpu"] = 7;
  state.num_pods = 1;
  Status s = FilterNodeResourcesFit(*GpuPod("p", 2), state);
  EXPECT_EQ(s.code, Code::kUnschedulable);
  EXPECT_EQ(s.reasons, std::vector<std::string>{"Insufficient nvidia.com/gpu"});
  EXPECT_TRUE(FilterNodeResourcesFit(*GpuPod("p", 1), state).ok());
  // More than the node has at all: unresolvable (preemption cannot help).
  EXPECT_EQ(FilterNodeResourcesFit(*GpuPod("p", 9), StateOf(MakeNode("n"))).code,
            Code::kUnschedulableAndUnresolvable);
  // Ignored resources (extender managedResources with ignoredByScheduler) are not checked.
  EXPECT_TRUE(
      FilterNodeResourcesFit(*GpuPod("p", 9), StateOf(MakeNode("n")), {"nvidia.com/gpu"}).ok());
  // cpu and memory, and the pod count, are reported together.
  NodeState full = StateOf(MakeNode("n"));
  full.num_pods = 110;
  full.requested.milli_cpu = 191000;
  PodPtr cpu = MakePod("c", R"({"containers": [{"name": "m", "resources":
                                {"requests": {"cpu": "1", "memory": "10Gi"}}}]})");
  s = FilterNodeResourcesFit(*cpu, full);
  EXPECT_EQ(s.reasons, (std::vector<std::string>{"Too many pods", "Insufficient cpu"}));
  // A node without the resource at all.
  EXPECT_EQ(FilterNodeResourcesFit(*GpuPod("p", 1), StateOf(MakeNode("cpu-only", "{}", "{}", 0)))
                .reasons.at(0),
            "Insufficient nvidia.com/gpu");
}

TEST(RunFilters, ProfileOrderFirstRejectionWins) {
  NodePtr node = MakeNode("n", R"({"a": "b"})", R"({"unschedulable": true,
      "taints": [{"key": "k", "effect": "NoSchedule"}]})");
  PodPtr pod = GpuPod("p", 99, R"({"nodeSelector": {"a": "c"}})");
  EXPECT_EQ(RunFilters(*pod, StateOf(node)).plugin, kNodeUnschedulable);
  NodePtr tainted =
      MakeNode("n", R"({"a": "b"})", R"({"taints": [{"key": "k", "effect": "NoSchedule"}]})");
  EXPECT_EQ(RunFilters(*pod, StateOf(tainted)).plugin, kTaintToleration);
  EXPECT_EQ(RunFilters(*pod, StateOf(MakeNode("n", R"({"a": "b"})"))).plugin, kNodeAffinity);
  EXPECT_EQ(RunFilters(*GpuPod("p", 99), StateOf(MakeNode("n"))).plugin, kNodeResourcesFit);
  EXPECT_TRUE(RunFilters(*GpuPod("p", 1), StateOf(MakeNode("n"))).ok());
}

TEST(InTreeScores, PreferredAffinityAndSoftTaintsMoveTheScore) {
  PodPtr pod = GpuPod("p", 1, R"({"affinity": {"nodeAffinity": {
      "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [{"key": "leaf", "operator": "In",
                                                            "values": ["l1"]}]}}]}}})");
  NodeState a = StateOf(MakeNode("a", R"({"leaf": "l1"})"));
  NodeState b = StateOf(MakeNode("b", R"({"leaf": "l2"})"));
  NodeState c = StateOf(MakeNode("c", R"({"leaf": "l1"})",
                                 R"({"taints": [{"key": "k", "effect": "PreferNoSchedule"}]})"));
  std::vector<int64_t> s = InTreeScores(*pod, {&a, &b, &c});
  EXPECT_EQ(s[0] - s[1], 2 * 100);  // NodeAffinity weight 2, normalized to 100
  EXPECT_EQ(s[0] - s[2], 3 * 100);  // TaintToleration weight 3, reversed
  // LeastAllocated prefers the emptier node.
  NodeState busy = StateOf(MakeNode("busy"));
  busy.nonzero_milli_cpu = 150000;
  NodeState idle = StateOf(MakeNode("idle"));
  EXPECT_GT(LeastAllocatedScore(*pod, idle), LeastAllocatedScore(*pod, busy));
  EXPECT_EQ(BalancedAllocationScore(*pod, idle), -1);  // best-effort on cpu/memory: skipped
  std::vector<int64_t> zeros = {0, 0};
  NormalizeScores(&zeros, /*reverse=*/true);
  EXPECT_EQ(zeros, (std::vector<int64_t>{100, 100}));
}

TEST(QueueingHints, NodeChangesBecomeEvents) {
  NodePtr before = MakeNode("n", R"({"a": "1"})");
  NodePtr relabeled = MakeNode("n", R"({"a": "2"})", R"({"unschedulable": true})");
  std::vector<ClusterEvent> events = NodeUpdateEvents(before, relabeled);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].label, "NodeSpecUnschedulableChange");
  EXPECT_EQ(events[1].label, "NodeLabelChange");
  EXPECT_TRUE(NodeUpdateEvents(before, MakeNode("n", R"({"a": "1"})")).empty());
}

// topogangd's wake (topogang.io/wake on a Node): an annotation-only change is an event
// (NodeSchedulingPropertiesChange, since v1.28: kubernetes/kubernetes#118389), which requeues a
// pod the extender refused (it registers for every event) and not one NodeResourcesFit refused.
TEST(QueueingHints, ANodeAnnotationChangeRequeuesWhatTheExtenderRefused) {
  NodePtr before = MakeNode("n");
  auto annotated = std::make_shared<Node>(*before);
  annotated->annotations["topogang.io/wake"] = "2026-11-28T00:00:00Z default/g";
  std::vector<ClusterEvent> events = NodeUpdateEvents(before, annotated);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].label, "NodeAnnotationChange");
  PodPtr pod = GpuPod("p", 8);
  for (bool hints : {true, false}) {
    EXPECT_EQ(IsPodWorthRequeuing(*pod, {kExtenderPlugin}, events[0], hints),
              QueueingStrategy::kAfterBackoff);
    EXPECT_EQ(IsPodWorthRequeuing(*pod, {kNodeResourcesFit}, events[0], hints),
              QueueingStrategy::kSkip);
  }
}

TEST(QueueingHints, WhichEventsRequeueWhichRejections) {
  PodPtr pod = GpuPod("p", 1, R"({"nodeSelector": {"spine": "s1"}})");
  NodePtr wrong = MakeNode("n", R"({"spine": "s0"})");
  NodePtr right = MakeNode("n", R"({"spine": "s1"})");
  const std::set<std::string> affinity = {kNodeAffinity};
  // No rejector (an error) or a wildcard event: always requeue after backoff.
  EXPECT_EQ(IsPodWorthRequeuing(*pod, {}, NodeAddEvent(wrong), true),
            QueueingStrategy::kAfterBackoff);
  EXPECT_EQ(IsPodWorthRequeuing(*pod, affinity, UnschedulableTimeoutEvent(), true),
            QueueingStrategy::kAfterBackoff);
  // NodeAffinity's hint: only a node that now matches.
  EXPECT_EQ(IsPodWorthRequeuing(*pod, affinity, NodeAddEvent(wrong), true),
            QueueingStrategy::kSkip);
  EXPECT_EQ(IsPodWorthRequeuing(*pod, affinity, NodeAddEvent(right), true),
            QueueingStrategy::kAfterBackoff);
  EXPECT_EQ(IsPodWorthRequeuing(*pod, affinity, NodeUpdateEvents(wrong, right)[0], true),
            QueueingStrategy::kAfterBackoff);
  // Without hints a registered event is enough; an unregistered one never is.
  EXPECT_EQ(IsPodWorthRequeuing(*pod, affinity, NodeAddEvent(wrong), false),
            QueueingStrategy::kAfterBackoff);
  EXPECT_EQ(IsPodWorthRequeuing(*pod, affinity, AssignedPodDeleteEvent(GpuPod("q", 1)), false),
            QueueingStrategy::kSkip);
  // NodeResourcesFit: a deleted assigned pod may free room, a deleted pending one cannot.
  PodPtr assigned = MakePod("a", R"({"nodeName": "n"})");
  EXPECT_EQ(IsPodWorthRequeuing(*pod, {kNodeResourcesFit}, AssignedPodDeleteEvent(assigned), true),
            QueueingStrategy::kAfterBackoff);
  EXPECT_EQ(IsPodWorthRequeuing(*pod, {kNodeResourcesFit}, AssignedPodDeleteEvent(pod), true),
            QueueingStrategy::kSkip);
  EXPECT_EQ(IsPodWorthRequeuing(*pod, {kNodeResourcesFit}, AssignedPodAddEvent(assigned), true),
            QueueingStrategy::kSkip);
  // The extender registers every event (kubernetes#122019).
  EXPECT_EQ(IsPodWorthRequeuing(*pod, {kExtenderPlugin}, AssignedPodAddEvent(assigned), true),
            QueueingStrategy::kAfterBackoff);
}

TEST(SchedulerCache, AssumeConfirmForgetAndZoneOrder) {
  SchedulerCache cache;
  cache.AddNode(MakeNode("a1", R"({"topology.kubernetes.io/zone": "a"})"));
  cache.AddNode(MakeNode("a2", R"({"topology.kubernetes.io/zone": "a"})"));
  cache.AddNode(MakeNode("a3", R"({"topology.kubernetes.io/zone": "a"})"));
  cache.AddNode(MakeNode("b1", R"({"topology.kubernetes.io/zone": "b"})"));
  std::vector<std::string> order;
  for (const NodeStatePtr& s : *cache.Snapshot()) order.push_back(s->node->name);
  EXPECT_EQ(order, (std::vector<std::string>{"a1", "b1", "a2", "a3"}));  // zones round-robin

  PodPtr pod = GpuPod("p", 3);
  ASSERT_TRUE(cache.AssumePod(pod, "a2").ok());
  EXPECT_FALSE(cache.AssumePod(pod, "a1").ok());
  EXPECT_TRUE(cache.IsAssumed(pod->uid));
  EXPECT_EQ(cache.GetNode("a2")->requested.Scalar("nvidia.com/gpu"), 3);
  EXPECT_EQ(cache.GetNode("a2")->num_pods, 1);
  // A snapshot taken before a change does not see it.
  NodeSnapshot before = cache.Snapshot();
  ASSERT_TRUE(cache.ForgetPod(pod->uid).ok());
  EXPECT_EQ(cache.GetNode("a2")->num_pods, 0);
  EXPECT_EQ((*before)[2]->num_pods, 1);
  EXPECT_EQ((*cache.Snapshot())[2]->num_pods, 0);
  // Confirmed by the informer on another node than assumed: it moves there.
  ASSERT_TRUE(cache.AssumePod(pod, "a2").ok());
  cache.AddPod(GpuPod("p", 3, R"({"nodeName": "b1"})"));
  EXPECT_FALSE(cache.IsAssumed(pod->uid));
  EXPECT_EQ(cache.GetNode("a2")->num_pods, 0);
  EXPECT_EQ(cache.GetNode("b1")->requested.Scalar("nvidia.com/gpu"), 3);
  EXPECT_FALSE(cache.ForgetPod(pod->uid).ok());  // only assumed pods can be forgotten
  cache.RemovePod(*pod);
  EXPECT_EQ(cache.GetNode("b1")->num_pods, 0);
  // A pod on a node not yet known counts once the node appears.
  cache.AddPod(GpuPod("early", 2, R"({"nodeName": "c1"})"));
  EXPECT_EQ(cache.GetNode("c1"), nullptr);
  cache.AddNode(MakeNode("c1"));
  EXPECT_EQ(cache.GetNode("c1")->requested.Scalar("nvidia.com/gpu"), 2);
  cache.RemoveNode("a1");
  EXPECT_EQ(cache.NumNodes(), 4u);
}

}  // namespace
}  // namespace topogang::kubesched
