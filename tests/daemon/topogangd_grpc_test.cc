// The real topogangd binary with both front ends: a gang scheduled through the extender's HTTP
// verbs shows up on gRPC WatchDecisions (reserve, then bind) and in ListGangs as running.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/free_port.h"
#include "extender/http_server.h"
#include "tests/support/harness.h"
#include "tests/support/prom_text.h"
#include "topogang/v1/placement.grpc.pb.h"

namespace topogang {
namespace {

namespace v1 = ::topogang::v1;

TEST(TopogangdGrpcTest, WatchDecisionsStreamsAGangScheduledThroughTheExtender) {
  const int http_port = PickFreePort(), grpc_port = PickFreePort();
  ASSERT_GT(http_port, 0);
  ASSERT_GT(grpc_port, 0);
  ASSERT_NE(http_port, grpc_port);
  const std::string cluster = testing::SourceDir() + "/examples/clusters/lab-64.yaml";
  const std::string grpc_addr = absl::StrCat("127.0.0.1:", grpc_port);
  pid_t pid =
      testing::StartTopogangd({"--cluster", cluster, "--http-port", std::to_string(http_port),
                               "--bind-address", "127.0.0.1", "--grpc-address", grpc_addr},
                              http_port);
  ASSERT_GT(pid, 0) << "topogangd did not come up";
  web::http::client::http_client client(absl::StrCat("http://127.0.0.1:", http_port));

  auto channel = grpc::CreateChannel(grpc_addr, grpc::InsecureChannelCredentials());
  ASSERT_TRUE(
      channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10)));
  auto stub = v1::PlacementService::NewStub(channel);
  grpc::ClientContext watch_ctx;
  watch_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::WatchDecisionsRequest wreq;
  wreq.set_from_now(true);
  auto reader = stub->WatchDecisions(&watch_ctx, wreq);
  reader->WaitForInitialMetadata();

  auto post = [&](const std::string& path, const std::string& body) {
    web::http::http_request req(web::http::methods::POST);
    req.set_request_uri(path);
    req.set_body(body, "application/json");
    return client.request(req);
  };
  std::vector<std::string> names = {"lab-a1", "lab-a2", "lab-a3", "lab-a4",
                                    "lab-b1", "lab-b2", "lab-b3", "lab-b4"};
  std::vector<pplx::task<web::http::http_response>> binds;
  for (int i = 0; i < 2; ++i) {
    Json pod = testing::MakePod(testing::GangPod("demo", 2, i, 8));
    auto f = ParseFilterResult(
        post("/filter", testing::FilterBody(pod, names)).get().extract_utf8string(true).get());
    ASSERT_TRUE(f.ok());
    ASSERT_EQ(f->node_names.size(), 1u);
    binds.push_back(
        post("/bind", SerializeBindingArgs({pod["metadata"]["name"], pod["metadata"]["namespace"],
                                            pod["metadata"]["uid"], f->node_names[0]})));
  }
  for (auto& b : binds) {
    auto res = ParseBindingResult(b.get().extract_utf8string(true).get());
    ASSERT_TRUE(res.ok());
    EXPECT_EQ(res->error, "");
  }

  std::vector<std::string> kinds;
  v1::DecisionEvent ev;
  while (reader->Read(&ev)) {
    if (ev.gang().find("demo") == std::string::npos) continue;
    kinds.push_back(ev.kind());
    if (ev.kind() == "bind") break;
  }
  ASSERT_FALSE(kinds.empty()) << "no event for the gang";
  EXPECT_EQ(kinds.front(), "reserve");
  EXPECT_EQ(kinds.back(), "bind");
  watch_ctx.TryCancel();

  grpc::ClientContext list_ctx;
  v1::ListGangsResponse gangs;
  ASSERT_TRUE(stub->ListGangs(&list_ctx, v1::ListGangsRequest(), &gangs).ok());
  bool running = false;
  for (const auto& g : gangs.gangs()) {
    if (g.spec().name().find("demo") != std::string::npos) {
      running = g.state() == v1::GANG_STATE_RUNNING;
    }
  }
  EXPECT_TRUE(running) << gangs.DebugString();

  // The same gang in /metrics; with the gRPC server on, the agent stream gauge is there too.
  auto scrape = client.request(web::http::methods::GET, "/metrics").get();
  auto m = testing::PromText::Parse(scrape.extract_utf8string(true).get());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->Get("topogang_gangs", {{"state", "running"}}), 1);
  EXPECT_EQ(m->Get("topogang_gang_events_total", {{"event", "bind"}}), 1);
  EXPECT_EQ(m->Get("topogang_extender_requests_total", {{"verb", "bind"}, {"result", "ok"}}), 2);
  EXPECT_EQ(m->Get("topogang_gpus", {{"state", "allocated"}}), 16);
  EXPECT_EQ(m->Get("topogang_agent_streams"), 0);

  kill(pid, SIGTERM);
  testing::ExpectCleanExit(pid);
}

}  // namespace
}  // namespace topogang
