// Over 500 lines: one suite for /metrics, every family checked against the same scrape helpers.
// GET /metrics on the real extender server over loopback: every scrape is checked against the
// Prometheus text format (prom_text.h) and the numbers against what the test drove through the
// verbs and the model. The last test scrapes the topogangd binary itself (main.cc wiring).
#include "daemon/metrics.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <future>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/free_port.h"
#include "extender/http_server.h"
#include "tests/support/harness.h"
#include "tests/support/prom_text.h"

namespace topogang {
namespace {

using testing::GangPod;
using testing::Harness;
using testing::MakePod;
using testing::NodeNames;
using testing::PromText;
using testing::Reply;
using testing::TestCluster;
using Labels = std::map<std::string, std::string>;

// One scrape over HTTP: status 200, the exposition content type, and a body that parses.
PromText Scrape(const std::string& base_url) {
  web::http::client::http_client client(base_url);
  auto r = client.request(web::http::methods::GET, "/metrics").get();
  EXPECT_EQ(r.status_code(), 200);
  EXPECT_EQ(r.headers().content_type(), "text/plain; version=0.0.4; charset=utf-8");
  std::string body = r.extract_utf8string(true).get();
  auto parsed = PromText::Parse(body);
  EXPECT_TRUE(parsed.ok()) << parsed.status() << "\n" << body;
  return parsed.ok() ? *std::move(parsed) : PromText();
}
PromText Scrape(Harness& h) { return Scrape(h.server().BaseUrl()); }

double Requests(const PromText& m, const std::string& verb, const std::string& result) {
  return m.Get("topogang_extender_requests_total", {{"verb", verb}, {"result", result}});
}
double RequestsOfVerb(const PromText& m, const std::string& verb) {
  double total = 0;
  for (const auto& s : m.samples()) {
    if (s.name == "topogang_extender_requests_total" && s.labels.at("verb") == verb) {
      total += s.value;
    }
  }
  return total;
}
double Latencies(const PromText& m, const std::string& verb) {
  return m.Get("topogang_extender_request_duration_seconds_count", {{"verb", verb}});
}
double Event(const PromText& m, const std::string& event) {
  return m.Get("topogang_gang_events_total", {{"event", event}});
}

std::string BindBody(const Json& pod, const std::string& node) {
  return SerializeBindingArgs({pod["metadata"]["name"], "default", pod["metadata"]["uid"], node});
}

// The node a filter reply passes (exactly one for a gang member), "" otherwise.
std::string PassedNode(const Reply& r) {
  auto f = ParseFilterResult(r.body);
  return f.ok() && f->node_names.size() == 1 ? f->node_names[0] : "";
}

TEST(MetricsTest, EveryFamilyIsDescribedAndStartsAtZero) {
  Harness h(TestCluster(8));
  ASSERT_TRUE(h.ok());
  PromText m = Scrape(h);
  const std::map<std::string, std::string> want = {
      {"topogang_extender_requests_total", "counter"},
      {"topogang_extender_request_duration_seconds", "histogram"},
      {"topogang_gang_events_total", "counter"},
      {"topogang_gangs", "gauge"},
      {"topogang_held_binds", "gauge"},
      {"topogang_gpus", "gauge"},
      {"topogang_nodes", "gauge"},
      {"topogang_leader", "gauge"},
      {"topogang_ready", "gauge"},
      {"topogang_model_synced", "gauge"},
      {"topogang_build_info", "gauge"},
      {"topogang_queue_gangs", "gauge"},
      {"topogang_queue_longest_wait_seconds", "gauge"},
  };
  for (const auto& [name, type] : want) {
    auto it = m.families().find(name);
    ASSERT_NE(it, m.families().end()) << name;
    EXPECT_EQ(it->second.type, type) << name;
    EXPECT_FALSE(it->second.help.empty()) << name;
  }
  for (const char* verb : {"filter", "prioritize", "bind", "preempt"}) {
    for (const char* result : {"ok", "error", "bad_request", "standby"}) {
      EXPECT_EQ(Requests(m, verb, result), 0) << verb << " " << result;
    }
    EXPECT_EQ(Latencies(m, verb), 0) << verb;
    EXPECT_EQ(m.Get("topogang_extender_request_duration_seconds_bucket",
                    {{"verb", verb}, {"le", "+Inf"}}),
              0);
  }
  for (const char* event : {"reserve", "bind", "bind_failed", "expire", "unschedulable"}) {
    EXPECT_EQ(Event(m, event), 0) << event;
  }
  EXPECT_EQ(m.Get("topogang_gpus", {{"state", "free"}}), 64);
  EXPECT_EQ(m.Get("topogang_gpus", {{"state", "allocated"}}), 0);
  EXPECT_EQ(m.Get("topogang_nodes", {{"state", "healthy"}}), 8);
  EXPECT_EQ(m.Get("topogang_leader"), 1);
  EXPECT_EQ(m.Get("topogang_ready"), 1);
  EXPECT_EQ(m.Get("topogang_model_synced"), 1);
  for (const char* size : {"large", "small"}) {
    EXPECT_EQ(m.Get("topogang_queue_gangs", {{"size", size}}), 0) << size;
    EXPECT_EQ(m.Get("topogang_queue_longest_wait_seconds", {{"size", size}}), 0) << size;
  }
  int build_info = 0;
  for (const auto& s : m.samples()) {
    if (s.name != "topogang_build_info") continue;
    ++build_info;
    EXPECT_EQ(s.value, 1);
    EXPECT_FALSE(s.labels.at("version").empty());
    EXPECT_NE(s.labels.at("version"), "unknown");
  }
  EXPECT_EQ(build_info, 1);
}

TEST(MetricsTest, GangNoFitAndBadRequestsAreCounted) {
  Harness h(TestCluster(8));
  ASSERT_TRUE(h.ok());
  const std::vector<std::string> names = NodeNames(8);

  // A 2 x 8 gang: both members filter (the first reserves), both bind at the barrier.
  Json p0 = MakePod(GangPod("g", 2, 0, 8)), p1 = MakePod(GangPod("g", 2, 1, 8));
  const std::string n0 = PassedNode(h.Post("/filter", testing::FilterBody(p0, names)));
  ASSERT_FALSE(n0.empty());
  {
    PromText m = Scrape(h);
    EXPECT_EQ(m.Get("topogang_gangs", {{"state", "reserved"}}), 1);
    EXPECT_EQ(m.Get("topogang_gangs", {{"state", "running"}}), 0);
    EXPECT_EQ(m.Get("topogang_gpus", {{"state", "allocated"}}), 16) << "the reservation holds";
    EXPECT_EQ(Event(m, "reserve"), 1);
  }
  const std::string n1 = PassedNode(h.Post("/filter", testing::FilterBody(p1, names)));
  ASSERT_FALSE(n1.empty());
  EXPECT_EQ(h.Post("/prioritize", testing::FilterBody(p0, names)).status, 200);
  auto b0 = h.PostAsync("/bind", BindBody(p0, n0));
  Reply b1 = h.Post("/bind", BindBody(p1, n1));
  EXPECT_EQ(b1.body, R"({"Error":""})");
  EXPECT_EQ(b0.get().body, R"({"Error":""})");

  // A gang that cannot fit (9 x 8 on 64 GPUs): answered normally, counted as unschedulable.
  Reply nofit = h.Post("/filter", testing::FilterBody(MakePod(GangPod("big", 9, 0, 8)), names));
  EXPECT_EQ(nofit.status, 200);
  EXPECT_EQ(PassedNode(nofit), "");
  // Unparseable bodies, a GET on a verb, and a pod the verb rejects (gang member without GPUs).
  EXPECT_EQ(h.Post("/filter", "{not json").status, 200);
  EXPECT_EQ(h.Get("/filter").status, 405);
  EXPECT_EQ(h.Post("/preempt", "[]").status, 400);
  Reply bad_pod = h.Post("/filter", testing::FilterBody(MakePod(GangPod("z", 2, 0, 0)), names));
  EXPECT_NE(ParseFilterResult(bad_pod.body)->error, "");

  PromText m = Scrape(h);
  EXPECT_EQ(Requests(m, "filter", "ok"), 3);
  EXPECT_EQ(Requests(m, "filter", "bad_request"), 2);
  EXPECT_EQ(Requests(m, "filter", "error"), 1);
  EXPECT_EQ(Requests(m, "prioritize", "ok"), 1);
  EXPECT_EQ(Requests(m, "bind", "ok"), 2);
  EXPECT_EQ(Requests(m, "bind", "error"), 0);
  EXPECT_EQ(Requests(m, "preempt", "bad_request"), 1);
  // Every answered request has one latency observation.
  for (const char* verb : {"filter", "prioritize", "bind", "preempt"}) {
    EXPECT_EQ(Latencies(m, verb), RequestsOfVerb(m, verb)) << verb;
  }
  EXPECT_EQ(Latencies(m, "filter"), 6);
  EXPECT_GT(m.Get("topogang_extender_request_duration_seconds_sum", {{"verb", "filter"}}), 0);
  EXPECT_LT(m.Get("topogang_extender_request_duration_seconds_sum", {{"verb", "filter"}}), 30);

  EXPECT_EQ(m.Get("topogang_gangs", {{"state", "running"}}), 1);
  EXPECT_EQ(m.Get("topogang_gangs", {{"state", "reserved"}}), 0);
  EXPECT_EQ(m.Get("topogang_held_binds"), 0);
  EXPECT_EQ(m.Get("topogang_gpus", {{"state", "allocated"}}), 16);
  EXPECT_EQ(m.Get("topogang_gpus", {{"state", "free"}}), 48);
  EXPECT_EQ(Event(m, "reserve"), 1);
  EXPECT_EQ(Event(m, "bind"), 1);
  EXPECT_EQ(Event(m, "unschedulable"), 1);
  EXPECT_EQ(Event(m, "expire"), 0);
  EXPECT_EQ(Event(m, "bind_failed"), 0);
}

TEST(MetricsTest, AnsweredHeldBindCountsAFailedBindWithItsWaitAndNoExpiry) {
  GangLedgerOptions eo;
  eo.bind_window = absl::Milliseconds(300);
  eo.tick = absl::Milliseconds(20);
  Harness h(TestCluster(8), eo);
  ASSERT_TRUE(h.ok());
  const std::vector<std::string> names = NodeNames(8);
  Json p0 = MakePod(GangPod("g", 2, 0, 8));
  const std::string n0 = PassedNode(h.Post("/filter", testing::FilterBody(p0, names)));
  ASSERT_FALSE(n0.empty());
  Reply r = h.Post("/bind", BindBody(p0, n0));  // the other member never comes
  ASSERT_NE(ParseBindingResult(r.body)->error, "");

  PromText m = Scrape(h);
  EXPECT_EQ(Requests(m, "bind", "error"), 1);
  EXPECT_EQ(Requests(m, "bind", "ok"), 0);
  EXPECT_EQ(Event(m, "expire"), 0) << "the reservation stays while its members come";
  EXPECT_EQ(m.Get("topogang_gangs", {{"state", "reserved"}}), 1);
  EXPECT_EQ(m.Get("topogang_gpus", {{"state", "allocated"}}), 16);
  // The bind's latency is its whole wait at the barrier.
  EXPECT_GE(m.Get("topogang_extender_request_duration_seconds_sum", {{"verb", "bind"}}), 0.3);
  EXPECT_EQ(m.Get("topogang_extender_request_duration_seconds_bucket",
                  {{"verb", "bind"}, {"le", "0.25"}}),
            0);
  EXPECT_EQ(m.Get("topogang_extender_request_duration_seconds_bucket",
                  {{"verb", "bind"}, {"le", "+Inf"}}),
            1);
}

TEST(MetricsTest, HeldBindsAreVisibleWhileTheyWait) {
  Harness h(TestCluster(8));
  ASSERT_TRUE(h.ok());
  Json p0 = MakePod(GangPod("g", 2, 0, 8));
  const std::string n0 = PassedNode(h.Post("/filter", testing::FilterBody(p0, NodeNames(8))));
  ASSERT_FALSE(n0.empty());
  // Straight to the service, so the bind is held when Bind returns (no race with the scrape).
  std::promise<std::string> failed;
  h.service().Bind({"g-0", "default", "uid-g-0", n0},
                   [&](const ExtenderBindingResult& r) { failed.set_value(r.error); });
  EXPECT_EQ(Scrape(h).Get("topogang_held_binds"), 1);
  h.ledger().FailHeldBinds("test over");
  EXPECT_EQ(failed.get_future().get(), "test over");
  PromText m = Scrape(h);
  EXPECT_EQ(m.Get("topogang_held_binds"), 0);
  EXPECT_EQ(RequestsOfVerb(m, "bind"), 0) << "only HTTP requests are counted";
}

TEST(MetricsTest, NodeAndGpuHealthFollowTheModel) {
  Harness h(TestCluster(8));
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(h.state().SetNodeHealth("gpu-node-007", HealthSource::kKubeCordon, true, "").ok());
  ASSERT_TRUE(h.state().SetNodeHealth("gpu-node-006", HealthSource::kKubeCordon, true, "").ok());
  ASSERT_TRUE(h.state().SetNodeHealth("gpu-node-006", HealthSource::kKubeNotReady, true, "").ok());
  ASSERT_TRUE(h.state().SetNodeHealth("gpu-node-005", HealthSource::kAdminDrain, true, "").ok());
  ASSERT_TRUE(h.state().SetGpuHealth("gpu-node-004", 3, true, "xid 79").ok());
  PromText m = Scrape(h);
  EXPECT_EQ(m.Get("topogang_nodes", {{"state", "healthy"}}), 5);
  EXPECT_EQ(m.Get("topogang_nodes", {{"state", "unhealthy"}}), 1) << "NotReady outranks a cordon";
  EXPECT_EQ(m.Get("topogang_nodes", {{"state", "cordoned"}}), 2);
  EXPECT_EQ(m.Get("topogang_gpus", {{"state", "unhealthy"}}), 3 * 8 + 1);
  EXPECT_EQ(m.Get("topogang_gpus", {{"state", "free"}}), 64 - 25);
  EXPECT_EQ(Event(m, "node_unhealthy"), 3);
  EXPECT_EQ(Event(m, "gpu_unhealthy"), 1);

  ASSERT_TRUE(h.state().SetNodeHealth("gpu-node-007", HealthSource::kKubeCordon, false, "").ok());
  ASSERT_TRUE(h.state().SetGpuHealth("gpu-node-004", 3, false, "").ok());
  m = Scrape(h);
  EXPECT_EQ(m.Get("topogang_nodes", {{"state", "healthy"}}), 6);
  EXPECT_EQ(m.Get("topogang_nodes", {{"state", "cordoned"}}), 1);
  EXPECT_EQ(m.Get("topogang_gpus", {{"state", "unhealthy"}}), 16);
  EXPECT_EQ(Event(m, "node_healthy"), 1);
}

// Hot spares (#13): topogang_spare_nodes{tier,state} partitions the pool (idle, in_use,
// unhealthy), labelled with the tier only; no series at all while spares are off.
TEST(MetricsTest, SpareNodesByState) {
  Harness h(TestCluster(8));  // two racks of four nodes
  ASSERT_TRUE(h.ok());
  auto spares = [](const PromText& m, const char* state) {
    return m.Get("topogang_spare_nodes", {{"tier", "rack"}, {"state", state}});
  };
  PromText m = Scrape(h);
  for (const auto& s : m.samples()) EXPECT_NE(s.name, "topogang_spare_nodes") << "spares are off";
  SpareOptions one;
  one.per_domain = 1;  // per domain of the tier right above the nodes (rack)
  h.state().SetSpareOptions(one);
  h.state().SetMarkedSpares({"gpu-node-004"});  // rack-001's one spare, by label
  m = Scrape(h);
  ASSERT_EQ(m.families().count("topogang_spare_nodes"), 1u);
  EXPECT_EQ(m.families().at("topogang_spare_nodes").type, "gauge");
  EXPECT_EQ(spares(m, "idle"), 2) << "gpu-node-003 (rack-000's last idle node) and gpu-node-004";
  EXPECT_EQ(spares(m, "in_use"), 0);
  EXPECT_EQ(spares(m, "unhealthy"), 0);
  // The labelled spare fails (it stays a spare: the label says so); the other takes a
  // replacement member.
  ASSERT_TRUE(h.state().SetNodeHealth("gpu-node-004", HealthSource::kKubeNotReady, true, "").ok());
  h.state().With([&](GangScheduler& s) {
    const int n = s.cluster().FindNode("gpu-node-003");
    GangSpec g;
    g.name = "repl";
    g.gpus_per_member = 2;
    Placement p;
    p.members.push_back(
        MemberPlacement{n, {s.cluster().node(n).gpu_begin, s.cluster().node(n).gpu_begin + 1}});
    EXPECT_TRUE(s.Adopt(g, p, GangState::kRunning, absl::Now()).ok());
    return 0;
  });
  m = Scrape(h);
  EXPECT_EQ(spares(m, "idle"), 0);
  EXPECT_EQ(spares(m, "in_use"), 1);
  EXPECT_EQ(spares(m, "unhealthy"), 1);
}

// QueueOptions::large_in_order_overload_backlog: the gauge exists only with the option, reads 0
// while the waiting large gangs ask for at most that share of the cluster, 1 once they asked for
// more (and for its memory after).
TEST(MetricsTest, TheQueuesLargeGangOverloadIsVisibleWithItsOption) {
  {
    Harness plain(TestCluster(8));
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(Scrape(plain).families().count("topogang_queue_large_overload"), 0u);
  }
  GangLedgerOptions o;
  o.queue.hold_min_gpus = 16;
  o.queue.large_gangs_in_order = true;
  o.queue.large_in_order_min_share = 0.125;
  o.queue.large_in_order_overload_backlog = 0.5;  // of 64 GPUs: 32
  Harness h(TestCluster(8), o);
  ASSERT_TRUE(h.ok());
  const std::vector<std::string> names = NodeNames(8);
  ASSERT_EQ(Scrape(h).families().at("topogang_queue_large_overload").type, "gauge");
  EXPECT_EQ(Scrape(h).Get("topogang_queue_large_overload"), 0);
  // 5 x 8 GPUs reserved leaves 24 free; a second 5 x 8 gang waits, 40 GPUs > 32.
  ASSERT_FALSE(
      PassedNode(h.Post("/filter", testing::FilterBody(MakePod(GangPod("g", 5, 0, 8)), names)))
          .empty());
  EXPECT_EQ(Scrape(h).Get("topogang_queue_large_overload"), 0) << "nothing waits yet";
  EXPECT_EQ(
      PassedNode(h.Post("/filter", testing::FilterBody(MakePod(GangPod("w", 5, 0, 8)), names))),
      "");
  EXPECT_EQ(Scrape(h).Get("topogang_queue_large_overload"), 1);
}

// What waits in the admission queue, by size (queue.hold_min_gpus 16 here), and the longest
// wait of each size: the large gangs' is what an operator alerts on (issue #12's 256+ wait).
TEST(MetricsTest, TheQueuesWaitingGangsAndTheirLongestWaitsBySize) {
  GangLedgerOptions o;
  o.queue.hold_min_gpus = 16;
  Harness h(TestCluster(8), o);
  ASSERT_TRUE(h.ok());
  const std::vector<std::string> names = NodeNames(8);
  // 7 x 8 GPUs reserved leaves one free node: a 2 x 8 gang (large) and a 3 x 4 one (small)
  // wait; a second large one asks later.
  ASSERT_FALSE(
      PassedNode(h.Post("/filter", testing::FilterBody(MakePod(GangPod("g", 7, 0, 8)), names)))
          .empty());
  const absl::Time asked = absl::Now();
  for (const auto& [name, members, gpus] :
       {std::tuple{"big", 2, 8}, std::tuple{"small", 3, 4}, std::tuple{"big2", 2, 8}}) {
    EXPECT_EQ(PassedNode(h.Post(
                  "/filter", testing::FilterBody(MakePod(GangPod(name, members, 0, gpus)), names))),
              "")
        << name;
  }
  absl::SleepFor(absl::Milliseconds(50));
  PromText m = Scrape(h);
  const absl::Duration since = absl::Now() - asked;
  EXPECT_EQ(m.Get("topogang_queue_gangs", {{"size", "large"}}), 2);
  EXPECT_EQ(m.Get("topogang_queue_gangs", {{"size", "small"}}), 1);
  for (const char* size : {"large", "small"}) {
    const double waited = m.Get("topogang_queue_longest_wait_seconds", {{"size", size}});
    EXPECT_GE(waited, 0.05) << size;
    EXPECT_LE(waited, absl::ToDoubleSeconds(since)) << size;
  }
  EXPECT_NE(m.families().at("topogang_queue_gangs").help.find("hold_min_gpus (16)"),
            std::string::npos)
      << m.families().at("topogang_queue_gangs").help;
}

TEST(MetricsTest, StandbyRepliesAndLeadershipAreVisible) {
  Harness h(TestCluster(8));
  ASSERT_TRUE(h.ok());
  h.server().SetLeader(false);
  h.server().SetReady(false);
  h.metrics().SetModelSynced(false);
  Json pod = MakePod(GangPod("g", 2, 0, 8));
  EXPECT_NE(
      ParseFilterResult(h.Post("/filter", testing::FilterBody(pod, NodeNames(8))).body)->error, "");
  PromText m = Scrape(h);  // a standby serves /metrics too
  EXPECT_EQ(m.Get("topogang_leader"), 0);
  EXPECT_EQ(m.Get("topogang_ready"), 0);
  EXPECT_EQ(m.Get("topogang_model_synced"), 0);
  EXPECT_EQ(Requests(m, "filter", "standby"), 1);
  EXPECT_EQ(Requests(m, "filter", "ok"), 0);
  EXPECT_EQ(Event(m, "reserve"), 0) << "a standby reserves nothing";
  h.server().SetLeader(true);
  EXPECT_EQ(Scrape(h).Get("topogang_leader"), 1);
}

TEST(MetricsTest, OversizedBodyIsCountedOnce) {
  HttpServerOptions ho;
  ho.max_body_bytes = 1000;
  Harness h(TestCluster(8), {}, ho);
  ASSERT_TRUE(h.ok());
  Reply r = h.Post("/filter", std::string(5000, ' '));
  EXPECT_NE(ParseFilterResult(r.body)->error.find("exceeds the limit"), std::string::npos);
  PromText m = Scrape(h);
  EXPECT_EQ(Requests(m, "filter", "too_large"), 1);
  EXPECT_EQ(RequestsOfVerb(m, "filter"), 1);
}

TEST(MetricsTest, ConcurrentRequestsAndScrapesAgree) {
  Harness h(TestCluster(8));
  ASSERT_TRUE(h.ok());
  const std::vector<std::string> names = NodeNames(8);
  constexpr int kRequests = 200;
  std::vector<pplx::task<Reply>> replies;
  double last = 0;
  for (int i = 0; i < kRequests; ++i) {
    testing::PodOpts o;
    o.name = absl::StrCat("cpu-", i);
    o.gpus = 0;
    replies.push_back(h.PostAsync("/filter", testing::FilterBody(MakePod(o), names)));
    if (i % 40 == 0) {  // scrapes race with the requests in flight: counters never go back
      double now = Requests(Scrape(h), "filter", "ok");
      EXPECT_GE(now, last);
      last = now;
    }
  }
  for (auto& r : replies) EXPECT_EQ(r.get().status, 200);
  PromText m = Scrape(h);
  EXPECT_EQ(Requests(m, "filter", "ok"), kRequests);
  EXPECT_EQ(Latencies(m, "filter"), kRequests);
}

// The checker itself must catch broken expositions, or the tests above prove nothing.
TEST(MetricsTest, FormatCheckerRejectsBrokenExpositions) {
  const std::string good =
      "# HELP x_total Things.\n# TYPE x_total counter\nx_total{a=\"1\",b=\"q\\\"\\n\\\\\"} 3\n"
      "# TYPE h histogram\nh_bucket{le=\"0.1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.3\n"
      "h_count 2\n# TYPE g gauge\ng -1.5e-3 1700000000000\ng{s=\"x\"} NaN\n";
  auto ok = PromText::Parse(good);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->Get("x_total", {{"a", "1"}, {"b", "q\"\n\\"}}), 3);
  EXPECT_EQ(ok->Get("g"), -1.5e-3);
  EXPECT_EQ(ok->Get("h_count"), 2);
  EXPECT_FALSE(ok->Value("missing").has_value());

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"bad name", "1x 3\n"},
      {"bad label name", "x{1a=\"v\"} 3\n"},
      {"unterminated label", "x{a=\"v} 3\n"},
      {"bad escape", "x{a=\"\\t\"} 3\n"},
      {"bad value", "x 3.0.1\n"},
      {"no value", "x\n"},
      {"no final newline", "x 3"},
      {"duplicate series", "x{a=\"1\"} 3\nx{a=\"1\"} 4\n"},
      {"unknown type", "# TYPE x countr\nx 1\n"},
      {"two types", "# TYPE x counter\n# TYPE x counter\nx 1\n"},
      {"type after samples", "x 1\n# TYPE x counter\n"},
      {"interleaved", "# TYPE x gauge\n# TYPE y gauge\nx 1\ny 1\nx{a=\"b\"} 2\n"},
      {"negative counter", "# TYPE x counter\nx -1\n"},
      {"no +Inf", "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n"},
      {"decreasing buckets",
       "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"},
      {"+Inf != count",
       "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 2\n"},
      {"no sum", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n"},
      {"bucket without le", "# TYPE h histogram\nh_bucket 1\nh_sum 1\nh_count 1\n"},
      {"le not increasing",
       "# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} "
       "1\nh_sum 1\nh_count 1\n"},
  };
  for (const auto& [why, text] : bad) {
    EXPECT_FALSE(PromText::Parse(text).ok()) << why;
  }
}

TEST(MetricsTest, TopogangdServesMetrics) {
  int port = PickFreePort();
  ASSERT_GT(port, 0);
  const std::string cluster = testing::SourceDir() + "/examples/clusters/lab-64.yaml";
  pid_t pid = testing::StartTopogangd(
      {"--cluster", cluster, "--http-port", std::to_string(port), "--bind-address", "127.0.0.1"},
      port);
  ASSERT_GT(pid, 0) << "topogangd did not come up";
  const std::string base = absl::StrCat("http://127.0.0.1:", port);
  {
    web::http::client::http_client client(base);
    web::http::http_request req(web::http::methods::POST);
    req.set_request_uri("/filter");
    req.set_body(testing::FilterBody(MakePod(GangPod("demo", 2, 0, 8)),
                                     {"lab-a1", "lab-a2", "lab-a3", "lab-a4", "lab-b1", "lab-b2",
                                      "lab-b3", "lab-b4"}),
                 "application/json");
    EXPECT_EQ(client.request(req).get().status_code(), 200);
  }
  PromText m = Scrape(base);
  EXPECT_EQ(m.Get("topogang_leader"), 1);
  EXPECT_EQ(m.Get("topogang_ready"), 1);
  EXPECT_EQ(m.Get("topogang_model_synced"), 1) << "standalone: the cluster file is the model";
  EXPECT_EQ(Requests(m, "filter", "ok"), 1);
  EXPECT_EQ(Event(m, "reserve"), 1);
  EXPECT_EQ(m.Get("topogang_gangs", {{"state", "reserved"}}), 1);
  EXPECT_EQ(m.Get("topogang_gpus", {{"state", "allocated"}}), 16);
  EXPECT_GT(m.Get("topogang_gpus", {{"state", "free"}}), 0);
  EXPECT_FALSE(m.Value("topogang_agent_streams").has_value()) << "no gRPC server";
  kill(pid, SIGTERM);
  testing::ExpectCleanExit(pid);
}

}  // namespace
}  // namespace topogang
