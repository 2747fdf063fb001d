// The topogang CLI against an in-process daemon over loopback: dry-run --server, explain, gangs,
// drain/undrain, tables and JSON, and its exit codes on bad input.
#include <gmock/gmock.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "tests/grpc/grpc_test_env.h"

namespace topogang {
namespace {

using testing::GrpcTestEnv;
using ::testing::HasSubstr;

class CliRemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env.state->With([&](GangScheduler& s) {
      GangSpec g;
      g.name = "train-a";
      g.members = 2;
      g.gpus_per_member = 8;
      ASSERT_TRUE(s.Reserve(g, env.clock.Now()).ok());
    });
  }
  // Runs `topogang ARGS --server target`; returns exit code and stdout+stderr.
  std::pair<int, std::string> Cli(const std::string& args, bool with_server = true) {
    std::string cmd = testing::BinDir() + "/topogang " + args +
                      (with_server ? " --server " + env.target() : "") + " 2>&1";
    FILE* f = popen(cmd.c_str(), "r");
    std::string out;
    char buf[1024];
    while (f && fgets(buf, sizeof(buf), f)) out += buf;
    int st = f ? pclose(f) : -1;
    return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
  }
  GrpcTestEnv env;
};

TEST_F(CliRemoteTest, GangsTableAndJson) {
  auto [code, out] = Cli("gangs");
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("train-a"));
  EXPECT_THAT(out, HasSubstr("reserved"));
  std::tie(code, out) = Cli("gangs --format json --state reserved");
  ASSERT_EQ(code, 0) << out;
  auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["gangs"].size(), 1u);
  EXPECT_EQ(j["gangs"][0]["spec"]["name"], "train-a");
  EXPECT_EQ(j["gangs"][0]["placement"]["members"].size(), 2u);
  std::tie(code, out) = Cli("gangs --state running --format json");
  ASSERT_EQ(code, 0) << out;
  EXPECT_TRUE(nlohmann::json::parse(out)["gangs"].empty());
  EXPECT_EQ(Cli("gangs --state sideways").first, 2);
}

TEST_F(CliRemoteTest, DryRunAgainstTheLiveDaemon) {
  const std::string jobs = testing::SourceDir() + "/examples/jobs/lab-jobs.yaml";
  auto [code, out] = Cli("dry-run --jobs " + jobs);
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("48 of 64 GPUs free"));  // train-a holds 16
  EXPECT_THAT(out, HasSubstr("finetune-16"));
  EXPECT_THAT(out, HasSubstr("nothing reserved"));
  std::tie(code, out) = Cli("dry-run --format json --drain lab-a1,lab-a2 --jobs " + jobs);
  ASSERT_EQ(code, 0) << out;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["results"].size(), 6u);
  for (const auto& r : j["results"]) {
    if (!r.contains("placement")) continue;  // did not fit
    for (const auto& n : r["placement"]["nodes"]) {
      EXPECT_NE(n, "lab-a1");
      EXPECT_NE(n, "lab-a2");
    }
  }
  std::tie(code, out) = Cli("dry-run --drain ghost --jobs " + jobs);
  EXPECT_EQ(code, 2);
  EXPECT_THAT(out, HasSubstr("ghost"));
  // The daemon still holds only train-a.
  EXPECT_EQ(env.state->With([](GangScheduler& s) { return s.gangs().size(); }), 1u);
}

TEST_F(CliRemoteTest, ExplainHeldAndHypotheticalGangs) {
  auto [code, out] = Cli("explain train-a");
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("reserved"));
  EXPECT_THAT(out, HasSubstr("leaf"));
  std::tie(code, out) = Cli("explain big --members 5 --gpus-per-member 8 --required-tier leaf");
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("rejected leaf domains"));
  EXPECT_THAT(out, HasSubstr("room for 4 of 5 members"));
  std::tie(code, out) = Cli("explain nobody");
  EXPECT_EQ(code, 2);
  EXPECT_THAT(out, HasSubstr("holds no gang"));
  std::tie(code, out) = Cli("explain big --members 5 --gpus-per-member 8 --format json");
  ASSERT_EQ(code, 0) << out;
  EXPECT_TRUE(nlohmann::json::parse(out)["would_fit_now"].get<bool>());
}

TEST_F(CliRemoteTest, DrainAndUndrain) {
  auto [code, out] = Cli("drain lab-b1 --reason 'bad DIMM'");
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("drained: bad DIMM"));
  EXPECT_EQ(env.state->NodeHealthSources("lab-b1"),
            static_cast<uint8_t>(HealthSource::kAdminDrain));
  std::tie(code, out) = Cli("undrain lab-b1 --format json");
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(nlohmann::json::parse(out)["healthy"].get<bool>());
  EXPECT_EQ(env.state->NodeHealthSources("lab-b1"), 0);
  EXPECT_EQ(Cli("drain lab-b1").first, 2);  // no reason
  EXPECT_EQ(Cli("drain ghost --reason x").first, 2);
  EXPECT_EQ(Cli("drain --reason x").first, 2);
}

TEST_F(CliRemoteTest, UnreachableDaemonAndMissingServer) {
  auto [code, out] = Cli("gangs --timeout 2 --server 127.0.0.1:1", false);
  EXPECT_EQ(code, 1);
  EXPECT_THAT(out, HasSubstr("UNAVAILABLE"));
  std::tie(code, out) = Cli("gangs", false);
  EXPECT_EQ(code, 2);
  EXPECT_THAT(out, HasSubstr("--server"));
}

}  // namespace
}  // namespace topogang
