#include "topology/cluster_file.h"

#include <string_view>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/yaml_util.h"

namespace topogang {
namespace {

absl::Status Bad(absl::string_view source, const YAML::Node& n, absl::string_view msg) {
  return absl::InvalidArgumentError(absl::StrCat(YamlWhere(source, n), ": ", msg));
}

absl::Status ParseExplicit(const YAML::Node& nodes, absl::string_view source, ClusterSpec* spec) {
  if (!nodes.IsSequence()) return Bad(source, nodes, "nodes: expected a list");
  if (nodes.size() > static_cast<size_t>(kMaxNodes)) {
    return Bad(source, nodes, absl::StrCat("nodes: at most ", kMaxNodes, " nodes"));
  }
  absl::flat_hash_map<std::string, int> seen;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const YAML::Node n = nodes[i];
    std::string ctx = absl::StrCat("nodes[", i, "]");
    if (absl::Status s = YamlCheckKeys(n, source, {"name", "gpus", "sku", "labels"}, ctx);
        !s.ok()) {
      return s;
    }
    NodeSpec node;
    auto name = YamlString(n, "name", source, std::nullopt);
    if (!name.ok()) return name.status();
    if (name->empty()) return Bad(source, n, absl::StrCat(ctx, ".name: must be non-empty"));
    auto gpus = YamlInt(n, "gpus", source, 0, kMaxGpusPerNode, std::nullopt);
    if (!gpus.ok()) return gpus.status();
    auto sku = YamlString(n, "sku", source, std::string());
    if (!sku.ok()) return sku.status();
    if (auto [it, inserted] = seen.emplace(*name, static_cast<int>(i)); !inserted) {
      return Bad(source, n,
                 absl::StrCat(ctx, ": duplicate node name '", *name, "' (first at nodes[",
                              it->second, "])"));
    }
    node.name = *name;
    node.gpus = static_cast<int>(*gpus);
    node.sku = *sku;
    YAML::Node labels = n["labels"];
    if (labels.IsDefined() && !labels.IsNull()) {
      if (!labels.IsMap())
        return Bad(source, labels, absl::StrCat(ctx, ".labels: expected a mapping"));
      for (const auto& kv : labels) {
        if (!kv.first.IsScalar() || !kv.second.IsScalar()) {
          return Bad(source, kv.first,
                     absl::StrCat(ctx, ".labels: keys and values must be strings"));
        }
        node.labels[kv.first.Scalar()] = kv.second.Scalar();
      }
    }
    spec->nodes.push_back(std::move(node));
  }
  return absl::OkStatus();
}

absl::Status ParseGenerate(const YAML::Node& g, absl::string_view source, ClusterSpec* spec) {
  if (absl::Status s =
          YamlCheckKeys(g, source,
                        {"zones", "spines_per_zone", "leaves_per_spine", "nodes_per_leaf",
                         "gpus_per_node", "nvlink_domain_nodes", "skus", "node_prefix", "labels"},
                        "generate");
      !s.ok()) {
    return s;
  }
  auto zones = YamlInt(g, "zones", source, 1, 1000, 1);
  auto spines = YamlInt(g, "spines_per_zone", source, 1, 10000, 1);
  auto leaves = YamlInt(g, "leaves_per_spine", source, 1, 10000, 1);
  auto nodes = YamlInt(g, "nodes_per_leaf", source, 1, 10000, std::nullopt);
  auto gpus = YamlInt(g, "gpus_per_node", source, 1, kMaxGpusPerNode, 8);
  auto nvl = YamlInt(g, "nvlink_domain_nodes", source, 0, 10000, 0);
  auto prefix = YamlString(g, "node_prefix", source, std::string("gpu"));
  for (const absl::Status& s : {zones.status(), spines.status(), leaves.status(), nodes.status(),
                                gpus.status(), nvl.status(), prefix.status()}) {
    if (!s.ok()) return s;
  }
  int64_t total = *zones * *spines * *leaves * *nodes;
  if (total > kMaxNodes) {
    return Bad(source, g,
               absl::StrCat("generate: ", total, " nodes requested; at most ", kMaxNodes));
  }
  std::vector<std::string> skus;
  if (YAML::Node s = g["skus"]; s.IsDefined() && !s.IsNull()) {
    if (!s.IsSequence() || s.size() == 0) {
      return Bad(source, s, "generate.skus: expected a non-empty list of SKU names");
    }
    for (const auto& item : s) {
      if (!item.IsScalar()) return Bad(source, item, "generate.skus: expected SKU names");
      skus.push_back(item.Scalar());
    }
  } else {
    skus.push_back("H100");
  }
  // Label keys, defaulting to NVIDIA Topograph's.
  std::string zone_label = "network.topology.nvidia.com/core";
  std::string spine_label = "network.topology.nvidia.com/spine";
  std::string leaf_label = "network.topology.nvidia.com/leaf";
  std::string nvl_label = "network.topology.nvidia.com/accelerator";
  if (YAML::Node l = g["labels"]; l.IsDefined() && !l.IsNull()) {
    if (absl::Status s =
            YamlCheckKeys(l, source, {"zone", "spine", "leaf", "nvlink"}, "generate.labels");
        !s.ok()) {
      return s;
    }
    // An empty key writes no label (GKE has two fabric tiers, not three); only where every node
    // would carry the same value, so nothing is merged that the counts keep apart.
    for (auto [key, dst, count] :
         {std::tuple{"zone", &zone_label, *zones}, std::tuple{"spine", &spine_label, *spines},
          std::tuple{"leaf", &leaf_label, *leaves}, std::tuple{"nvlink", &nvl_label, *nvl}}) {
      auto v = YamlString(l, key, source, *dst);
      if (!v.ok()) return v.status();
      *dst = *v;
      bool single = std::string_view(key) == "nvlink" ? count == 0 : count == 1;
      if (dst->empty() && !single) {
        return Bad(source, l[key],
                   absl::StrCat("generate.labels.", key, ": an empty key writes no label, so ",
                                std::string_view(key) == "nvlink" ? "nvlink_domain_nodes must be 0"
                                                                  : "its count must be 1"));
      }
    }
  }
  int width = 1;
  for (int64_t t = total - 1; t >= 10; t /= 10) ++width;
  if (width < 4) width = 4;
  spec->nodes.reserve(static_cast<size_t>(total));
  int64_t index = 0, leaf_index = 0;
  for (int64_t z = 0; z < *zones; ++z) {
    for (int64_t s = 0; s < *spines; ++s) {
      for (int64_t l = 0; l < *leaves; ++l, ++leaf_index) {
        for (int64_t n = 0; n < *nodes; ++n, ++index) {
          NodeSpec node;
          node.name = absl::StrFormat("%s-%0*d", *prefix, width, static_cast<int>(index));
          node.gpus = static_cast<int>(*gpus);
          node.sku = skus[static_cast<size_t>(leaf_index) % skus.size()];
          // Values repeat across parents on purpose: domains are identified by their path.
          if (!zone_label.empty()) node.labels[zone_label] = absl::StrCat("zone", z);
          if (!spine_label.empty()) node.labels[spine_label] = absl::StrCat("spine", s);
          if (!leaf_label.empty()) node.labels[leaf_label] = absl::StrCat("leaf", l);
          if (*nvl > 0) node.labels[nvl_label] = absl::StrCat("nvl", n / *nvl);
          spec->nodes.push_back(std::move(node));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClusterSpec> ParseClusterFile(absl::string_view text, absl::string_view source) {
  auto root = YamlParse(text, source);
  if (!root.ok()) return root.status();
  if (!root->IsMap())
    return Bad(source, *root, "cluster file: expected a mapping at the top level");
  if (absl::Status s =
          YamlCheckKeys(*root, source, {"name", "topology", "nodes", "generate"}, "cluster file");
      !s.ok()) {
    return s;
  }
  ClusterSpec spec;
  auto name = YamlString(*root, "name", source, std::string(source));
  if (!name.ok()) return name.status();
  spec.name = *name;
  if (YAML::Node t = (*root)["topology"]; t.IsDefined() && !t.IsNull()) {
    auto topo = ParseTopologyConfig(t, source);
    if (!topo.ok()) return topo.status();
    spec.topology = *topo;
  }
  YAML::Node nodes = (*root)["nodes"];
  YAML::Node gen = (*root)["generate"];
  bool has_nodes = nodes.IsDefined() && !nodes.IsNull();
  bool has_gen = gen.IsDefined() && !gen.IsNull();
  if (has_nodes == has_gen) {
    return Bad(source, *root, "cluster file: give exactly one of 'nodes' or 'generate'");
  }
  absl::Status s =
      has_nodes ? ParseExplicit(nodes, source, &spec) : ParseGenerate(gen, source, &spec);
  if (!s.ok()) return s;
  if (absl::Status v = ValidateClusterSpec(spec); !v.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", v.message()));
  }
  return spec;
}

}  // namespace topogang
