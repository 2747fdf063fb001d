// Per-job node exclusion in the daemon (#13): the nodes one gang must not be planned on, beyond
// what kube-scheduler did not offer it. A gang names nodes to avoid (topogang.io/avoid-nodes),
// and a gang whose member pod failed on a node avoids that node when it is planned again (a
// controller restarting the job recreates its pods under the same gang) for
// failed_node_memory. Gangs of slow_node_gang_gpus or more also avoid the nodes the agents'
// slowness signals made slow (DaemonState::slow_nodes). Node names, not model indexes: they
// survive model rebuilds.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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
  std::map<std::string, std::vector<std::string>> why;  // node -> reasons, sorted by node
  if (auto it = pod.annotations.find(kAvoidNodesKey); it != pod.annotations.end()) {
    for (absl::string_view part : absl::StrSplit(it->second, ',', absl::SkipWhitespace())) {
      part = absl::StripAsciiWhitespace(part);
      if (!IsNodeName(part)) {
        return absl::InvalidArgumentError(absl::StrCat(kAvoidNodesKey, ": \"", part.substr(0, 64),
                                                       "\" is not a node name (comma-separated "
                                                       "DNS subdomain names)"));
      }
      if (why.size() >= kMaxAvoidedNodes) {
        return absl::InvalidArgumentError(
            absl::StrCat(kAvoidNodesKey, ": more than ", kMaxAvoidedNodes, " nodes"));
      }
      why[std::string(part)].push_back(absl::StrCat("named in ", kAvoidNodesKey));
    }
  }
  const absl::Time now = state_.clock().Now();
  if (auto f = failed_on_.find(gang); f != failed_on_.end()) {
    for (auto it = f->second.begin(); it != f->second.end();) {
      if (now - it->second > options_.failed_node_memory) {
        it = f->second.erase(it);
      } else {
        why[it->first].push_back(absl::StrCat(
            "a member failed here ",
            absl::FormatDuration(absl::Trunc(now - it->second, absl::Seconds(1))), " ago"));
        ++it;
      }
    }
    if (f->second.empty()) failed_on_.erase(f);
  }
  if (options_.slow_node_gang_gpus > 0 && spec.total_gpus() >= options_.slow_node_gang_gpus) {
    for (const std::string& n : state_.slow_nodes().Slow(now)) {
      why[n].push_back(
          SlowNodeReason(state_.slow_nodes().Describe(n, now), options_.slow_node_gang_gpus));
    }
  }
  std::vector<std::string> out;
  std::vector<AvoidanceBook::Node> book;
  for (auto& [node, reasons] : why) {
    out.push_back(node);
    book.push_back({node, absl::StrJoin(reasons, "; ")});
  }
  state_.avoidance().Record(gang, std::move(book));
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

absl::StatusOr<const GangRecord*> GangLedger::AdmitAvoidingLocked(
    GangScheduler& s, const GangSpec& spec, const std::vector<std::string>& avoid, absl::Time now,
    absl::Time waiting_since) {
  const std::string& id = spec.name;
  auto admit = [&] {
    return admission_->Admit(s, spec, now, ExclusionLocked(id), HoldExclusionLocked(),
                             waiting_since);
  };
  absl::StatusOr<const GangRecord*> r = admit();
  if (!r.ok() || avoid.empty()) return r;
  for (const MemberPlacement& m : (*r)->placement.members) {
    if (m.node >= 0 &&
        std::binary_search(avoid.begin(), avoid.end(), s.cluster().node(m.node).name)) {
      // Started earlier by a queue pass that did not know what it avoids (a model rebuild
      // forgets it): planned again without those nodes, keeping its place in line.
      (void)s.Release(id);
      return admit();
    }
  }
  return r;
}

}  // namespace topogang
