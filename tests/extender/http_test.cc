// Integration through the real HTTP server on 127.0.0.1, with bodies as kube-scheduler sends
// them (the captured ones, and ones shaped like them), in the order it sends them.
#include <gtest/gtest.h>

#include <set>

#include "tests/support/harness.h"

namespace topogang {
namespace {

using testing::GangPod;
using testing::Harness;
using testing::MakePod;
using testing::NodeNames;
using testing::PodOpts;
using testing::ReadWire;
using testing::Reply;
using testing::TestCluster;

// Exactly the canonical keys, nothing invented, nothing twice; every input node answered when
// none passes (a steered reply names only its node).
ExtenderFilterResult CheckFilterReply(const Reply& r, const std::vector<std::string>& input,
                                      bool node_cache = true) {
  EXPECT_EQ(r.status, 200) << r.body;
  Json j = Json::parse(r.body);
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"Nodes", "NodeNames", "FailedNodes",
                                            "FailedAndUnresolvableNodes", "Error"}));
  if (node_cache) {
    EXPECT_TRUE(j["NodeNames"].is_array()) << "a reply without NodeNames filters every node";
  } else {
    EXPECT_TRUE(j["Nodes"]["items"].is_array());
  }
  auto f = ParseFilterResult(r.body);
  EXPECT_TRUE(f.ok());
  std::multiset<std::string> seen;
  for (const auto& n : f->node_names) seen.insert(n);
  for (const auto& [n, _] : f->failed) seen.insert(n);
  for (const auto& [n, _] : f->failed_unresolvable) seen.insert(n);
  std::set<std::string> in(input.begin(), input.end());
  if (f->node_names.empty()) {
    EXPECT_EQ(seen, std::multiset<std::string>(in.begin(), in.end()));
  } else {
    for (const std::string& n : seen) EXPECT_EQ(seen.count(n) * in.count(n), 1u) << n;
  }
  return *f;
}

void CheckScores(const Reply& r, const std::vector<std::string>& input, const std::string& ten) {
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = Json::parse(r.body);
  ASSERT_TRUE(j.is_array());
  std::set<std::string> hosts;
  for (const Json& h : j) {
    ASSERT_TRUE(h["Score"].is_number_integer()) << r.body.substr(0, 200);
    int64_t s = h["Score"];
    EXPECT_TRUE(s >= 0 && s <= 10);
    EXPECT_EQ(s, h["Host"] == ten ? 10 : 0);
    EXPECT_TRUE(hosts.insert(h["Host"]).second);
  }
  EXPECT_EQ(hosts, std::set<std::string>(input.begin(), input.end()));
}

TEST(HttpTest, CapturedBodiesInKubeSchedulerOrder) {
  Harness h(TestCluster());
  ASSERT_TRUE(h.ok());
  // bind-api-mode: filter -> prioritize -> bind of one 1-GPU pod.
  std::string filter = ReadWire("bind-api-mode/filter-001-request.json");
  auto args = ParseExtenderArgs(filter);
  ASSERT_TRUE(args.ok());
  ExtenderFilterResult f = CheckFilterReply(h.Post("/filter", filter), args->names);
  ASSERT_EQ(f.node_names.size(), 1u);
  EXPECT_EQ(f.error, "");
  // kube-scheduler sends prioritize with the nodes that passed; with one node it skips
  // prioritize, but the captured body (all 100) must still be answered sanely.
  std::string prio = ReadWire("bind-api-mode/prioritize-001-request.json");
  CheckScores(h.Post("/prioritize", prio), ParseExtenderArgs(prio)->names, f.node_names[0]);
  auto bind = ParseBindingArgs(ReadWire("bind-api-mode/bind-001-request.json"));
  ASSERT_TRUE(bind.ok());
  bind->node = f.node_names[0];
  Reply b = h.Post("/bind", SerializeBindingArgs(*bind));
  EXPECT_EQ(b.status, 200);
  EXPECT_EQ(b.body, R"({"Error":""})");
  EXPECT_EQ(h.memory().Bindings().at("default/gpu-pod-2"), f.node_names[0]);

  // filter-failed-prefer: an 8-GPU pod offered 99 nodes.
  std::string f8 = ReadWire("filter-failed-prefer/filter-001-request.json");
  ExtenderFilterResult r8 = CheckFilterReply(h.Post("/filter", f8), ParseExtenderArgs(f8)->names);
  EXPECT_EQ(r8.node_names.size(), 1u);
  // The retried filter of filter-all-failed (same pod twice) keeps its node.
  std::string fa1 = ReadWire("filter-all-failed/filter-001-request.json");
  std::string fa2 = ReadWire("filter-all-failed/filter-002-request.json");
  auto x1 = CheckFilterReply(h.Post("/filter", fa1), ParseExtenderArgs(fa1)->names);
  auto x2 = CheckFilterReply(h.Post("/filter", fa2), ParseExtenderArgs(fa2)->names);
  ASSERT_EQ(x1.node_names.size(), 1u);
  EXPECT_EQ(x1.node_names, x2.node_names);
}

TEST(HttpTest, FullNodeListIsEchoedUnmodifiedForPassingNodes) {
  Harness h(TestCluster());
  ASSERT_TRUE(h.ok());
  std::string body = ReadWire("nodecache-false/filter-001-request.json.gz");
  auto args = ParseExtenderArgs(body);
  ASSERT_TRUE(args.ok());
  Reply r = h.Post("/filter", body);
  ExtenderFilterResult f = CheckFilterReply(r, args->names, /*node_cache=*/false);
  Json j = Json::parse(r.body);
  EXPECT_TRUE(j["NodeNames"].is_null());
  ASSERT_EQ(j["Nodes"]["items"].size(), 1u);
  const Json& item = j["Nodes"]["items"][0];
  bool found = false;
  const Json sent = Json::parse(body);
  for (size_t i = 0; i < args->names.size(); ++i) {
    if (args->names[i] == item["metadata"]["name"]) {
      found = true;
      EXPECT_EQ(item, sent["Nodes"]["items"][i]) << "echoed unmodified";
    }
  }
  EXPECT_TRUE(found);
  std::string prio = ReadWire("nodecache-false/prioritize-001-request.json.gz");
  CheckScores(h.Post("/prioritize", prio), ParseExtenderArgs(prio)->names, f.node_names[0]);
}

TEST(HttpTest, SixteenByEightGangMemberByMember) {
  Harness h(TestCluster());
  ASSERT_TRUE(h.ok());
  std::vector<std::string> names = NodeNames();
  std::vector<pplx::task<Reply>> binds;
  std::set<std::string> nodes;
  for (int i = 0; i < 16; ++i) {
    Json pod = MakePod(GangPod("llm", 16, i, 8));
    ExtenderFilterResult f =
        CheckFilterReply(h.Post("/filter", testing::FilterBody(pod, names)), names);
    ASSERT_EQ(f.node_names.size(), 1u)
        << (f.failed_unresolvable.empty() ? "" : f.failed_unresolvable[0].second);
    nodes.insert(f.node_names[0]);
    CheckScores(h.Post("/prioritize", testing::FilterBody(pod, names)), names, f.node_names[0]);
    binds.push_back(
        h.PostAsync("/bind", SerializeBindingArgs({pod["metadata"]["name"], "default",
                                                   pod["metadata"]["uid"], f.node_names[0]})));
    if (i < 15) {
      EXPECT_FALSE(binds.back().is_done()) << "bind held until every member arrives";
    }
  }
  EXPECT_EQ(nodes.size(), 16u);
  for (auto& b : binds) {
    Reply r = b.get();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, R"({"Error":""})");
  }
  EXPECT_EQ(h.memory().Bindings().size(), 16u);
  EXPECT_EQ(h.UsedGpus(), 128);
}

TEST(HttpTest, GangThatCannotFitFailsEveryNodeReadably) {
  Harness h(TestCluster(8));
  ASSERT_TRUE(h.ok());
  std::vector<std::string> names = NodeNames(8);
  Json pod = MakePod(GangPod("big", 9, 0, 8));
  ExtenderFilterResult f =
      CheckFilterReply(h.Post("/filter", testing::FilterBody(pod, names)), names);
  EXPECT_TRUE(f.node_names.empty());
  EXPECT_EQ(f.error, "");
  ASSERT_EQ(f.failed_unresolvable.size(), 8u);
  const std::string& why = f.failed_unresolvable[0].second;
  EXPECT_NE(why.find("(9 pods x 8 GPUs) cannot be placed"), std::string::npos) << why;
  EXPECT_NE(why.find("room for only 8 members"), std::string::npos) << why;
  EXPECT_EQ(h.UsedGpus(), 0);
}

TEST(HttpTest, HeldBindsAreAnsweredBeforeHttpTimeoutAndTheReservationStays) {
  GangLedgerOptions eo;
  eo.bind_window = absl::Milliseconds(300);
  eo.tick = absl::Milliseconds(20);
  Harness h(TestCluster(8), eo);
  ASSERT_TRUE(h.ok());
  std::vector<std::string> names = NodeNames(8);
  std::vector<pplx::task<Reply>> binds;
  for (int i = 0; i < 3; ++i) {  // 3 of 4 members reach bind
    Json pod = MakePod(GangPod("g", 4, i, 8));
    auto f = CheckFilterReply(h.Post("/filter", testing::FilterBody(pod, names)), names);
    ASSERT_EQ(f.node_names.size(), 1u);
    binds.push_back(
        h.PostAsync("/bind", SerializeBindingArgs({pod["metadata"]["name"], "default",
                                                   pod["metadata"]["uid"], f.node_names[0]})));
  }
  EXPECT_EQ(h.UsedGpus(), 32);
  for (auto& b : binds) {
    Reply r = b.get();  // waits on the response itself
    EXPECT_EQ(r.status, 200);
    auto res = ParseBindingResult(r.body);
    ASSERT_TRUE(res.ok());
    EXPECT_NE(res->error.find("(4 members) to reach bind"), std::string::npos) << res->error;
  }
  EXPECT_TRUE(h.memory().Bindings().empty()) << "no partial gang";
  EXPECT_EQ(h.UsedGpus(), 32) << "the members keep their slots while the gang fills";
}

TEST(HttpTest, CordonDuringPendingGangReplans) {
  Harness h(TestCluster(8));
  ASSERT_TRUE(h.ok());
  std::vector<std::string> names = NodeNames(8);
  Json p0 = MakePod(GangPod("c", 2, 0, 8)), p1 = MakePod(GangPod("c", 2, 1, 8));
  auto f0 = CheckFilterReply(h.Post("/filter", testing::FilterBody(p0, names)), names);
  ASSERT_EQ(f0.node_names.size(), 1u);
  const std::string cordoned = f0.node_names[0];
  ASSERT_TRUE(h.state().SetNodeHealth(cordoned, HealthSource::kKubeCordon, true, "cordon").ok());
  // kube-scheduler no longer offers the cordoned node.
  std::vector<std::string> offered;
  for (const auto& n : names) {
    if (n != cordoned) offered.push_back(n);
  }
  auto g0 = CheckFilterReply(h.Post("/filter", testing::FilterBody(p0, offered)), offered);
  auto g1 = CheckFilterReply(h.Post("/filter", testing::FilterBody(p1, offered)), offered);
  ASSERT_EQ(g0.node_names.size(), 1u);
  ASSERT_EQ(g1.node_names.size(), 1u);
  EXPECT_NE(g0.node_names[0], cordoned);
  auto b0 =
      h.PostAsync("/bind", SerializeBindingArgs({"c-0", "default", "uid-c-0", g0.node_names[0]}));
  auto b1 =
      h.PostAsync("/bind", SerializeBindingArgs({"c-1", "default", "uid-c-1", g1.node_names[0]}));
  EXPECT_EQ(b0.get().body, R"({"Error":""})");
  EXPECT_EQ(b1.get().body, R"({"Error":""})");
}

TEST(HttpTest, HostileRequestsGetClearErrorsAndTheDaemonStaysHealthy) {
  HttpServerOptions ho;
  ho.max_body_bytes = 64 * 1024;
  Harness h(TestCluster(8), {}, ho);
  ASSERT_TRUE(h.ok());
  auto error_of = [](const Reply& r) {
    EXPECT_EQ(r.status, 200);
    return Json::parse(r.body).value("Error", "");
  };
  EXPECT_NE(error_of(h.Post("/filter", "{not json")), "");
  EXPECT_NE(error_of(h.Post("/filter", R"({"Pod":[],"NodeNames":["gpu-node-000"]})")), "");
  EXPECT_NE(error_of(h.Post("/filter", R"({"Pod":{"metadata":{"name":"x"}},"NodeNames":{"a":1}})")),
            "");
  EXPECT_NE(error_of(h.Post("/filter", std::string(100 * 1024, ' '))), "");
  EXPECT_NE(error_of(h.Post("/bind", R"({"PodName":7})")), "");
  EXPECT_EQ(h.Post("/prioritize", "[]").status, 400);
  EXPECT_EQ(h.Post("/preempt", "{").status, 400);
  EXPECT_EQ(h.Post("/nope", "{}").status, 404);
  EXPECT_EQ(h.Get("/filter").status, 405);
  PodOpts absurd;
  absurd.gpus = 1000000;
  EXPECT_NE(error_of(h.Post("/filter", testing::FilterBody(MakePod(absurd), NodeNames(8)))), "");
  // Lowercase keys, as Go would accept them.
  Reply ok = h.Post("/filter",
                    R"({"pod":{"metadata":{"name":"lc","uid":"lc"},"spec":{"containers":null}},)"
                    R"("nodes":null,"nodenames":["gpu-node-001"]})");
  EXPECT_EQ(Json::parse(ok.body)["NodeNames"], Json::array({"gpu-node-001"}));
  EXPECT_EQ(h.Get("/healthz").status, 200);
  EXPECT_EQ(h.Get("/readyz").status, 200);
  Json pod = MakePod(GangPod("after", 2, 0, 4));
  auto f =
      CheckFilterReply(h.Post("/filter", testing::FilterBody(pod, NodeNames(8))), NodeNames(8));
  EXPECT_EQ(f.node_names.size(), 1u);
}

TEST(HttpTest, PrefixAndVerbNamesAreConfigurable) {
  HttpServerOptions ho;
  ho.prefix = "/topogang/";
  ho.filter_verb = "predicates/gpu";
  ho.prioritize_verb = "priorities/gpu";
  Harness h(TestCluster(8), {}, ho);
  ASSERT_TRUE(h.ok());
  Json pod = MakePod(GangPod("v", 1, 0, 1));
  auto f = CheckFilterReply(
      h.Post("/topogang/predicates/gpu", testing::FilterBody(pod, NodeNames(8))), NodeNames(8));
  EXPECT_EQ(f.node_names.size(), 1u);
  EXPECT_EQ(h.Post("/topogang/priorities/gpu", testing::FilterBody(pod, NodeNames(8))).status, 200);
  EXPECT_EQ(h.Post("/filter", testing::FilterBody(pod, NodeNames(8))).status, 404);
}

TEST(HttpTest, PreemptAnswersMetaVictimsOnly) {
  Harness h(TestCluster(8));
  ASSERT_TRUE(h.ok());
  Reply r = h.Post(
      "/preempt",
      R"({"Pod":{"metadata":{"name":"p"}},"NodeNameToVictims":null,)"
      R"("NodeNameToMetaVictims":{"gpu-node-001":{"Pods":[{"UID":"v1"}],"NumPDBViolations":0}}})");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(
      r.body,
      R"({"NodeNameToMetaVictims":{"gpu-node-001":{"Pods":[{"UID":"v1"}],"NumPDBViolations":0}}})");
}

}  // namespace
}  // namespace topogang
