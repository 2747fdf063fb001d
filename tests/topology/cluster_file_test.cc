#include "topology/cluster_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/file_util.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const std::string& text) {
  auto r = ParseClusterFile(text, "c.yaml");
  EXPECT_FALSE(r.ok()) << "expected an error for:\n" << text;
  return r.ok() ? "" : std::string(r.status().message());
}

TEST(ClusterFile, ExplicitForm) {
  auto r = ParseClusterFile(R"(
name: tiny
nodes:
  - name: n1
    gpus: 8
    sku: H100
    labels: {network.topology.nvidia.com/leaf: l1}
  - {name: n2, gpus: 4}
)",
                            "c.yaml");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->name, "tiny");
  ASSERT_EQ(r->nodes.size(), 2u);
  EXPECT_EQ(r->nodes[0].labels.at("network.topology.nvidia.com/leaf"), "l1");
  EXPECT_EQ(r->nodes[1].gpus, 4);
  EXPECT_FALSE(r->topology.has_value());
}

TEST(ClusterFile, GeneratorForm) {
  auto r = ParseClusterFile(R"(
topology: {preset: gb200}
generate: {zones: 1, spines_per_zone: 2, leaves_per_spine: 2, nodes_per_leaf: 18,
           gpus_per_node: 4, nvlink_domain_nodes: 9, skus: [GB200],
           labels: {nvlink: nvidia.com/gpu.clique}}
)",
                            "c.yaml");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->nodes.size(), 72u);
  EXPECT_EQ(r->nodes[0].labels.at("nvidia.com/gpu.clique"), "nvl0");
  EXPECT_EQ(r->nodes[9].labels.at("nvidia.com/gpu.clique"), "nvl1");
  EXPECT_EQ(r->topology->preset, "gb200");
  auto c = Cluster::Build(*r, *r->topology);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->LevelName(3), "nvlink");
  EXPECT_EQ(c->MaxDomainGpus(3), 36);
}

TEST(ClusterFile, MixedSkusAlternateByLeaf) {
  auto r = ParseClusterFile(
      "generate: {leaves_per_spine: 2, nodes_per_leaf: 1, skus: [H100, A100]}\n", "c.yaml");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->nodes[0].sku, "H100");
  EXPECT_EQ(r->nodes[1].sku, "A100");
}

TEST(ClusterFile, GeneratorEmptyLabelKeyWritesNoLabel) {
  auto r = ParseClusterFile(R"(
generate: {spines_per_zone: 2, nodes_per_leaf: 2,
           labels: {zone: "", spine: cloud.google.com/gce-topology-block,
                    leaf: cloud.google.com/gce-topology-subblock}}
)",
                            "c.yaml");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->nodes.size(), 4u);
  EXPECT_EQ(r->nodes[0].labels.size(), 2u);
  EXPECT_EQ(r->nodes[2].labels.at("cloud.google.com/gce-topology-block"), "spine1");
  EXPECT_THAT(ErrorOf("generate: {zones: 2, nodes_per_leaf: 2, labels: {zone: \"\"}}\n"),
              HasSubstr("generate.labels.zone: an empty key writes no label, so its count must "
                        "be 1"));
  EXPECT_THAT(ErrorOf("generate: {nodes_per_leaf: 2, nvlink_domain_nodes: 1, "
                      "labels: {nvlink: \"\"}}\n"),
              HasSubstr("nvlink_domain_nodes must be 0"));
}

TEST(ClusterFile, ShippedExamplesParseAndBuild) {
  for (const char* f :
       {"lab-64", "meta-16k", "hyperscale-100k", "gb200-nvl72", "mixed-h100-a100"}) {
    std::string path = testing::SourceDir() + "/examples/clusters/" + f + ".yaml";
    auto text = ReadFileToString(path);
    ASSERT_TRUE(text.ok()) << text.status();
    auto spec = ParseClusterFile(*text, path);
    ASSERT_TRUE(spec.ok()) << spec.status();
    auto c = Cluster::Build(*spec, spec->topology ? *spec->topology : *PresetTopology("topograph"));
    ASSERT_TRUE(c.ok()) << f << ": " << c.status();
    EXPECT_GT(c->num_gpus(), 0);
  }
}

TEST(ClusterFile, ErrorsNameFileLineAndProblem) {
  EXPECT_THAT(ErrorOf("nodes: [ {name: a, gpus: 8}\n"), HasSubstr("c.yaml:"));
  EXPECT_THAT(ErrorOf("nodes: [ {name: a, gpus: 8}\n"), HasSubstr("invalid YAML"));
  EXPECT_THAT(ErrorOf("nodes:\n  - {name: a, gpus: -2}\n"),
              HasSubstr("c.yaml:2:21: gpus: must be between 0 and 128, got -2"));
  EXPECT_THAT(ErrorOf("nodes:\n  - {name: a, gpus: 100000}\n"), HasSubstr("got 100000"));
  EXPECT_THAT(ErrorOf("nodes:\n  - {name: a, gpus: eight}\n"), HasSubstr("expected an integer"));
  EXPECT_THAT(ErrorOf("nodes:\n  - {name: a, gpus: 8}\n  - {name: a, gpus: 8}\n"),
              HasSubstr("c.yaml:3:5: nodes[1]: duplicate node name 'a' (first at nodes[0])"));
  EXPECT_THAT(ErrorOf("nodes:\n  - {name: a, gpu: 8}\n"), HasSubstr("unknown key 'gpu'"));
  EXPECT_THAT(ErrorOf("nodes:\n  - {gpus: 8}\n"), HasSubstr("missing required key 'name'"));
  EXPECT_THAT(ErrorOf("nodes:\n  - {name: a, gpus: 8, labels: [x]}\n"),
              HasSubstr("labels: expected a mapping"));
  EXPECT_THAT(ErrorOf("name: x\n"), HasSubstr("exactly one of 'nodes' or 'generate'"));
  EXPECT_THAT(ErrorOf("[1, 2]\n"), HasSubstr("expected a mapping at the top level"));
  EXPECT_THAT(ErrorOf("generate: {zones: 1000, spines_per_zone: 1000, nodes_per_leaf: 1000}\n"),
              HasSubstr("at most 200000"));
  EXPECT_THAT(ErrorOf("generate: {nodes_per_leaf: 0}\n"), HasSubstr("nodes_per_leaf"));
  EXPECT_THAT(ErrorOf("generate: {nodes_per_leaf: 2, skus: []}\n"), HasSubstr("skus"));
  EXPECT_THAT(ErrorOf("topology: {preset: nope}\ngenerate: {nodes_per_leaf: 2}\n"),
              HasSubstr("unknown topology preset 'nope'"));
  EXPECT_THAT(ErrorOf(""), HasSubstr("c.yaml"));
}

}  // namespace
}  // namespace topogang
