// End to end: the project's fake API server, a fake extender on loopback and the emulator
// between them. Time runs 10-20x faster than the wall clock, so a 1 s backoff takes 50-100 ms.
#include "tests/kubesched/emulator.h"

#include <cpprest/http_client.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>

#include "common/free_port.h"
#include "tests/kubesched/fake_extender.h"
#include "tests/support/fake_apiserver.h"

namespace topogang::kubesched {
namespace {

using testing::ExtenderReply;
using testing::ExtenderRequest;
using testing::FakeExtender;
using topogang::testing::FakeApiServer;

constexpr char kScheduler[] = "topogang-scheduler";

Json GpuPod(const std::string& name, int gpus, const std::string& extra_spec = "{}") {
  Json spec = Json::parse(extra_spec);
  spec["schedulerName"] = kScheduler;
  spec["containers"] =
      Json::array({{{"name", "main"},
                    {"image", "registry.invalid/none:latest"},
                    {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}});
  return {{"metadata", {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}}},
          {"spec", spec},
          {"status", {{"phase", "Pending"}}}};
}

Json CpuPod(const std::string& name) {
  Json pod = GpuPod(name, 0);
  pod["spec"]["containers"][0]["resources"] = {{"requests", {{"cpu", "500m"}}}};
  return pod;
}

// What the fake extender does; tests change it while the emulator runs.
struct Behaviour {
  std::mutex mu;
  std::map<std::string, int> scores;                 // node -> prioritize score
  std::map<std::string, int> bind_errors_left;       // pod -> failing binds still to come
  std::map<std::string, std::string> filter_errors;  // pod -> Error text for filter
  std::map<std::string, std::string> also_bind;      // pod -> another pod bound with it
  std::string hold_pod;                              // this pod's bind waits for release
  std::atomic<bool> release{false};
  std::atomic<bool> holding{false};
  std::atomic<int> active{0};  // requests being answered
};

class EmulatorTest : public ::testing::Test {
 protected:
  EmulatorTest()
      : ext_([this](const ExtenderRequest& r) { return Handle(r); }, "/topogang"),
        api_client_(api_.url()) {}
  ~EmulatorTest() override {
    b_.release = true;
    if (emu_) emu_->Stop();
    // A released handler may still be talking to the API server: let it finish first.
    for (absl::Time deadline = absl::Now() + absl::Seconds(5);
         b_.active > 0 && absl::Now() < deadline;) {
      absl::SleepFor(absl::Milliseconds(1));
    }
  }

  void StartEmulator(double time_scale = 20, int percentage = 0,
                     absl::Duration watch_lag = absl::ZeroDuration()) {
    EmulatorOptions o;
    o.watch_lag = watch_lag;
    o.api_server_url = api_.url();
    o.scheduler_name = kScheduler;
    ExtenderConfig e;
    e.url_prefix = ext_.url();
    o.extenders = {e};
    o.time_scale = time_scale;
    o.percentage_of_nodes_to_score = percentage;
    emu_ = std::make_unique<Emulator>(o);
    ASSERT_TRUE(emu_->Start().ok());
  }

  std::string BoundNode(const std::string& name) {
    auto r = emu_->Record("default/" + name);
    return r ? r->node_name : "";
  }

  ExtenderReply Handle(const ExtenderRequest& r) {
    ++b_.active;
    ExtenderReply reply = Answer(r);
    --b_.active;
    return reply;
  }

  ExtenderReply Answer(const ExtenderRequest& r) {
    Json args = Json::parse(r.body);
    if (r.verb == "filter") {
      const std::string pod = args["Pod"]["metadata"]["name"];
      std::lock_guard<std::mutex> lock(b_.mu);
      if (b_.filter_errors.count(pod)) {
        return {200, Json{{"Error", b_.filter_errors[pod]}}.dump()};
      }
      return {200,
              Json{{"NodeNames", args["NodeNames"]}, {"FailedNodes", Json::object()}, {"Error", ""}}
                  .dump()};
    }
    if (r.verb == "prioritize") {
      Json out = Json::array();
      std::lock_guard<std::mutex> lock(b_.mu);
      for (const Json& n : args["NodeNames"]) {
        out.push_back({{"Host", n}, {"Score", b_.scores.count(n) ? b_.scores[n] : 0}});
      }
      return {200, out.dump()};
    }
    if (r.verb == "bind") {
      const std::string pod = args["PodName"];
      std::string other;
      {
        std::lock_guard<std::mutex> lock(b_.mu);
        if (b_.bind_errors_left[pod] > 0) {
          --b_.bind_errors_left[pod];
          return {200, R"({"Error":"gang member not ready"})"};
        }
        if (b_.also_bind.count(pod)) other = b_.also_bind[pod];
      }
      if (pod == b_.hold_pod) {
        b_.holding = true;
        while (!b_.release) absl::SleepFor(absl::Milliseconds(2));
      }
      if (!other.empty()) ApiBind(other, args["Node"]);
      return {200, Json{{"Error", ApiBind(pod, args["Node"])}}.dump()};
    }
    return {404, ""};
  }

  // POST pods/binding to the API server, as an extender that binds does. "" on success.
  std::string ApiBind(const std::string& pod, const std::string& node) {
    Json b = {{"apiVersion", "v1"},
              {"kind", "Binding"},
              {"metadata", {{"name", pod}, {"namespace", "default"}}},
              {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
    web::http::http_request req(web::http::methods::POST);
    req.set_request_uri("/api/v1/namespaces/default/pods/" + pod + "/binding");
    req.set_body(b.dump(), "application/json");
    auto resp = api_client_.request(req).get();
    return resp.status_code() == 201 ? "" : "binding failed: " + resp.extract_utf8string().get();
  }

  FakeApiServer api_;
  Behaviour b_;
  FakeExtender ext_;
  web::http::client::http_client api_client_;
  std::unique_ptr<Emulator> emu_;
};

TEST_F(EmulatorTest, SchedulesAndBindsThroughTheExtender) {
  for (int i = 0; i < 4; ++i)
    api_.PutNode(topogang::testing::MakeNode("n" + std::to_string(i), 8, {}));
  b_.scores["n2"] = 10;
  api_.PutPod(GpuPod("early", 1));  // exists before the emulator lists
  StartEmulator();
  api_.PutPod(GpuPod("late", 2));
  api_.PutPod(CpuPod("cpu-only"));  // not for the extender: kube-scheduler binds it itself
  ASSERT_TRUE(emu_->WaitFor([&] {
    return !BoundNode("early").empty() && !BoundNode("late").empty() &&
           !BoundNode("cpu-only").empty();
  }));
  EXPECT_EQ(BoundNode("early"), "n2");  // the extender's favourite, weight 1 x 10 x 10
  EXPECT_EQ(BoundNode("late"), "n2");
  EmulatorCounters c = emu_->counters();
  EXPECT_EQ(c.filter_calls, 2);
  EXPECT_EQ(c.prioritize_calls, 2);
  EXPECT_EQ(c.bind_calls, 2);
  EXPECT_EQ(c.api_bind_calls, 1);
  EXPECT_EQ(ext_.count("filter"), 2);
  // The filter body: the pod as the API server stored it, all four node names.
  Json first = Json::parse(ext_.requests()[0].body);
  EXPECT_TRUE(first["Nodes"].is_null());
  EXPECT_EQ(first["NodeNames"].size(), 4u);
  EXPECT_EQ(first["Pod"]["metadata"]["uid"], "uid-early");
  EXPECT_EQ(emu_->cache().GetNode("n2")->requested.Scalar("nvidia.com/gpu"), 3);
  EXPECT_EQ(emu_->WhereIs("default/early"), QueueName::kNone);
}

// kube-scheduler's watch trailing the API server (and topogangd's watch): what the informers
// receive reaches the cache `watch_lag` later, in order, but the first lists are in the cache
// before the first cycle (WaitForCacheSync).
TEST_F(EmulatorTest, AWatchLagDelaysWhatTheCacheSeesButNotTheFirstList) {
  api_.PutNode(topogang::testing::MakeNode("n0", 8, {}));
  api_.PutPod(GpuPod("early", 1));
  StartEmulator(/*time_scale=*/20, 0, /*watch_lag=*/absl::Seconds(5));  // 250 ms real
  ASSERT_NE(emu_->Record("default/early"), std::nullopt) << "the first list was not waited for";
  const absl::Time created = absl::Now();
  api_.PutNode(topogang::testing::MakeNode("n1", 8, {}));
  api_.PutPod(GpuPod("late", 1, R"({"nodeSelector": {"kubernetes.io/hostname": "n1"}})"));
  ASSERT_TRUE(emu_->WaitForBound("default/late"));
  EXPECT_EQ(BoundNode("late"), "n1");
  EXPECT_GE(absl::Now() - created, absl::Milliseconds(250)) << "the pod was seen without lag";
}

TEST_F(EmulatorTest, NodeSelectorAndTaintsDecideWhatTheExtenderSees) {
  api_.PutNode(topogang::testing::MakeNode("n0", 8, {{"spine", "s0"}}));
  api_.PutNode(topogang::testing::MakeNode("n1", 8, {{"spine", "s1"}}));
  Json tainted = topogang::testing::MakeNode("n2", 8, {{"spine", "s1"}});
  tainted["spec"]["taints"] = {
      {{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}}};
  api_.PutNode(tainted);
  b_.scores = {{"n0", 10}, {"n2", 10}};
  StartEmulator();
  api_.PutPod(GpuPod("picky", 1, R"({"nodeSelector": {"spine": "s1"}})"));
  ASSERT_TRUE(emu_->WaitForBound("default/picky"));
  EXPECT_EQ(BoundNode("picky"), "n1");
  Json filter = Json::parse(ext_.requests()[0].body);
  EXPECT_EQ(filter["NodeNames"], Json::array({"n1"}));  // only what passed the own filters
  EXPECT_EQ(ext_.count("prioritize"), 0);               // one feasible node: no prioritize
  api_.PutPod(GpuPod("tolerant", 1, R"({"nodeSelector": {"spine": "s1"},
      "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]})"));
  ASSERT_TRUE(emu_->WaitForBound("default/tolerant"));
  EXPECT_EQ(BoundNode("tolerant"), "n2");  // a tolerated taint does not keep it away
}

TEST_F(EmulatorTest, UnschedulablePodWaitsForANodeEventWithItsReason) {
  api_.PutNode(topogang::testing::MakeNode("n0", 8, {{"spine", "s0"}}));
  api_.PutNode(topogang::testing::MakeNode("n1", 8, {{"spine", "s0"}}));
  StartEmulator();
  api_.PutPod(GpuPod("waits", 1, R"({"nodeSelector": {"spine": "s1"}})"));
  ASSERT_TRUE(
      emu_->WaitFor([&] { return emu_->WhereIs("default/waits") == QueueName::kUnschedulable; }));
  EXPECT_EQ(emu_->Record("default/waits")->last_failure,
            "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.");
  EXPECT_EQ(emu_->counters().fit_errors, 1);
  EXPECT_EQ(ext_.count("filter"), 0);  // nothing left to offer the extender
  api_.PutNode(topogang::testing::MakeNode("n2", 8, {{"spine", "s1"}}));
  ASSERT_TRUE(emu_->WaitForBound("default/waits"));
  EXPECT_EQ(BoundNode("waits"), "n2");
  // A pending pod that is deleted leaves the queue.
  api_.PutPod(GpuPod("gone", 1, R"({"nodeSelector": {"spine": "s9"}})"));
  ASSERT_TRUE(
      emu_->WaitFor([&] { return emu_->WhereIs("default/gone") == QueueName::kUnschedulable; }));
  api_.DeletePod("default", "gone");
  ASSERT_TRUE(emu_->WaitFor([&] { return emu_->Record("default/gone")->deleted; }));
  EXPECT_EQ(emu_->WhereIs("default/gone"), QueueName::kNone);
}

TEST_F(EmulatorTest, FailedBindsAreRetriedWithGrowingBackoff) {
  api_.PutNode(topogang::testing::MakeNode("n0", 8, {}));
  b_.bind_errors_left["flaky"] = 3;
  StartEmulator(/*time_scale=*/20);
  api_.PutPod(GpuPod("flaky", 1));
  ASSERT_TRUE(emu_->WaitForBound("default/flaky", absl::Seconds(10)));
  PodRecord r = *emu_->Record("default/flaky");
  EXPECT_EQ(r.bind_failures, 3);
  EXPECT_EQ(r.bind_attempts, 4);
  EXPECT_EQ(r.attempts, 4);
  EXPECT_EQ(r.last_failure, "gang member not ready");
  // The gap from each failed bind to the next cycle is at least the backoff: 1 s, 2 s, 4 s.
  std::vector<absl::Duration> gaps;
  absl::Time failed_at;
  for (const Decision& d : emu_->Decisions()) {
    if (d.pod != "default/flaky") continue;
    if (d.kind == Decision::Kind::kBindFailed) {
      failed_at = d.time;
      EXPECT_EQ(d.requeued_to, QueueName::kBackoff);
    }
    if (d.kind == Decision::Kind::kAssumed && failed_at != absl::Time()) {
      gaps.push_back(d.time - failed_at);
    }
  }
  ASSERT_EQ(gaps.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_GE(gaps[i], absl::Seconds(1 << i) - absl::Milliseconds(50)) << i;
    EXPECT_LT(gaps[i], absl::Seconds((1 << i) + 4)) << i;  // flushed within ~1 s (slack: load)
  }
  EXPECT_EQ(emu_->counters().bind_failures, 3);
}

TEST_F(EmulatorTest, AHeldBindDoesNotBlockOtherPods) {
  for (int i = 0; i < 3; ++i)
    api_.PutNode(topogang::testing::MakeNode("n" + std::to_string(i), 8, {}));
  b_.hold_pod = "held";
  StartEmulator(/*time_scale=*/5);  // httpTimeout 5 s -> 1 s of real time
  api_.PutPod(GpuPod("held", 1));
  ASSERT_TRUE(emu_->WaitFor([&] { return b_.holding.load(); }));
  for (int i = 0; i < 5; ++i) api_.PutPod(GpuPod("next-" + std::to_string(i), 1));
  ASSERT_TRUE(emu_->WaitFor([&] {
    for (int i = 0; i < 5; ++i) {
      if (BoundNode("next-" + std::to_string(i)).empty()) return false;
    }
    return true;
  }));
  EXPECT_TRUE(BoundNode("held").empty());
  // The others' bind replies may still be on their way; then only the held one is left.
  EXPECT_TRUE(emu_->WaitFor([&] { return emu_->counters().binds_in_flight == 1; }));
  // The held pod still counts on its node while its bind runs (assumed).
  const std::string node = emu_->Record("default/held")->assumed_node;
  EXPECT_TRUE(emu_->cache().GetNode(node)->num_pods >= 1);
  b_.release = true;
  ASSERT_TRUE(emu_->WaitForBound("default/held"));
  EXPECT_EQ(emu_->counters().bind_failures, 0);
}

TEST_F(EmulatorTest, ExtenderErrorsBackOffAndPodsBoundByTheExtenderLeaveTheQueue) {
  api_.PutNode(topogang::testing::MakeNode("n0", 8, {}));
  b_.filter_errors["broken"] = "planner exploded";
  b_.also_bind["leader"] = "follower";
  StartEmulator();
  api_.PutPod(GpuPod("broken", 1));
  ASSERT_TRUE(emu_->WaitFor([&] { return emu_->counters().scheduling_errors >= 1; }));
  EXPECT_EQ(emu_->Record("default/broken")->last_failure, "planner exploded");
  ASSERT_TRUE(
      emu_->WaitFor([&] { return emu_->WhereIs("default/broken") == QueueName::kBackoff; }));
  {
    std::lock_guard<std::mutex> lock(b_.mu);
    b_.filter_errors.clear();
  }
  ASSERT_TRUE(emu_->WaitForBound("default/broken"));
  // "follower" can never pass the own filters, but the extender binds it along with "leader".
  api_.PutPod(GpuPod("follower", 1, R"({"nodeSelector": {"nowhere": "true"}})"));
  ASSERT_TRUE(emu_->WaitFor(
      [&] { return emu_->WhereIs("default/follower") == QueueName::kUnschedulable; }));
  api_.PutPod(GpuPod("leader", 1));
  ASSERT_TRUE(emu_->WaitForBound("default/follower"));
  EXPECT_EQ(emu_->WhereIs("default/follower"), QueueName::kNone);
  EXPECT_EQ(emu_->cache().GetNode("n0")->requested.Scalar("nvidia.com/gpu"), 3);
}

TEST_F(EmulatorTest, PercentageOfNodesToScoreLimitsAndRotatesTheOffer) {
  for (int i = 0; i < 200; ++i) {
    char name[16];
    snprintf(name, sizeof(name), "n%03d", i);
    api_.PutNode(topogang::testing::MakeNode(name, 8, {}));
  }
  StartEmulator();
  api_.PutPod(GpuPod("a", 1));
  ASSERT_TRUE(emu_->WaitForBound("default/a"));
  api_.PutPod(GpuPod("b", 1));
  ASSERT_TRUE(emu_->WaitForBound("default/b"));
  ASSERT_EQ(ext_.count("filter"), 2);
  Json a = Json::parse(ext_.requests()[0].body);
  Json b;
  for (const auto& r : ext_.requests()) {
    if (r.verb == "filter" && r.body.find("uid-b") != std::string::npos) b = Json::parse(r.body);
  }
  // 200 nodes: max(200 * (50 - 200/125) / 100, 100) = 100 offered; the next pod's search
  // starts where this one stopped.
  EXPECT_EQ(a["NodeNames"].size(), 100u);
  EXPECT_EQ(a["NodeNames"][0], "n000");
  EXPECT_EQ(b["NodeNames"].size(), 100u);
  EXPECT_EQ(b["NodeNames"][0], "n100");
}

TEST_F(EmulatorTest, StopAbandonsAHeldBindAtOnce) {
  api_.PutNode(topogang::testing::MakeNode("n0", 8, {}));
  b_.hold_pod = "held";
  StartEmulator(/*time_scale=*/1);  // the bind would wait 5 s for its timeout
  api_.PutPod(GpuPod("held", 1));
  ASSERT_TRUE(emu_->WaitFor([&] { return b_.holding.load(); }));
  EXPECT_TRUE(emu_->Record("default/held")->binding);
  const absl::Time start = absl::Now();
  emu_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(emu_->counters().binds_in_flight, 0);
  EXPECT_EQ(emu_->counters().bind_failures, 0);  // abandoned, not failed and requeued
  EXPECT_FALSE(emu_->Start().ok());              // an emulator runs once
}

TEST_F(EmulatorTest, CycleCostPacesTheCycles) {
  api_.PutNode(topogang::testing::MakeNode("n0", 8, {}));
  EmulatorOptions o;
  o.api_server_url = api_.url();
  o.scheduler_name = kScheduler;
  o.time_scale = 10;
  o.cycle_cost = absl::Milliseconds(50);  // 5 ms of real time per cycle
  emu_ = std::make_unique<Emulator>(o);   // no extender: kube-scheduler binds itself
  ASSERT_TRUE(emu_->Start().ok());
  for (int i = 0; i < 8; ++i) api_.PutPod(CpuPod("p" + std::to_string(i)));
  ASSERT_TRUE(emu_->WaitFor([&] { return emu_->counters().binds_ok == 8; }));
  std::vector<absl::Time> cycles;
  for (const Decision& d : emu_->Decisions()) {
    if (d.kind == Decision::Kind::kAssumed) cycles.push_back(d.time);
  }
  ASSERT_EQ(cycles.size(), 8u);
  for (size_t i = 1; i < cycles.size(); ++i) {
    EXPECT_GE(cycles[i] - cycles[i - 1], absl::Milliseconds(45)) << i;  // virtual time
  }
  EXPECT_EQ(emu_->counters().api_bind_calls, 8);
  EXPECT_EQ(ext_.count("filter"), 0);
}

TEST(EmulatorStart, FailsWithoutAnApiServer) {
  EmulatorOptions o;
  o.api_server_url = "http://127.0.0.1:" + std::to_string(PickFreePort());
  o.sync_timeout = absl::Milliseconds(200);
  Emulator emu(o);
  EXPECT_FALSE(emu.Start().ok());
}

}  // namespace
}  // namespace topogang::kubesched
