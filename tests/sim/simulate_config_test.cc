// `topogang simulate --config`: the queue keys of the config's daemon section set the `topogang`
// policy's queue exactly as the matching flags do (so a simulation runs the queue topogangd
// would run with that file), flags override them, and bad values are errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/test_util.h"

namespace topogang {
namespace {

using testing::CliResult;
using ::testing::HasSubstr;
using testing::TempFile;

// One run of the generated matrix cell `meta-16k` 1x seed 2 (10,000 jobs, well under a second):
// its spine-required gangs and large gangs make every setting below change the result. Returns
// the jobs file of the `topogang` policy.
std::string JobsOf(const std::string& name, const std::string& extra) {
  const std::string dir = ::testing::TempDir() + "/simcfg-" + std::to_string(getpid()) + name;
  std::filesystem::remove_all(dir);
  CliResult r = testing::RunTopogang(
      "simulate --cluster " + testing::SourceDir() + "/examples/clusters/meta-16k.yaml " +
      "--generate 10000 --profile mixed --seed 2 --load 1 --policy topogang --out " + dir + " " +
      extra);
  EXPECT_EQ(r.code, 0) << r.out;
  std::ifstream f(dir + "/jobs-topogang.csv");
  std::stringstream s;
  s << f.rdbuf();
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

std::string Config(const std::string& name, const std::string& daemon) {
  return "--config " + TempFile(name, "daemon:\n" + daemon);
}

TEST(SimulateConfig, TheDaemonSectionsQueueIsTheFlagsQueue) {
  const std::string flags =
      JobsOf("flags",
             "--queue-large-in-order 1 --queue-large-in-order-min-share 0.125 "
             "--required-tier-max-wait 300");
  const std::string config =
      JobsOf("config", Config("q.yaml",
                              "  large_gangs_in_order: true\n  large_in_order_min_share: 0.125\n"
                              "  required_tier_max_wait_seconds: {spine: 300}\n"));
  EXPECT_TRUE(flags == config) << "the config's queue is not the flags' queue";
  EXPECT_FALSE(flags == JobsOf("default", "")) << "the setting changes nothing here";
}

TEST(SimulateConfig, TheOverloadBacklogKeysAreTheFlags) {
  const std::string in_order =
      "--queue-large-in-order 1 --queue-large-in-order-min-share 0.125 "
      "--required-tier-max-wait 300 ";
  const std::string flags = JobsOf("oflags", in_order +
                                                 "--queue-large-in-order-overload-backlog 0.7 "
                                                 "--queue-large-in-order-overload-memory-hours 24");
  const std::string config =
      JobsOf("oconfig", Config("o.yaml",
                               "  large_gangs_in_order: true\n  large_in_order_min_share: 0.125\n"
                               "  required_tier_max_wait_seconds: {spine: 300}\n"
                               "  large_in_order_overload_backlog: 0.7\n"
                               "  large_in_order_overload_memory_seconds: 86400\n"));
  EXPECT_TRUE(flags == config) << "the config's queue is not the flags' queue";
  EXPECT_FALSE(flags == JobsOf("oshare", in_order)) << "the backlog option changes nothing here";
}

TEST(SimulateConfig, ATiersWaitAppliesToThatTierOnly) {
  const std::string spine_flag = JobsOf("flag", "--required-tier-max-wait 300");
  EXPECT_TRUE(
      spine_flag ==
      JobsOf("spine", Config("s.yaml", "  required_tier_max_wait_seconds: {spine: 300}\n")));
  // No gang of this trace requires a leaf.
  EXPECT_TRUE(JobsOf("default", "") ==
              JobsOf("leaf", Config("l.yaml", "  required_tier_max_wait_seconds: {leaf: 300}\n")));
  EXPECT_FALSE(spine_flag == JobsOf("default2", ""));
}

TEST(SimulateConfig, FlagsOverrideTheConfig) {
  EXPECT_TRUE(JobsOf("default", "") ==
              JobsOf("override", Config("o.yaml", "  large_gangs_in_order: true\n") +
                                     " --queue-large-in-order 0"));
}

TEST(SimulateConfig, BadQueueValuesAreErrorsThatNameTheKey) {
  const std::string cluster = testing::SourceDir() + "/examples/clusters/lab-64.yaml";
  for (const auto& [daemon, want] : std::vector<std::pair<std::string, std::string>>{
           {"  required_tier_max_wait_seconds: {bogus: 1}\n", "'bogus' is not a tier"},
           {"  required_tier_max_wait_seconds: {leaf: -1}\n",
            "required_tier_max_wait_seconds.leaf"},
           {"  required_tier_max_wait_seconds: 300\n", "expected a mapping"},
           {"  large_gangs_in_order: maybe\n", "large_gangs_in_order"},
           {"  large_in_order_min_share: 2\n", "large_in_order_min_share"},
           {"  large_in_order_overload_backlog: x\n", "large_in_order_overload_backlog"}}) {
    CliResult r =
        testing::RunTopogang("simulate --cluster " + cluster + " " + Config("bad.yaml", daemon) +
                             " --generate 10 --policy topogang");
    EXPECT_EQ(r.code, 2) << daemon << r.out;
    EXPECT_THAT(r.out, HasSubstr(want)) << daemon;
  }
}

}  // namespace
}  // namespace topogang
