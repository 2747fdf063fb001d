// Runs the real `topogang` binary and checks its output and exit status.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace topogang {
namespace {

using ::testing::HasSubstr;

using testing::CliResult;
using testing::TempFile;

CliResult Topogang(const std::string& args, bool merge_stderr = true) {
  return testing::RunTopogang(args, merge_stderr);
}

std::string Example(const std::string& rel) { return testing::SourceDir() + "/examples/" + rel; }

TEST(DryRunCli, TableOnLabExample) {
  CliResult r = Topogang("dry-run --cluster " + Example("clusters/lab-64.yaml") + " --jobs " +
                         Example("jobs/lab-jobs.yaml"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("cluster lab-64: 8 nodes, 64 GPUs"));
  EXPECT_THAT(r.out, HasSubstr("finetune-16"));
  EXPECT_THAT(r.out, HasSubstr("within one leaf"));
  EXPECT_THAT(r.out, HasSubstr("5 of 6 gangs placed"));
}

TEST(DryRunCli, JsonHasRequiredFields) {
  CliResult r = Topogang("dry-run --format json --cluster " + Example("clusters/meta-16k.yaml") +
                             " --jobs " + Example("jobs/large-jobs.yaml"),
                         false);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 16u);
  for (const auto& g : j) {
    for (const char* k : {"gang", "placed", "nodes", "tier", "bandwidth_gbps", "reason"}) {
      EXPECT_TRUE(g.contains(k)) << k;
    }
  }
  EXPECT_EQ(j[0]["gang"], "pretrain-1024");
  EXPECT_EQ(j[0]["placed"], true);
  EXPECT_EQ(j[0]["nodes"].size(), 128u);
  EXPECT_EQ(j[0]["tier"], "spine");
}

TEST(DryRunCli, DrainedNodesAreAvoided) {
  std::string jobs = TempFile("one.yaml", "jobs: [{name: a, members: 4, gpus_per_member: 8}]\n");
  CliResult r = Topogang("dry-run --format json --cluster " + Example("clusters/lab-64.yaml") +
                             " --jobs " + jobs + " --drain lab-a1,lab-b2",
                         false);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  for (const auto& n : j[0]["nodes"]) {
    EXPECT_NE(n, "lab-a1");
    EXPECT_NE(n, "lab-b2");
  }
  EXPECT_EQ(j[0]["tier"], "spine") << "no leaf has 4 healthy nodes left";
}

TEST(DryRunCli, BadInputExitsTwoWithClearMessage) {
  std::string cluster = Example("clusters/lab-64.yaml");
  std::string jobs = Example("jobs/lab-jobs.yaml");
  CliResult r = Topogang("dry-run --cluster /nonexistent.yaml --jobs " + jobs);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("/nonexistent.yaml: cannot open"));
  std::string bad = TempFile("bad.yaml", "nodes:\n  - {name: a, gpus: -3}\n");
  r = Topogang("dry-run --cluster " + bad + " --jobs " + jobs);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("bad.yaml:2:21: gpus: must be between 0 and 128, got -3"));
  std::string badjobs = TempFile("badjobs.yaml", "jobs: [{name: x, members: many}]\n");
  r = Topogang("dry-run --cluster " + cluster + " --jobs " + badjobs);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("members: expected an integer"));
  r = Topogang("dry-run --cluster " + cluster + " --jobs " + jobs + " --drain nosuchnode");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("no node named 'nosuchnode'"));
  r = Topogang("dry-run --cluster " + cluster + " --jobs " + jobs + " --fromat json");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("unknown flag --fromat"));
  r = Topogang("dry-run --cluster " + cluster);
  EXPECT_EQ(r.code, 2);
  r = Topogang("frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("unknown command"));
  r = Topogang("dry-run --cluster /dev/zero --jobs " + jobs);
  EXPECT_EQ(r.code, 2);
}

TEST(DryRunCli, HelpExitsZero) {
  CliResult r = Topogang("dry-run --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("usage: topogang dry-run"));
}

}  // namespace
}  // namespace topogang
