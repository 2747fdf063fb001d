#include "scheduler/gang_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/file_util.h"
#include "config/config_file.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const std::string& text) {
  auto r = ParseJobsFile(text, "jobs.yaml");
  EXPECT_FALSE(r.ok()) << text;
  return r.ok() ? "" : std::string(r.status().message());
}

TEST(JobsFile, ParsesAllFields) {
  auto r = ParseJobsFile(R"(
jobs:
  - name: a
    members: 4
    gpus_per_member: 8
    sku: H100
    required_tier: spine
    preferred_tier: leaf
    slice: {members: 2, tier: leaf}
    priority: 5
  - {name: b, count: 3}
)",
                         "jobs.yaml");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].slice.members, 2);
  EXPECT_EQ((*r)[0].priority, 5);
  EXPECT_EQ((*r)[3].name, "b-3");
  EXPECT_EQ((*r)[3].members, 1);
}

TEST(JobsFile, BadInputs) {
  EXPECT_THAT(ErrorOf("jobs: [{name: a, members: -1}]"), HasSubstr("members: must be between 1"));
  EXPECT_THAT(ErrorOf("jobs: [{name: a, members: 99999999999}]"), HasSubstr("members"));
  EXPECT_THAT(ErrorOf("jobs: [{name: a}, {name: a}]"), HasSubstr("duplicate job name 'a'"));
  EXPECT_THAT(ErrorOf("jobs: [{name: a, members: 3, slice: {members: 2, tier: leaf}}]"),
              HasSubstr("multiple of the slice size"));
  EXPECT_THAT(ErrorOf("jobs: [{name: a, gpus: 8}]"), HasSubstr("unknown key 'gpus'"));
  EXPECT_THAT(ErrorOf("jobs: {name: a}"), HasSubstr("expected a list"));
  EXPECT_THAT(ErrorOf("jerbs: []"), HasSubstr("unknown key 'jerbs'"));
  EXPECT_THAT(ErrorOf("jobs: [{name: a, count: 0}]"), HasSubstr("count"));
  EXPECT_THAT(ErrorOf("jobs: [{members: 2}]"),
              HasSubstr("jobs.yaml:1:8: missing required key 'name'"));
  EXPECT_THAT(ErrorOf("{{{"), HasSubstr("invalid YAML"));
}

TEST(JobsFile, ShippedExamplesParse) {
  for (const char* f : {"lab-jobs", "large-jobs", "nvl72-jobs", "mixed-jobs"}) {
    std::string path = testing::SourceDir() + "/examples/jobs/" + f + ".yaml";
    auto text = ReadFileToString(path);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_TRUE(ParseJobsFile(*text, path).ok()) << f;
  }
}

TEST(ConfigFile, SectionsAndErrors) {
  auto c = ParseConfigFile(
      "topology: {preset: aws}\nscheduler: {reservation_ttl_seconds: 5, auto_apply_replacements: "
      "true}\n",
      "cfg.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->topology->preset, "aws");
  EXPECT_EQ(c->scheduler.reservation_ttl, absl::Seconds(5));
  EXPECT_TRUE(c->scheduler.auto_apply_replacements);
  EXPECT_TRUE(ParseConfigFile("", "cfg.yaml").ok());
  EXPECT_THAT(
      ParseConfigFile("scheduler: {reservation_ttl_seconds: -1}", "cfg.yaml").status().message(),
      HasSubstr("reservation_ttl_seconds"));
  EXPECT_THAT(ParseConfigFile("schedular: {}", "cfg.yaml").status().message(),
              HasSubstr("unknown key 'schedular'"));
}

}  // namespace
}  // namespace topogang
