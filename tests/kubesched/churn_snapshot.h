// What the churn test's checker reads in one consistent snapshot of the API server's pods: the
// placements no user may ever see, and how many members of each gang are bound (the test tracks
// how long a gang stays partly bound).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json_util.h"
#include "tests/kubesched/churn_model.h"

namespace topogang::kubesched::churn {

struct Snapshot {
  std::vector<std::string> violations;
  std::map<std::string, int> bound_of_gang;  // topogang.io/gang label -> members bound
};

// `nodes`: every node the test ever created, whether it is in the cluster now or not (a pod
// stays bound to a deleted node until the pod garbage collector deletes it).
inline Snapshot ReadSnapshot(const std::vector<Json>& pods,
                             const std::map<std::string, NodeSpec>& nodes) {
  Snapshot out;
  std::map<std::string, int> used;
  std::map<std::string, std::vector<std::string>> on;
  for (const Json& p : pods) {
    const std::string node = p["spec"].value("nodeName", "");
    if (node.empty()) continue;
    const std::string name = p["metadata"].value("name", "");
    used[node] += GpusOf(p);
    on[node].push_back(name);
    auto it = nodes.find(node);
    if (it == nodes.end()) {
      out.violations.push_back(absl::StrCat(name, " bound to unknown node ", node));
      continue;
    }
    const Json& sel = p["spec"].contains("nodeSelector") ? p["spec"]["nodeSelector"] : Json();
    if (sel.is_object() && sel.contains("pool") && sel["pool"] != it->second.pool) {
      out.violations.push_back(absl::StrCat(name, " (pool ", sel["pool"].get<std::string>(),
                                            ") bound to ", node, " in pool ", it->second.pool));
    }
    if (it->second.tainted && !p["spec"].contains("tolerations")) {
      out.violations.push_back(
          absl::StrCat(name, " bound to tainted ", node, " without a toleration"));
    }
    const Json& labels = p["metadata"].contains("labels") ? p["metadata"]["labels"] : Json();
    if (labels.is_object() && labels.contains("topogang.io/gang")) {
      out.bound_of_gang[labels["topogang.io/gang"].get<std::string>()]++;
    }
  }
  for (const auto& [node, gpus] : used) {
    auto it = nodes.find(node);
    if (it != nodes.end() && gpus > it->second.gpus) {
      out.violations.push_back(absl::StrCat(node, ": ", gpus, " of ", it->second.gpus,
                                            " GPUs bound: ", absl::StrJoin(on[node], ", ")));
    }
  }
  return out;
}

}  // namespace topogang::kubesched::churn
