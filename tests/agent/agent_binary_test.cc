// The topogang-agent binary: fake-GPU mode against an in-process daemon (register, control-file
// XID, SIGTERM), the clear refusal on a machine without NVIDIA GPUs, flag errors, and the
// control-line parser.
#include <dlfcn.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/fake_source.h"
#include "tests/grpc/grpc_test_env.h"

namespace topogang {
namespace {

using testing::GrpcTestEnv;
using ::testing::HasSubstr;

std::string AgentBin() { return testing::BinDir() + "/topogang-agent"; }

// Runs the agent to completion; returns exit code and output.
std::pair<int, std::string> RunAgent(const std::string& args) {
  std::string cmd = AgentBin() + " " + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (f && fgets(buf, sizeof(buf), f)) out += buf;
  int st = f ? pclose(f) : -1;
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

bool HaveNvml() {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (h) dlclose(h);
  return h != nullptr;
}

TEST(AgentBinaryTest, WithoutNvidiaGpusItSaysSoAndExitsNonZero) {
  if (HaveNvml()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  auto [code, out] = RunAgent("--discover");
  EXPECT_EQ(code, 1);
  EXPECT_THAT(out, HasSubstr("no NVIDIA driver"));
  EXPECT_THAT(out, HasSubstr("--fake-gpus"));
  std::tie(code, out) = RunAgent("--server 127.0.0.1:1 --node lab-a1");
  EXPECT_EQ(code, 1);
}

TEST(AgentBinaryTest, BadFlagsExitTwo) {
  EXPECT_EQ(RunAgent("--fake-gpus -3 --server 127.0.0.1:1 --node x").first, 2);
  EXPECT_EQ(RunAgent("--no-such-flag").first, 2);
  EXPECT_EQ(RunAgent("--fake-gpus 2").first, 2);  // no --server
  EXPECT_EQ(RunAgent("--fake-gpus 2 --server 127.0.0.1:1 --node x --fake-xid-after nonsense").first,
            2);
  auto [code, out] = RunAgent("--fake-gpus 2 --fake-model A100 --discover");
  EXPECT_EQ(code, 0);
  EXPECT_THAT(out, HasSubstr("2 GPU(s)"));
  EXPECT_THAT(out, HasSubstr("gpu 1: A100"));
}

TEST(AgentBinaryTest, FakeAgentRegistersReportsControlFileXidAndStopsOnSigterm) {
  GrpcServerOptions o = GrpcTestEnv::PlaintextOptions();
  o.allow_unauthenticated_agents = false;
  const std::string token = "binary-test-token-lab-b2";
  o.tokens.node_by_token[token] = "lab-b2";
  GrpcTestEnv env(o);
  char dir_tmpl[] = "/tmp/topogang-agent-XXXXXX";
  ASSERT_NE(mkdtemp(dir_tmpl), nullptr);
  const std::string dir = dir_tmpl;
  const std::string control = dir + "/control", token_file = dir + "/token", log = dir + "/log";
  std::ofstream(token_file) << token << "\n";
  std::ofstream(control) << "# fake events\n";

  const int64_t seq = env.state->LastSeq();
  // Everything the child needs is built before fork (the parent has gRPC threads running).
  const std::string bin = AgentBin(), target = env.target();
  std::vector<std::string> argv_s = {bin,       "--server",       target,  "--fake-gpus",
                                     "8",       "--fake-control", control, "--token-file",
                                     token_file};
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s = {"NODE_NAME=lab-b2"};  // the downward-API way, no --node
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(fd, 2);
    execve(bin.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(fd);
  ASSERT_TRUE(env.WaitFor(seq, "agent-registered", "lab-b2"));
  std::ofstream(control, std::ios::app) << "xid 5 79 injected by test\n";
  auto bad = env.WaitFor(seq, "gpu-unhealthy", "lab-b2");
  ASSERT_TRUE(bad);
  EXPECT_THAT(bad->detail, HasSubstr("XID 79"));
  EXPECT_THAT(bad->detail, HasSubstr("injected by test"));
  EXPECT_TRUE(env.GpuFaulty("lab-b2", 5));

  // SIGTERM: clean exit 0, bounded.
  kill(pid, SIGTERM);
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  int status = 0;
  std::thread waiter([&] {
    int st = 0;
    waitpid(pid, &st, 0);
    std::lock_guard<std::mutex> l(mu);
    status = st;
    done = true;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> l(mu);
    if (!cv.wait_for(l, std::chrono::seconds(20), [&] { return done; })) {
      kill(pid, SIGKILL);
      ADD_FAILURE() << "agent did not stop on SIGTERM";
    }
  }
  waiter.join();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::filesystem::remove_all(dir);
}

TEST(ControlLineTest, ParsesEventsAndRejectsJunk) {
  auto ev = agent::ParseControlLine("xid 3 79 fell off");
  ASSERT_TRUE(ev.ok());
  ASSERT_TRUE(ev->has_value());
  EXPECT_EQ((*ev)->gpu_index, 3);
  EXPECT_EQ((*ev)->xid, 79u);
  EXPECT_EQ((*ev)->detail, "fell off");
  EXPECT_EQ((**agent::ParseControlLine("recover 2")).kind, agent::GpuEventKind::kRecovered);
  EXPECT_EQ((**agent::ParseControlLine("ecc 0")).kind, agent::GpuEventKind::kEccUncorrectable);
  EXPECT_FALSE(agent::ParseControlLine("# comment")->has_value());
  EXPECT_FALSE(agent::ParseControlLine("   ")->has_value());
  EXPECT_FALSE(agent::ParseControlLine("xid 3").ok());
  EXPECT_FALSE(agent::ParseControlLine("xid -1 79").ok());
  EXPECT_FALSE(agent::ParseControlLine("melt 1").ok());
  EXPECT_FALSE(agent::ParseControlLine("lost").ok());
}

}  // namespace
}  // namespace topogang
