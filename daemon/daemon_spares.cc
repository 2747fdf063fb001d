// DaemonState's hot spares (issue #13): the pool (scheduler/spares.h) kept in step with the model,
// health changes applied with the spares hidden, and the report `topogang spares` and the metrics
// read. The pool holds model node indexes, so it is rebuilt whenever the model is replaced.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/daemon_state.h"

namespace topogang {

void DaemonState::SetSpareOptions(const SpareOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  spare_options_.tier = options.tier;
  spare_options_.per_domain = options.per_domain;
  RebuildSparesLocked();
}

void DaemonState::SetMarkedSpares(std::vector<std::string> nodes) {
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::lock_guard<std::mutex> lock(mu_);
  if (nodes == spare_options_.marked_nodes) return;
  spare_options_.marked_nodes = std::move(nodes);
  RebuildSparesLocked();
}

void DaemonState::RebuildSpares() {
  std::lock_guard<std::mutex> lock(mu_);
  RebuildSparesLocked();
}

void DaemonState::RebuildSparesLocked() {
  const Cluster& c = sched_.cluster();
  std::string error;
  SparePool pool;
  if ((spare_options_.per_domain > 0 || !spare_options_.marked_nodes.empty()) &&
      c.num_nodes() > 0) {
    SpareOptions o = spare_options_;
    o.marked_nodes.clear();
    // A labelled node without GPUs (or not synced yet) is not in the model: nothing to keep idle.
    for (const std::string& name : spare_options_.marked_nodes) {
      if (c.FindNode(name) >= 0) o.marked_nodes.push_back(name);
    }
    auto built = SparePool::Build(c, o);
    if (built.ok()) {
      pool = *std::move(built);
    } else {
      error = std::string(built.status().message());
    }
  }
  spares_ = std::move(pool);
  if (error != spare_error_) {
    spare_error_ = error;
    // Once per change, not per rebuild: a tier missing from the model stays missing a while.
    if (!error.empty()) {
      PublishLocked({0, clock_.Now(), "spares-invalid", "", "",
                     absl::StrCat(error, "; no spares are kept (daemon.spares)")});
    }
  }
}

std::vector<ReplanEvent> DaemonState::ApplyHealthLocked(
    int node, const std::function<std::vector<ReplanEvent>()>& change) {
  // Reservations moved off the bad GPUs must not land on a spare. Only idle spares are hidden:
  // a mask reads as a cordon, so the core would take a replacement running on a spare for a
  // member lost to this change. The node whose health changes stays visible too: masking it
  // would undo its own change when the mask is lifted.
  const Cluster& model = sched_.cluster();
  std::vector<int> hide;
  for (int n : spares_.nodes()) {
    const NodeInfo& ni = model.node(n);
    bool idle = true;
    for (int g = ni.gpu_begin; g < ni.gpu_begin + ni.gpus && idle; ++g) idle = model.IsFree(g);
    if (n != node && idle) hide.push_back(n);
  }
  const std::vector<int> masked = sched_.MaskNodes(hide);
  std::vector<ReplanEvent> events = change();
  sched_.UnmaskNodes(masked);
  if (!spares_.nodes().empty() && !sched_.options().auto_apply_replacements) {
    const Cluster& c = sched_.cluster();
    for (ReplanEvent& e : events) {
      if (e.kind != ReplanEvent::Kind::kReplacementProposed &&
          e.kind != ReplanEvent::Kind::kReplacementImpossible) {
        continue;
      }
      // The members still name the nodes they were on, so the spare next to each is found.
      auto r = ProposeSpareReplacement(sched_, spares_, e.gang, e.lost_members);
      if (!r.ok()) continue;
      const GangRecord* rec = sched_.Find(e.gang);
      std::vector<std::string> taken;
      for (size_t k = 0; k < r->size() && k < e.lost_members.size(); ++k) {
        const int to = (*r)[k].node;
        if (to < 0 || !spares_.IsSpare(to) || rec == nullptr) continue;
        const int from = rec->placement.members[e.lost_members[k]].node;
        taken.push_back(absl::StrCat("spare ", c.node(to).name, " for member ", e.lost_members[k],
                                     " (was on ", from >= 0 ? c.node(from).name : "?", ")"));
      }
      e.kind = ReplanEvent::Kind::kReplacementProposed;
      e.replacement = *std::move(r);
      if (!taken.empty()) {
        e.detail = absl::StrCat(e.detail, e.detail.empty() ? "" : "; ", absl::StrJoin(taken, ", "));
      }
    }
  }
  RebuildSparesLocked();  // a spare that went bad is replaced by an idle node of its domain
  return events;
}

DaemonState::SpareReport DaemonState::ListSpares() const {
  std::lock_guard<std::mutex> lock(mu_);
  const Cluster& c = sched_.cluster();
  SpareReport r;
  r.per_domain = spare_options_.per_domain;
  r.error = spare_error_;
  const bool on = spare_options_.per_domain > 0 || !spare_options_.marked_nodes.empty();
  if (on && c.num_nodes() > 0 && spares_.level() < c.num_levels()) {
    r.tier = c.LevelName(spares_.level());
  }
  std::map<int, std::vector<std::string>> holders;
  for (const auto& [name, rec] : sched_.gangs()) {
    for (const MemberPlacement& m : rec.placement.members) {
      if (m.node < 0 || !spares_.IsSpare(m.node)) continue;
      std::vector<std::string>& h = holders[m.node];
      if (h.empty() || h.back() != name) h.push_back(name);
    }
  }
  for (int n : spares_.nodes()) {
    const NodeInfo& ni = c.node(n);
    SpareNode s;
    s.node = ni.name;
    s.domain = c.DomainPath(c.AncestorAt(c.NodeDomain(n), spares_.level()));
    s.gpus = ni.gpus;
    s.free_gpus = c.NodeFreeHealthy(n);
    for (int g = ni.gpu_begin; g < ni.gpu_begin + ni.gpus; ++g) s.used_gpus += c.IsFree(g) ? 0 : 1;
    s.marked = std::binary_search(spare_options_.marked_nodes.begin(),
                                  spare_options_.marked_nodes.end(), ni.name);
    s.healthy = !c.NodeCordoned(n);
    if (auto h = holders.find(n); h != holders.end()) s.gangs = h->second;
    r.nodes.push_back(std::move(s));
  }
  return r;
}

}  // namespace topogang
