// Waking pods kube-scheduler parked. It asks again about a pod topogang refused only on a
// cluster event or after 5 minutes, but a gang can become startable without one: another gang's
// filter runs the whole queue and starts it, or the worker's timed queue pass does (a reservation
// expired, a hold gave up, a required tier lapsed). Each gang started so, without its own pod
// asking, is woken through the WakeFn (cluster mode: a Node annotation, kube/); so are the
// replacement members refused for room when the worker's sweep frees GPUs.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/gang_ledger.h"

namespace topogang {

void GangLedger::SetWaker(WakeFn wake) {
  std::lock_guard<std::mutex> lock(mu_);
  wake_ = std::move(wake);
}

bool GangLedger::OthersWaitLocked(const std::string& gang, const std::string& pod) const {
  auto it = waiting_pods_.find(gang);
  if (it == waiting_pods_.end()) return false;
  return it->second.size() > (it->second.contains(pod) ? 1u : 0u);
}

void GangLedger::WakeStartedLocked(const std::string& asker, const std::string& asker_pod) {
  std::vector<std::pair<std::string, std::string>> wakes;  // gang, node
  state_.With([&](GangScheduler& s) {
    for (std::string& gang : admission_->TakeStarted()) {
      if (gangs_.contains(gang)) continue;
      // The asker's pod is asking right now, but its other pods that were refused before may
      // be parked: woken too, or they wait for an unrelated event while its reservation runs out.
      if (gang == asker && !OthersWaitLocked(gang, asker_pod)) continue;
      const GangRecord* r = s.Find(gang);
      if (r == nullptr || r->state != GangState::kReserved || r->placement.members.empty()) {
        continue;
      }
      wakes.emplace_back(std::move(gang), s.cluster().node(r->placement.members[0].node).name);
    }
    return 0;
  });
  for (const auto& [gang, node] : wakes) {
    if (wake_) wake_(node, gang);
    state_.Publish({0,
                    {},
                    "wake",
                    gang,
                    node,
                    wake_ ? "started by the gang queue while its pods wait; kube-scheduler was "
                            "asked to try them again"
                          : "started by the gang queue while its pods wait"});
  }
}

void GangLedger::NoteRefusedRepairLocked(const std::string& id) {
  refused_repairs_.insert(id);
  repair_baseline_ = state_.With([](GangScheduler& s) {
    std::vector<int> free(s.cluster().num_nodes());
    for (int n = 0; n < s.cluster().num_nodes(); ++n) free[n] = s.cluster().NodeFreeHealthy(n);
    return free;
  });
}

void GangLedger::WakeRefusedRepairsLocked(const std::vector<std::string>& expired) {
  if (refused_repairs_.empty()) return;
  int need = 0;  // the smallest member among the refused gangs
  for (const std::string& g : refused_repairs_) {
    auto it = gangs_.find(g);
    if (it == gangs_.end()) continue;
    const int gpus = static_cast<int>(it->second.spec.gpus_per_member);
    need = need == 0 ? gpus : std::min(need, gpus);
  }
  // A node that gained free GPUs since the refusal, one with room for a member first (with
  // queueing hints off, kube-scheduler moves only the pods that fit the node that changed:
  // preCheckForNode), then the largest gain. None: nothing freed yet, or the queue's pass took
  // it again; a rebuild (node set changed) is a cluster event of its own.
  std::string node;
  state_.With([&](GangScheduler& s) {
    if (static_cast<int>(repair_baseline_.size()) != s.cluster().num_nodes()) return 0;
    std::pair<bool, int> best{false, 0};
    for (int n = 0; n < s.cluster().num_nodes(); ++n) {
      const int free = s.cluster().NodeFreeHealthy(n), gained = free - repair_baseline_[n];
      if (gained <= 0) continue;
      const std::pair<bool, int> key{free >= need, gained};
      if (node.empty() || key > best) {
        best = key;
        node = s.cluster().node(n).name;
      }
    }
    return 0;
  });
  if (node.empty()) return;
  // One Node write wakes every parked pod (kube-scheduler queues extender-refused pods on any
  // Node change), so one per sweep.
  const std::string gang = *refused_repairs_.begin();
  const std::string all = absl::StrJoin(refused_repairs_, ", ");
  refused_repairs_.clear();
  repair_baseline_.clear();
  if (wake_) wake_(node, gang);
  const std::string cause =
      expired.empty() ? "GPUs were freed since they were refused"
                      : absl::StrCat("GPUs were freed since they were refused (reservations of ",
                                     absl::StrJoin(expired, ", "), " expired)");
  state_.Publish({0,
                  {},
                  "wake",
                  gang,
                  node,
                  absl::StrCat(cause, "; the replacement members refused for lack of room (", all,
                               wake_ ? ") were asked to try again" : ") wait")});
}

}  // namespace topogang
