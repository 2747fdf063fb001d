// The small cluster several end-to-end tests share: 8 nodes of 8 GPUs, gpu-node-0 .. gpu-node-7,
// under one spine in two leaves of four (leaf-0: nodes 0-3, leaf-1: nodes 4-7), each node with
// the pod capacity a kubelet reports.
#pragma once

#include <string>

#include "absl/strings/str_cat.h"
#include "common/json_util.h"
#include "tests/support/fake_apiserver.h"

namespace topogang::kubesched::testing {

inline std::string TwoLeafNodeName(int i) { return absl::StrCat("gpu-node-", i); }

// "leaf-0" or "leaf-1" for a node of this cluster.
inline std::string TwoLeafLeafOf(const std::string& node) {
  return std::stoi(node.substr(9)) < 4 ? "leaf-0" : "leaf-1";
}

inline Json TwoLeafNode(int i) {
  Json n = topogang::testing::MakeNode(
      TwoLeafNodeName(i), 8,
      {{"network.topology.nvidia.com/spine", "spine-0"},
       {"network.topology.nvidia.com/leaf", TwoLeafLeafOf(TwoLeafNodeName(i))}});
  n["status"]["allocatable"]["pods"] = "110";
  return n;
}

}  // namespace topogang::kubesched::testing
