#include "topology/cluster_spec.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace topogang {

absl::Status ValidateClusterSpec(const ClusterSpec& spec) {
  if (spec.nodes.size() > static_cast<size_t>(kMaxNodes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster has ", spec.nodes.size(), " nodes; at most ", kMaxNodes));
  }
  absl::flat_hash_set<absl::string_view> names;
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    const NodeSpec& n = spec.nodes[i];
    if (n.name.empty() || n.name.size() > 253) {
      return absl::InvalidArgumentError(
          absl::StrCat("node #", i, ": name must be 1..253 characters"));
    }
    if (!names.insert(n.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate node name '", n.name, "'"));
    }
    if (n.gpus < 0 || n.gpus > kMaxGpusPerNode) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", n.name, "': gpus must be 0..", kMaxGpusPerNode, ", got ", n.gpus));
    }
  }
  return absl::OkStatus();
}

}  // namespace topogang
