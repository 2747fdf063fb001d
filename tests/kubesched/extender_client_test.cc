// The extender client against a recording fake extender: request bodies and headers as
// kube-scheduler sends them, and how replies (errors, unknown nodes, odd keys, timeouts) are read.
#include "tests/kubesched/extender_client.h"

#include <gtest/gtest.h>

#include <future>

#include "tests/kubesched/fake_extender.h"

namespace topogang::kubesched {
namespace {

using testing::ExtenderReply;
using testing::ExtenderRequest;
using testing::FakeExtender;

PodPtr GpuPod() {
  return *ParsePod(Json::parse(R"({"metadata": {"name": "gpu-pod", "namespace": "team-a",
      "uid": "u-1", "annotations": {"note": "a<b & c>d"}},
      "spec": {"containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})"));
}

std::vector<NodeState> Nodes(std::initializer_list<const char*> names) {
  std::vector<NodeState> out;
  for (const char* n : names) {
    NodeState s;
    s.node = *ParseNode({{"metadata", {{"name", n}}}, {"spec", Json::object()}}, 110);
    out.push_back(s);
  }
  return out;
}

std::vector<const NodeState*> Ptrs(const std::vector<NodeState>& v) {
  std::vector<const NodeState*> out;
  for (const NodeState& s : v) out.push_back(&s);
  return out;
}

class ExtenderClientTest : public ::testing::Test {
 protected:
  ExtenderClientTest()
      : ext_(
            [this](const ExtenderRequest& r) {
              std::lock_guard<std::mutex> lock(mu_);
              return replies_.count(r.verb) ? replies_[r.verb] : ExtenderReply{404, ""};
            },
            "/topogang/") {}

  ExtenderClient Client(ExtenderConfig c = {}) {
    c.url_prefix = ext_.url();
    return ExtenderClient(c, &clock_);
  }
  // The urlPrefix without its trailing '/', as it appears in kube-scheduler's messages.
  std::string Url() {
    std::string u = ext_.url();
    while (!u.empty() && u.back() == '/') u.pop_back();
    return u;
  }
  void Reply(const std::string& verb, int status, const std::string& body) {
    std::lock_guard<std::mutex> lock(mu_);
    replies_[verb] = {status, body};
  }

  ScaledClock clock_{1.0};
  std::mutex mu_;
  std::map<std::string, ExtenderReply> replies_;
  FakeExtender ext_;
};

TEST_F(ExtenderClientTest, FilterSendsNodeNamesTheWayKubeSchedulerDoes) {
  Reply("filter", 200, R"({"NodeNames":["n2"],"FailedNodes":{"n1":"no room"},
                           "FailedAndUnresolvableNodes":null,"Error":""})");
  ExtenderClient c = Client();
  auto nodes = Nodes({"n1", "n2"});
  auto res = c.Filter(*GpuPod(), Ptrs(nodes));
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->nodes, std::vector<std::string>{"n2"});
  EXPECT_EQ(res->failed.at("n1"), "no room");
  ASSERT_EQ(ext_.requests().size(), 1u);
  const ExtenderRequest r = ext_.requests()[0];
  EXPECT_EQ(r.path, "/topogang/filter");  // trailing '/' of urlPrefix dropped, then "/" + verb
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.user_agent, "Go-http-client/1.1");
  EXPECT_EQ(r.accept_encoding, "gzip");
  // Go field order, Nodes null, and Go's HTML-safe escaping inside the Pod.
  EXPECT_EQ(r.body.rfind("{\"Pod\":{\"metadata\":", 0), 0u) << r.body;
  EXPECT_NE(r.body.find(",\"Nodes\":null,\"NodeNames\":[\"n1\",\"n2\"]}"), std::string::npos);
  EXPECT_NE(r.body.find("a\\u003cb \\u0026 c\\u003ed"), std::string::npos);
  EXPECT_EQ(Json::parse(r.body)["Pod"]["metadata"]["annotations"]["note"], "a<b & c>d");
}

TEST_F(ExtenderClientTest, FilterWithFullNodesWhenNotNodeCacheCapable) {
  Reply("filter", 200, R"({"Nodes":{"items":[{"metadata":{"name":"n1"}}]}})");
  ExtenderConfig cfg;
  cfg.node_cache_capable = false;
  ExtenderClient c = Client(cfg);
  auto nodes = Nodes({"n1", "n2"});
  auto res = c.Filter(*GpuPod(), Ptrs(nodes));
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->nodes, std::vector<std::string>{"n1"});
  Json body = Json::parse(ext_.requests()[0].body);
  EXPECT_TRUE(body["NodeNames"].is_null());
  EXPECT_EQ(body["Nodes"]["metadata"], Json::object());
  EXPECT_EQ(body["Nodes"]["items"].size(), 2u);
}

TEST_F(ExtenderClientTest, FilterFailuresAreErrors) {
  ExtenderClient c = Client();
  auto nodes = Nodes({"n1"});
  Reply("filter", 200, R"({"Error":"topology plan failed"})");
  EXPECT_EQ(c.Filter(*GpuPod(), Ptrs(nodes)).status().message(), "topology plan failed");
  Reply("filter", 200, R"({"NodeNames":["n9"]})");
  EXPECT_EQ(c.Filter(*GpuPod(), Ptrs(nodes)).status().message(),
            "extender \"" + ext_.url() +
                "\" claims a filtered node \"n9\" which is not found in "
                "the input node list");
  Reply("filter", 500, "{}");
  EXPECT_EQ(c.Filter(*GpuPod(), Ptrs(nodes)).status().message(),
            "failed filter with extender at URL " + Url() + "/filter, code 500");
  Reply("filter", 200, "");
  EXPECT_FALSE(c.Filter(*GpuPod(), Ptrs(nodes)).ok());
  // Lower-case keys are accepted (Go decodes case-insensitively); no list passes no node.
  Reply("filter", 200, R"({"nodenames":["n1"],"failednodes":{}})");
  EXPECT_EQ(c.Filter(*GpuPod(), Ptrs(nodes))->nodes, std::vector<std::string>{"n1"});
  Reply("filter", 200, R"({"FailedNodes":{}})");
  EXPECT_TRUE(c.Filter(*GpuPod(), Ptrs(nodes))->nodes.empty());
}

TEST_F(ExtenderClientTest, PrioritizeScoresAndBadScores) {
  ExtenderClient c = Client();
  auto nodes = Nodes({"n1", "n2"});
  Reply("prioritize", 200, R"([{"Host":"n1","Score":3},{"host":"n2","score":10}])");
  auto res = c.Prioritize(*GpuPod(), Ptrs(nodes));
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->size(), 2u);
  EXPECT_EQ((*res)[1].host, "n2");
  EXPECT_EQ((*res)[1].score, 10);
  Reply("prioritize", 200, R"([{"Host":"n1","Score":3.0}])");  // Go rejects a float for int64
  EXPECT_FALSE(c.Prioritize(*GpuPod(), Ptrs(nodes)).ok());
  ExtenderConfig none;
  none.prioritize_verb = "";
  EXPECT_EQ(Client(none).Prioritize(*GpuPod(), Ptrs(nodes))->size(), 2u);  // zeros, no request
  EXPECT_EQ(ext_.count("prioritize"), 2);
}

TEST_F(ExtenderClientTest, BindBodyAndErrors) {
  ExtenderClient c = Client();
  auto bind = [&] {
    std::promise<absl::Status> p;
    c.BindAsync(*GpuPod(), "n7", [&](absl::Status s) { p.set_value(s); });
    return p.get_future().get();
  };
  Reply("bind", 200, R"({"Error":""})");
  EXPECT_TRUE(bind().ok());
  EXPECT_EQ(ext_.requests().back().body,
            R"({"PodName":"gpu-pod","PodNamespace":"team-a","PodUID":"u-1","Node":"n7"})");
  Reply("bind", 200, R"({"Error":"gang not complete"})");
  EXPECT_EQ(bind().message(), "gang not complete");
  Reply("bind", 201, R"({"Error":""})");  // only 200 is a reply
  EXPECT_EQ(bind().message(), "failed bind with extender at URL " + Url() + "/bind, code 201");
}

TEST_F(ExtenderClientTest, HttpTimeoutIsVirtualTime) {
  std::atomic<bool> release{false};
  FakeExtender slow([&](const ExtenderRequest&) {
    while (!release) absl::SleepFor(absl::Milliseconds(2));
    return ExtenderReply{200, R"({"NodeNames":[]})"};
  });
  ScaledClock fast(100.0);  // 5 s of kube-scheduler time is 50 ms here
  ExtenderConfig cfg;
  cfg.url_prefix = slow.url();
  ExtenderClient c(cfg, &fast);
  auto nodes = Nodes({"n1"});
  const absl::Time start = absl::Now();
  auto res = c.Filter(*GpuPod(), Ptrs(nodes));
  const absl::Duration took = absl::Now() - start;
  release = true;
  ASSERT_FALSE(res.ok());
  EXPECT_NE(res.status().message().find("Client.Timeout exceeded"), std::string::npos)
      << res.status();
  EXPECT_GE(took, absl::Milliseconds(40));
  EXPECT_LT(took, absl::Seconds(2));
}

TEST(ExtenderInterest, ManagedResourcesDecide) {
  ScaledClock clock(1.0);
  ExtenderConfig cfg;
  cfg.url_prefix = "http://127.0.0.1:1";
  ExtenderClient gpu_only(cfg, &clock);
  EXPECT_TRUE(gpu_only.IsInterested(*GpuPod()));
  PodPtr cpu = *ParsePod(Json::parse(R"({"metadata": {"name": "c"}, "spec": {"containers": [
      {"name": "m", "resources": {"requests": {"cpu": "1"}}}]}})"));
  EXPECT_FALSE(gpu_only.IsInterested(*cpu));
  PodPtr zero = *ParsePod(Json::parse(R"({"metadata": {"name": "z"}, "spec": {"initContainers": [
      {"name": "i", "resources": {"requests": {"nvidia.com/gpu": "0"}}}]}})"));
  EXPECT_TRUE(gpu_only.IsInterested(*zero));  // the key counts, even with 0
  cfg.managed_resources.clear();
  EXPECT_TRUE(ExtenderClient(cfg, &clock).IsInterested(*cpu));
  EXPECT_EQ(GoJsonEscape("\"<&>\xE2\x80\xA8\""), "\"\\u003c\\u0026\\u003e\\u2028\"");
}

}  // namespace
}  // namespace topogang::kubesched
