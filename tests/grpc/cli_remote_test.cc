// The topogang CLI against an in-process daemon over loopback: dry-run --server, explain, gangs,
// drain/undrain, spares, tables and JSON, and its exit codes on bad input.
#include <gmock/gmock.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

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

// A gang a repair left slower (GangRecord::slower_since_repair, set by the ledger's repair):
// marked in its state column, with the why below the table and in the JSON.
TEST_F(CliRemoteTest, GangsSaysWhichRunSlowerSinceARepair) {
  auto [code, out] = Cli("gangs");
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, ::testing::Not(HasSubstr("slower")));
  env.state->With([&](GangScheduler& s) {
    ASSERT_TRUE(s.Commit("train-a").ok());
    ASSERT_TRUE(s.MarkSlowerSinceRepair("train-a", "it adds a thin side").ok());
    EXPECT_FALSE(s.MarkSlowerSinceRepair("nobody", "x").ok());
  });
  std::tie(code, out) = Cli("gangs");
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("running (slower)"));
  EXPECT_THAT(out, HasSubstr("train-a runs slower since a repair: it adds a thin side"));
  std::tie(code, out) = Cli("gangs --format json");
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out)["gangs"][0]["slower_since_repair"], "it adds a thin side");
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

// Hot spares (#13): `topogang spares` lists them with their domain, idle or used by which gang;
// `gangs` marks a member on a spare; a dry run does not count spares as capacity.
TEST_F(CliRemoteTest, SparesListedAndMarked) {
  auto [code, out] = Cli("spares");
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("no spares"));
  SpareOptions per_leaf;
  per_leaf.tier = "leaf";
  per_leaf.per_domain = 1;
  env.state->SetSpareOptions(per_leaf);
  env.state->SetMarkedSpares({"lab-b1"});  // counts as leaf-b's one spare
  std::tie(code, out) = Cli("spares --format json");
  ASSERT_EQ(code, 0) << out;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["tier"], "leaf");
  ASSERT_EQ(j["spares"].size(), 2u) << out;
  std::set<std::string> leaves;
  std::string leaf_a_spare;
  for (const auto& s : j["spares"]) {
    const std::string node = s["node"];
    leaves.insert(s["domain"].get<std::string>());
    EXPECT_TRUE(s["gangs"].empty()) << node;
    EXPECT_EQ(s["free_gpus"], 8) << node << ": only idle nodes become spares";
    EXPECT_EQ(s["marked"].get<bool>(), node == "lab-b1") << node;
    if (node != "lab-b1") leaf_a_spare = node;
  }
  EXPECT_EQ(leaves, (std::set<std::string>{"sp1/leaf-a", "sp1/leaf-b"}));
  // A replacement member of gang `repl` on lab-b1 (as the ledger places one).
  env.state->WithSpares([&](GangScheduler& s, const SparePool& pool) {
    const int n = s.cluster().FindNode("lab-b1");
    ASSERT_TRUE(pool.IsSpare(n));
    GangSpec g;
    g.name = "repl";
    g.gpus_per_member = 8;
    Placement p;
    MemberPlacement m;
    m.node = n;
    for (int i = 0; i < 8; ++i) m.gpus.push_back(s.cluster().node(n).gpu_begin + i);
    p.members.push_back(m);
    ASSERT_TRUE(s.Adopt(g, p, GangState::kRunning, env.clock.Now()).ok());
  });
  std::tie(code, out) = Cli("spares");
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("in-use"));
  EXPECT_THAT(out, HasSubstr("repl"));
  EXPECT_THAT(out, HasSubstr(leaf_a_spare));
  EXPECT_THAT(out, HasSubstr("2 spare(s) per leaf"));
  EXPECT_THAT(out, HasSubstr("1 idle"));
  std::tie(code, out) = Cli("gangs");
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("[spare: lab-b1 (member 0)]"));
  std::tie(code, out) = Cli("gangs --format json --state running");
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out)["gangs"][0]["spare_members"], nlohmann::json::array({0}));
  // 64 GPUs - train-a's 16 - repl's 8 - the idle spare of leaf-a's 8.
  const std::string jobs = testing::SourceDir() + "/examples/jobs/lab-jobs.yaml";
  std::tie(code, out) = Cli("dry-run --jobs " + jobs);
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("32 of 64 GPUs free"));
  std::tie(code, out) = Cli("dry-run --format json --jobs " + jobs);
  ASSERT_EQ(code, 0) << out;
  for (const auto& r : nlohmann::json::parse(out)["results"]) {
    if (!r.contains("placement")) continue;
    for (const auto& n : r["placement"]["nodes"]) EXPECT_NE(n, leaf_a_spare) << r["gang"];
  }
  EXPECT_EQ(Cli("spares extra").first, 2);
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
