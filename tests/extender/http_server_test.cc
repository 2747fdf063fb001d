// The HTTP transport itself, over raw sockets on 127.0.0.1: keep-alive, Expect: 100-continue,
// chunked bodies, malformed requests, the connection limit, standby replicas and shutdown with a
// bind held at its gang's barrier. The verb flows are in http_test.cc.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "tests/extender/transport_test_util.h"
#include "tests/support/harness.h"

namespace topogang {
namespace {

using testing::GangPod;
using testing::MakePod;
using testing::NodeNames;
using testing::RawSocket;
using testing::TestCluster;

testing::PodOpts CpuPod(const std::string& name) {
  testing::PodOpts o;
  o.name = name;
  o.gpus = 0;
  return o;
}

std::string Post(const std::string& path, const std::string& body,
                 const std::string& extra_headers = "") {
  return absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                      "Content-Type: application/json\r\nContent-Length: ", body.size(), "\r\n",
                      extra_headers, "\r\n", body);
}

struct Server {
  explicit Server(HttpServerOptions ho = {}, int nodes = 8)
      : state(GangScheduler(TestCluster(nodes)), clock),
        ledger(state, binder, eo()),
        service(ledger) {
    ho.port = 0;  // the kernel picks
    ho.bind_address = "127.0.0.1";
    server = std::make_unique<ExtenderHttpServer>(service, ho);
    started = server->Start();
  }
  static GangLedgerOptions eo() {
    GangLedgerOptions o;
    o.bind_window = absl::Seconds(30);  // binds stay held until the test says otherwise
    return o;
  }
  SystemClock clock;
  DaemonState state;
  MemoryBinder binder;
  GangLedger ledger;
  ExtenderService service;
  std::unique_ptr<ExtenderHttpServer> server;
  absl::Status started;
};

TEST(HttpServerTest, PortZeroPicksAPortAndKeepAliveServesManyRequests) {
  Server s;
  ASSERT_TRUE(s.started.ok()) << s.started;
  ASSERT_GT(s.server->port(), 0);
  RawSocket c(s.server->port());
  ASSERT_TRUE(c.connected());
  const std::string body = testing::FilterBody(MakePod(CpuPod("cpu")), NodeNames(8));
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(c.Send(Post("/filter", body)));
    auto r = c.Read();
    ASSERT_EQ(r.status, 200) << i;
    EXPECT_EQ(Json::parse(r.body)["NodeNames"].size(), 8u);
  }
  // Two requests in one write (pipelined) are answered in order.
  ASSERT_TRUE(
      c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(c.Read().status, 200);
  EXPECT_EQ(c.Read().status, 404);
}

TEST(HttpServerTest, ExpectContinueAndChunkedBodies) {
  Server s;
  ASSERT_TRUE(s.started.ok());
  const std::string body = testing::FilterBody(MakePod(CpuPod("p")), NodeNames(8));
  {
    RawSocket c(s.server->port());
    std::string head = Post("/filter", body, "Expect: 100-continue\r\n");
    head.resize(head.size() - body.size());
    ASSERT_TRUE(c.Send(head));
    auto cont = c.Read();  // the interim answer comes before we send the body
    EXPECT_EQ(cont.status, 100);
    ASSERT_TRUE(c.Send(body));
    auto r = c.Read();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(Json::parse(r.body)["NodeNames"].size(), 8u);
  }
  {
    RawSocket c(s.server->port());
    std::string req =
        "POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        "Content-Type: application/json\r\n\r\n";
    for (size_t off = 0; off < body.size(); off += 100) {
      std::string piece = body.substr(off, 100);
      req += absl::StrCat(absl::Hex(piece.size()), "\r\n", piece, "\r\n");
    }
    req += "0\r\n\r\n";
    ASSERT_TRUE(c.Send(req));
    auto r = c.Read();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(Json::parse(r.body)["NodeNames"].size(), 8u);
  }
}

TEST(HttpServerTest, MalformedAndOversizedRequestsAreAnsweredAndTheServerLivesOn) {
  HttpServerOptions ho;
  ho.max_body_bytes = 4096;
  Server s(ho);
  ASSERT_TRUE(s.started.ok());
  {
    RawSocket c(s.server->port());
    ASSERT_TRUE(c.Send("THIS IS NOT HTTP\r\n\r\n"));
    auto r = c.Read();
    EXPECT_EQ(r.status, 400);
    EXPECT_TRUE(c.ClosedByServer());
  }
  {
    RawSocket c(s.server->port());
    ASSERT_TRUE(c.Send("POST /filter HTTP/1.1\r\nContent-Length: banana\r\n\r\n"));
    EXPECT_EQ(c.Read().status, 400);
  }
  {
    // Declared too large: a filter reply with the Error, then the connection ends.
    RawSocket c(s.server->port());
    ASSERT_TRUE(c.Send(Post("/filter", std::string(10000, ' '))));
    auto r = c.Read();
    ASSERT_EQ(r.status, 200);
    EXPECT_TRUE(absl::StrContains(Json::parse(r.body)["Error"].get<std::string>(), "exceeds"))
        << r.body;
    EXPECT_TRUE(c.ClosedByServer());
  }
  {
    // Too large in chunks (no declared length): same answer.
    RawSocket c(s.server->port());
    std::string req = "POST /bind HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 10; ++i) req += absl::StrCat("3e8\r\n", std::string(1000, 'x'), "\r\n");
    req += "0\r\n\r\n";
    ASSERT_TRUE(c.Send(req));
    auto r = c.Read();
    ASSERT_EQ(r.status, 200);
    EXPECT_TRUE(absl::StrContains(Json::parse(r.body)["Error"].get<std::string>(), "exceeds"));
  }
  {
    // Headers beyond the limit.
    RawSocket c(s.server->port());
    ASSERT_TRUE(c.Send(
        absl::StrCat("GET /healthz HTTP/1.1\r\nX-Big: ", std::string(70000, 'a'), "\r\n\r\n")));
    EXPECT_EQ(c.Read().status, 400);
  }
  RawSocket c(s.server->port());
  ASSERT_TRUE(c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(c.Read().status, 200);
}

TEST(HttpServerTest, ALargeGangWaitsAtTheBarrierOnOneConnectionPerMember) {
  // kube-scheduler binds every member on its own connection and each waits at the barrier:
  // 200 members = 200 open connections held until the last one arrives.
  const int members = 200;
  HttpServerOptions ho;
  ho.max_connections = members + 10;
  Server s(ho, 32);  // 256 GPUs
  ASSERT_TRUE(s.started.ok());
  RawSocket filter(s.server->port());
  std::vector<std::unique_ptr<RawSocket>> binds;
  std::vector<std::string> bodies;
  for (int i = 0; i < members; ++i) {
    const Json pod = MakePod(GangPod("wide", members, i, 1));
    ASSERT_TRUE(filter.Send(Post("/filter", testing::FilterBody(pod, NodeNames(32)))));
    auto f = ParseFilterResult(filter.Read().body);
    ASSERT_TRUE(f.ok());
    ASSERT_EQ(f->node_names.size(), 1u) << "member " << i;
    bodies.push_back(
        Post("/bind", SerializeBindingArgs({pod["metadata"]["name"], "default",
                                            pod["metadata"]["uid"], f->node_names[0]})));
  }
  for (int i = 0; i < members; ++i) {
    binds.push_back(std::make_unique<RawSocket>(s.server->port()));
    ASSERT_TRUE(binds.back()->Send(bodies[i]));
  }
  for (int i = 0; i < members; ++i) {
    auto r = binds[i]->Read();
    ASSERT_EQ(r.status, 200) << "member " << i;
    EXPECT_EQ(r.body, R"({"Error":""})") << "member " << i;
  }
  EXPECT_EQ(s.binder.Bindings().size(), static_cast<size_t>(members));
  EXPECT_EQ(s.ledger.GetStats().running_gangs, 1);
}

TEST(HttpServerTest, ConnectionsBeyondTheLimitAreClosed) {
  HttpServerOptions ho;
  ho.max_connections = 2;
  Server s(ho);
  ASSERT_TRUE(s.started.ok());
  RawSocket a(s.server->port()), b(s.server->port());
  // Make sure both are accepted and counted before the third arrives.
  for (RawSocket* c : {&a, &b}) {
    ASSERT_TRUE(c->Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_EQ(c->Read().status, 200);
  }
  RawSocket third(s.server->port());
  ASSERT_TRUE(third.connected());  // the kernel accepts; the server closes it at once
  third.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(third.Read().status, 0);
  ASSERT_TRUE(a.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(a.Read().status, 200);
}

TEST(HttpServerTest, AStandbyReplicaRefusesVerbsUntilItLeads) {
  Server s;
  ASSERT_TRUE(s.started.ok());
  s.server->SetLeader(false);
  RawSocket c(s.server->port());
  const Json pod = MakePod(GangPod("g", 2, 0, 8));
  ASSERT_TRUE(c.Send(Post("/filter", testing::FilterBody(pod, NodeNames(8)))));
  auto r = c.Read();
  ASSERT_EQ(r.status, 200);
  Json j = Json::parse(r.body);
  EXPECT_TRUE(absl::StrContains(j["Error"].get<std::string>(), "standby")) << r.body;
  EXPECT_TRUE(j["NodeNames"].empty());  // kube-scheduler fails the cycle on Error and retries
  EXPECT_EQ(s.ledger.GetStats().reserved_gangs, 0);  // nothing reserved by a standby
  ASSERT_TRUE(c.Send("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(c.Read().status, 503);
  ASSERT_TRUE(c.Send(Post("/bind", SerializeBindingArgs({"g-0", "default", "u", "gpu-node-000"}))));
  r = c.Read();
  EXPECT_TRUE(absl::StrContains(Json::parse(r.body)["Error"].get<std::string>(), "standby"));
  s.server->SetLeader(true);
  ASSERT_TRUE(c.Send(Post("/filter", testing::FilterBody(pod, NodeNames(8)))));
  r = c.Read();
  EXPECT_EQ(Json::parse(r.body)["Error"], "");
  EXPECT_EQ(Json::parse(r.body)["NodeNames"].size(), 1u);
  ASSERT_TRUE(c.Send("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(c.Read().status, 200);
}

TEST(HttpServerTest, StopAnswersAHeldBindBeforeClosing) {
  Server s;
  ASSERT_TRUE(s.started.ok());
  // Member 0 of a 2-member gang reaches bind; member 1 never does, so the bind is held.
  const Json pod = MakePod(GangPod("held", 2, 0, 8));
  RawSocket c(s.server->port());
  ASSERT_TRUE(c.Send(Post("/filter", testing::FilterBody(pod, NodeNames(8)))));
  auto f = ParseFilterResult(c.Read().body);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->node_names.size(), 1u);
  ASSERT_TRUE(
      c.Send(Post("/bind", SerializeBindingArgs({pod["metadata"]["name"], "default",
                                                 pod["metadata"]["uid"], f->node_names[0]}))));
  // Wait until the service holds it (bounded), then stop the server from another thread.
  for (int i = 0; i < 2000 && s.ledger.GetStats().held_binds == 0; ++i) usleep(1000);
  ASSERT_EQ(s.ledger.GetStats().held_binds, 1);
  auto stopped = std::async(std::launch::async, [&] { s.server->Stop(); });
  auto r = c.Read();
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(absl::StrContains(Json::parse(r.body)["Error"].get<std::string>(), "shutting down"))
      << r.body;
  stopped.get();
  EXPECT_TRUE(c.ClosedByServer());
  s.server->Stop();  // idempotent
}

}  // namespace
}  // namespace topogang
