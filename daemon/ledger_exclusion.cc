// Per-job node exclusion in the daemon (#13): the nodes one gang must not be planned on, beyond
// what kube-scheduler did not offer it. A gang names nodes to avoid (topogang.io/avoid-nodes),
// and a gang whose member pod failed on a node avoids that node when it is planned again (a
// controller restarting the job recreates its pods under the same gang) for
// failed_node_memory. Gangs of slow_node_gang_gpus or more also avoid the nodes the agents'
// slowness signals made slow (DaemonState::slow_nodes). Node names, not model indexes: they
// survive model rebuilds.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "daemon/gang_ledger.h"
#include "daemon/ledger_util.h"

namespace topogang {
namespace {

// A node name as the API server accepts one: a DNS subdomain (RFC 1123).
bool IsNodeName(absl::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return s.front() != '-' && s.front() != '.' && s.back() != '-' && s.back() != '.';
}

}  // namespace

absl::StatusOr<std::vector<std::string>> GangLedger::AvoidedNodesLocked(const GangSpec& spec,
                                                                        const PodInfo& pod) {
  const std::string& gang = spec.name;
  std::vector<std::string> out;
  if (auto it = pod.annotations.find(kAvoidNodesKey); it != pod.annotations.end()) {
    for (absl::string_view part : absl::StrSplit(it->second, ',', absl::SkipWhitespace())) {
      part = absl::StripAsciiWhitespace(part);
      if (!IsNodeName(part)) {
        return absl::InvalidArgumentError(absl::StrCat(kAvoidNodesKey, ": \"", part.substr(0, 64),
                                                       "\" is not a node name (comma-separated "
                                                       "DNS subdomain names)"));
      }
      if (out.size() >= kMaxAvoidedNodes) {
        return absl::InvalidArgumentError(
            absl::StrCat(kAvoidNodesKey, ": more than ", kMaxAvoidedNodes, " nodes"));
      }
      out.emplace_back(part);
    }
  }
  if (auto f = failed_on_.find(gang); f != failed_on_.end()) {
    const absl::Time now = state_.clock().Now();
    for (auto it = f->second.begin(); it != f->second.end();) {
      if (now - it->second > options_.failed_node_memory) {
        it = f->second.erase(it);
      } else {
        out.push_back(it->first);
        ++it;
      }
    }
    if (f->second.empty()) failed_on_.erase(f);
  }
  if (options_.slow_node_gang_gpus > 0 && spec.total_gpus() >= options_.slow_node_gang_gpus) {
    for (std::string& n : state_.slow_nodes().Slow(state_.clock().Now())) {
      out.push_back(std::move(n));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void GangLedger::RecordFailureLocked(const std::string& gang, const std::string& node) {
  if (gang.empty() || node.empty() || options_.failed_node_memory <= absl::ZeroDuration()) return;
  if (failed_on_.size() > 10000) failed_on_.clear();  // bounded: a memory, not a record
  failed_on_[gang][node] = state_.clock().Now();
  state_.Publish({0,
                  {},
                  "failed-on",
                  gang,
                  node,
                  absl::StrCat("a member failed on ", node,
                               "; the gang avoids it when planned "
                               "again")});
}

std::vector<int> GangLedger::NodeIndexes(const Cluster& c, const std::vector<std::string>& names) {
  std::vector<int> out;
  for (const std::string& n : names) {
    if (int i = c.FindNode(n); i >= 0) out.push_back(i);
  }
  return out;
}

}  // namespace topogang
