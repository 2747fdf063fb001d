// The topogangd binary in standalone mode: serves the verbs on a cluster file, records binds in
// memory, and exits 0 on SIGTERM (held binds answered first).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/free_port.h"
#include "extender/http_server.h"
#include "tests/support/harness.h"

namespace topogang {
namespace {

TEST(TopogangdTest, StandaloneServesAndShutsDownCleanly) {
  int port = PickFreePort();
  ASSERT_GT(port, 0);
  const std::string cluster = testing::SourceDir() + "/examples/clusters/lab-64.yaml";
  pid_t pid = testing::StartTopogangd({"--cluster", cluster, "--http-port", std::to_string(port),
                                       "--bind-address", "127.0.0.1", "--bind-window-ms", "5000"},
                                      port);
  ASSERT_GT(pid, 0) << "topogangd did not come up";
  web::http::client::http_client client(absl::StrCat("http://127.0.0.1:", port));
  auto post = [&](const std::string& path, const std::string& body) {
    web::http::http_request req(web::http::methods::POST);
    req.set_request_uri(path);
    req.set_body(body, "application/json");
    return client.request(req);
  };
  std::vector<std::string> names = {"lab-a1", "lab-a2", "lab-b1", "lab-b2"};
  Json pod = testing::MakePod(testing::GangPod("demo", 2, 0, 8));
  auto reply = post("/filter", testing::FilterBody(pod, names)).get();
  auto f = ParseFilterResult(reply.extract_utf8string(true).get());
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->node_names.size(), 1u);
  // One member waits at the barrier; SIGTERM must answer it and exit 0.
  auto held =
      post("/bind", SerializeBindingArgs({"demo-0", "default", "uid-demo-0", f->node_names[0]}));
  bool holding = false;
  for (absl::Time deadline = absl::Now() + absl::Seconds(10); absl::Now() < deadline && !holding;) {
    auto st =
        client.request(web::http::methods::GET, "/stats").get().extract_utf8string(true).get();
    holding = Json::parse(st).value("held_binds", 0) == 1;
  }
  ASSERT_TRUE(holding);
  EXPECT_FALSE(held.is_done());
  kill(pid, SIGTERM);
  auto r = held.get();
  auto res = ParseBindingResult(r.extract_utf8string(true).get());
  ASSERT_TRUE(res.ok());
  EXPECT_NE(res->error.find("shutting down"), std::string::npos) << res->error;
  testing::ExpectCleanExit(pid);
}

}  // namespace
}  // namespace topogang
