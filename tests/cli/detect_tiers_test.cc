// `topogang dry-run` on cluster files with no topology section: the tiers come from the label
// family the nodes carry (topology/label_family.h). Runs the real binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "tests/test_util.h"

namespace topogang {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

using testing::CliResult;
using testing::TempFile;

std::string Example(const std::string& rel) { return testing::SourceDir() + "/examples/" + rel; }

CliResult DryRun(const std::string& cluster, const std::string& jobs_yaml,
                 const std::string& extra = "") {
  std::string jobs = TempFile("detect-jobs.yaml", jobs_yaml);
  return testing::RunTopogang("dry-run --cluster " + cluster + " --jobs " + jobs + extra);
}

struct ExampleCase {
  const char* file;
  const char* header;  // the dry-run header's tiers
  const char* job;     // one gang that must land at `tier`
  const char* tier;
};

class DetectedExample : public ::testing::TestWithParam<ExampleCase> {};

TEST_P(DetectedExample, DryRunsWithTiersDetectedAndNoWarnings) {
  const ExampleCase& c = GetParam();
  CliResult r = DryRun(Example(std::string("clusters/") + c.file),
                       std::string("jobs: [{name: g, ") + c.job + "}]\n");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(c.header));
  EXPECT_THAT(r.out, Not(HasSubstr("warning"))) << "one family on every node: nothing to report";
  EXPECT_THAT(r.out, ContainsRegex(std::string("\ng +[0-9]+ +yes +") + c.tier + " "));
}

INSTANTIATE_TEST_SUITE_P(
    Families, DetectedExample,
    ::testing::Values(
        ExampleCase{"topograph-v1.yaml",
                    "72 nodes, 288 GPUs, tiers tier-2 > tier-1 > tier-0 > accelerator > node",
                    "members: 9, gpus_per_member: 4", "accelerator"},
        ExampleCase{"topograph-v1.yaml", "tiers tier-2 > tier-1 > tier-0 > accelerator > node",
                    "members: 18, gpus_per_member: 4", "tier-1"},
        ExampleCase{"aws-p5.yaml", "32 nodes, 256 GPUs, tiers layer-1 > layer-2 > layer-3 > node",
                    "members: 4, gpus_per_member: 8", "layer-3"},
        ExampleCase{"gke-a3-ultra.yaml", "32 nodes, 256 GPUs, tiers block > subblock > node",
                    "members: 16, gpus_per_member: 8", "block"},
        ExampleCase{"oci-gb200.yaml",
                    "36 nodes, 144 GPUs, tiers hpc-island > network-block > local-block > nvlink "
                    "> node",
                    "members: 18, gpus_per_member: 4", "nvlink"}),
    [](const ::testing::TestParamInfo<ExampleCase>& info) {
      std::string name = std::string(info.param.file).substr(0, 3) + "_" + info.param.tier;
      for (char& ch : name) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

constexpr char kOneNodeJob[] = "jobs: [{name: g, members: 1, gpus_per_member: 8}]\n";

TEST(DetectTiersCli, ExplicitNodesWithSubDomains) {
  std::string cluster = TempFile("v1-explicit.yaml", R"(
nodes:
  - name: a
    gpus: 4
    labels: {fabric.topograph.run/tier-1: s2, fabric.topograph.run/tier-0: s1,
             accelerator.topograph.run/domain: nvl1, accelerator.topograph.run/sub-domain: nvl1.r1}
  - name: b
    gpus: 4
    labels: {fabric.topograph.run/tier-1: s2, fabric.topograph.run/tier-0: s1,
             accelerator.topograph.run/domain: nvl1, accelerator.topograph.run/sub-domain: nvl1.r2}
)");
  CliResult r = DryRun(cluster, "jobs: [{name: g, members: 2, gpus_per_member: 4}]\n");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("tiers tier-1 > tier-0 > accelerator > sub-domain > node"));
  EXPECT_THAT(r.out, ContainsRegex("\ng +8 +yes +accelerator "));
  EXPECT_THAT(r.out, HasSubstr("topology: detected")) << "what auto chose is said";
}

TEST(DetectTiersCli, AMixIsReportedNotMerged) {
  std::string cluster = TempFile("mix.yaml", R"(
nodes:
  - {name: v1-a, gpus: 8, labels: {fabric.topograph.run/tier-0: s1}}
  - {name: v1-b, gpus: 8, labels: {fabric.topograph.run/tier-0: s1}}
  - {name: v1-c, gpus: 8, labels: {fabric.topograph.run/tier-0: s2}}
  - {name: aws-a, gpus: 8, labels: {topology.k8s.aws/network-node-layer-3: nn-1}}
  - {name: aws-b, gpus: 8, labels: {topology.k8s.aws/network-node-layer-3: nn-1}}
  - {name: bare, gpus: 8}
  - {name: cpu, gpus: 0, labels: {topology.k8s.aws/network-node-layer-3: nn-1}}
)");
  CliResult r = DryRun(cluster, "jobs: [{name: g, members: 2, gpus_per_member: 8}]\n");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("warning: topology: mixed labels: 3 of 6 GPU nodes carry no "
                               "topograph-v1 labels"));
  EXPECT_THAT(r.out, HasSubstr("2 carry aws (aws-a, aws-b); 1 carry none (bare)"));
  EXPECT_THAT(r.out, HasSubstr("tiers tier-0 > node"));
  // The two AWS nodes share a switch by their own labels, but not by the chosen family's: the
  // gang goes to the only tier-0 switch with two nodes.
  EXPECT_THAT(r.out, ContainsRegex("\ng +16 +yes +tier-0 .*v1-a, v1-b"));
}

TEST(DetectTiersCli, NoLabelsAtAllIsAFlatClusterWithAWarning) {
  std::string cluster = TempFile("bare.yaml", "nodes: [{name: a, gpus: 8}, {name: b, gpus: 8}]\n");
  CliResult r = DryRun(cluster, kOneNodeJob);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("warning: topology: none of the 2 GPU nodes carries labels of a "
                               "known family"));
  EXPECT_THAT(r.out, HasSubstr("tiers node\n"));
}

TEST(DetectTiersCli, NamedTiersOrPresetsAreNeverDetected) {
  std::string config = TempFile("tiers.yaml", R"(
topology: {tiers: [{name: rack, label: fabric.topograph.run/tier-0}]}
)");
  CliResult r = DryRun(Example("clusters/topograph-v1.yaml"), kOneNodeJob, " --config " + config);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("tiers rack > node"));
  std::string preset = TempFile("preset.yaml", "topology: {preset: aws}\n");
  r = DryRun(Example("clusters/topograph-v1.yaml"), kOneNodeJob, " --config " + preset);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("no node has label topology.k8s.aws/network-node-layer-1"));
}

TEST(DetectTiersCli, AutoKeepsTheBandwidthsWrittenNextToIt) {
  std::string config =
      TempFile("auto.yaml", "topology: {preset: auto, node_bandwidth_gbps: 999}\n");
  CliResult r = DryRun(Example("clusters/aws-p5.yaml"), kOneNodeJob, " --config " + config);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("tiers layer-1 > layer-2 > layer-3 > node"));
  EXPECT_THAT(r.out, ContainsRegex("\ng +8 +yes +node +999 "));
}

}  // namespace
}  // namespace topogang
