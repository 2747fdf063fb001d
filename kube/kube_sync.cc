#include "kube/kube_sync.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "topology/cluster.h"
#include "topology/label_family.h"

namespace topogang {

KubeSync::KubeSync(std::shared_ptr<KubeClient> client, DaemonState& state, TopologyConfig topology,
                   std::string gpu_resource, KubeSyncOptions options)
    : client_(std::move(client)),
      state_(state),
      topology_(std::move(topology)),
      resource_(std::move(gpu_resource)),
      options_(options) {}

KubeSync::~KubeSync() { Stop(); }

void KubeSync::Attach(GangLedger* ledger, std::function<void()> on_ready) {
  service_ = ledger;
  on_ready_ = std::move(on_ready);
  service_->SetNotify([this](const GangNotice& n) {
    std::lock_guard<std::mutex> lock(mu_);
    if (notices_.size() < 10000) notices_.push_back(n);
    cv_.notify_all();
  });
}

void KubeSync::Start() {
  threads_.emplace_back([this] {
    absl::Duration backoff = options_.backoff_initial;
    for (;;) {
      absl::Status s = ListAll(/*list_nodes=*/true, /*list_pods=*/true);
      if (s.ok()) break;
      std::cerr << "topogangd: initial list failed: " << s << std::endl;
      if (!SleepFor(backoff)) return;
      backoff = std::min(backoff * 2, options_.backoff_max);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      synced_ = true;
      cv_.notify_all();
    }
    if (on_ready_) on_ready_();
    std::thread pods([this] { WatchLoop(false); });
    std::thread rebuilds([this] { RebuildLoop(); });
    WatchLoop(true);
    pods.join();
    rebuilds.join();
  });
  threads_.emplace_back([this] { EventLoop(); });
}

void KubeSync::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && threads_.empty()) return;
    stop_ = true;
    cv_.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(apply_mu_);
    rebuild_stop_ = true;
  }
  rebuild_cv_.notify_all();
  client_->Cancel();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  if (service_) service_->SetNotify(nullptr);
}

bool KubeSync::SleepFor(absl::Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, absl::ToChronoNanoseconds(d), [this] { return stop_; });
  return !stop_;
}

bool KubeSync::WaitSynced(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [this] { return synced_; });
}

absl::StatusOr<std::string> KubeSync::List(const std::string& path,
                                           const std::function<void(const Json&)>& each) {
  std::string cont;
  std::string rv;
  for (int page = 0; page < 100000; ++page) {
    std::string url = absl::StrCat(path, "?limit=", options_.list_page_size,
                                   cont.empty() ? "" : "&continue=", cont);
    auto r = client_->Get(url);
    if (!r.ok()) return r.status();
    if (r->status != 200) {
      return absl::UnavailableError(
          absl::StrCat("GET ", url, ": HTTP ", r->status, ": ", r->body.substr(0, 200)));
    }
    auto j = ParseJson(r->body);
    if (!j.ok()) return j.status();
    const Json* meta = GoField(*j, "metadata");
    auto v = meta ? JsonString(*meta, "resourceVersion", "metadata.resourceVersion")
                  : absl::StatusOr<std::string>(std::string());
    if (!v.ok()) return v.status();
    rv = *v;
    auto arr = JsonArray(*j, "items", "items");
    if (!arr.ok()) return arr.status();
    if (*arr) {
      for (const Json& it : **arr) each(it);
    }
    auto c = meta ? JsonString(*meta, "continue", "metadata.continue")
                  : absl::StatusOr<std::string>(std::string());
    if (!c.ok()) return c.status();
    cont = *c;
    if (cont.empty()) break;
  }
  return rv;
}

absl::Status KubeSync::ListAll(bool list_nodes, bool list_pods) {
  // Page by page, keeping only what the model needs: a 100,000-pod cluster is never held as
  // parsed JSON at once, and CPU pods are not kept at all.
  std::map<std::string, KubeNode> nodes;
  std::map<std::string, PodInfo> pods;
  absl::StatusOr<std::string> nrv, prv;
  if (list_nodes) {
    nrv = List("/api/v1/nodes", [&](const Json& item) {
      auto n = ParseNode(item, resource_);
      if (!n.ok()) {
        std::cerr << "topogangd: skipping node: " << n.status() << std::endl;
        return;
      }
      nodes[n->name] = std::move(*n);
    });
    if (!nrv.ok()) return nrv.status();
  }
  if (list_pods) {
    prv = List("/api/v1/pods", [&](const Json& item) {
      auto p = ParsePod(item, resource_);
      if (!p.ok()) {
        std::cerr << "topogangd: skipping pod: " << p.status() << std::endl;
        return;
      }
      if (p->gpus > 0 && !p->Terminal()) pods[p->uid.empty() ? p->Key() : p->uid] = std::move(*p);
    });
    if (!prv.ok()) return prv.status();
  }
  std::lock_guard<std::mutex> lock(apply_mu_);
  if (list_nodes) {
    nodes_ = std::move(nodes);
    node_rv_ = *nrv;
  }
  if (list_pods) {
    // A pod the last list or watch showed and this list does not was deleted (or finished)
    // while the watch was down: no event will say so. Reported as deleted before the rebuild,
    // as client-go's Replace reports it (client-go/tools/cache/delta_fifo.go,
    // DeletedFinalStateUnknown), so a pending gang's reservation, a waiting gang's place in the
    // queue and any binding record of that pod go with it, instead of living on for pods that
    // will never ask again.
    if (service_) {
      for (const auto& [key, old] : pods_) {
        if (!pods.contains(key)) service_->PodDeleted(old);
      }
    }
    pods_ = std::move(pods);
    pod_rv_ = *prv;
  }
  RebuildLocked();
  return absl::OkStatus();
}

void KubeSync::RebuildLocked() {
  ClusterSpec spec;
  spec.name = "kubernetes";
  for (const auto& [name, n] : nodes_) {
    if (n.gpus > 0) spec.nodes.push_back(n.ToSpec());
  }
  TopologyConfig topology = topology_;
  if (topology_.detect) {
    // No tiers configured: read them from the label family the GPU nodes carry. Fixed once a
    // network family is found, so nodes joining later never reshape the tiers under running
    // gangs; until then (no GPU nodes yet, none labelled yet, or only NVLink cliques, which the
    // GPU operator labels before Topograph labels the network) every rebuild looks again.
    TopologyDetection d = DetectTopology(spec.nodes, topology_);
    if (d.gpu_nodes > 0 && d.summary != detection_logged_) {
      std::cerr << "topogangd: " << d.summary << std::endl;
      for (const std::string& r : d.reports) std::cerr << "topogangd: " << r << std::endl;
      detection_logged_ = d.summary;
    }
    if (!d.family.empty() && d.family != "gpu-clique") topology_ = d.topology;
    topology = std::move(d.topology);
  }
  PushSparesLocked();  // before the model: the rebuild chooses the pool with the labels as they are
  std::vector<std::string> warnings;
  auto cluster = Cluster::Build(spec, topology, &warnings);
  if (!cluster.ok()) {
    std::cerr << "topogangd: cannot build the cluster model: " << cluster.status() << std::endl;
    return;
  }
  std::vector<PodInfo> pods;
  pods.reserve(pods_.size());
  for (const auto& [k, p] : pods_) pods.push_back(p);
  if (service_) {
    absl::Status s = service_->Rebuild(std::move(*cluster), pods);
    if (!s.ok()) std::cerr << "topogangd: rebuild: " << s << std::endl;
  } else {
    state_.ReplaceScheduler(GangScheduler(
        std::move(*cluster), state_.With([](GangScheduler& g) { return g.options(); })));
  }
  ++rebuilds_;
  for (const auto& [name, n] : nodes_) {
    ApplyHealth(n);
    ApplyDrainLocked(n);
  }
  rebuild_needed_ = false;
}

void KubeSync::ScheduleRebuildLocked() {
  absl::Time now = absl::Now();
  if (!rebuild_needed_) rebuild_first_ = now;
  rebuild_last_ = now;
  rebuild_needed_ = true;
  rebuild_cv_.notify_all();
}

void KubeSync::RebuildLoop() {
  std::unique_lock<std::mutex> lock(apply_mu_);
  while (!rebuild_stop_) {
    if (!rebuild_needed_) {
      rebuild_cv_.wait(lock, [this] { return rebuild_stop_ || rebuild_needed_; });
      continue;
    }
    absl::Time due = std::min(rebuild_last_ + options_.rebuild_quiet,
                              rebuild_first_ + options_.rebuild_max_delay);
    if (absl::Now() < due) {
      rebuild_cv_.wait_for(lock, absl::ToChronoNanoseconds(due - absl::Now()));
      continue;  // re-check: more changes may have moved the deadline, or a relist rebuilt
    }
    RebuildLocked();
  }
}

void KubeSync::PushSparesLocked() {
  std::vector<std::string> marked;
  for (const auto& [name, n] : nodes_) {
    if (n.spare && n.gpus > 0) marked.push_back(name);
  }
  state_.SetMarkedSpares(std::move(marked));  // a no-op when the set did not change
}

void KubeSync::ApplyDrainLocked(const KubeNode& n) {
  // Applied when the annotation differs from what was last applied from the API server, so a
  // node event that predates our own PATCH never undoes a drain made a moment ago, and a node
  // the model does not know yet gets it at the rebuild that adds it (or at a restart's list).
  if (n.gpus <= 0) return;
  auto it = drains_applied_.find(n.name);
  const std::string want = n.drained ? "1" + n.drain_reason : "";
  if (it != drains_applied_.end() ? it->second == want : want.empty()) return;
  if (state_
          .SetNodeHealth(n.name, HealthSource::kAdminDrain, n.drained,
                         absl::StrCat("drained: ", n.drain_reason))
          .ok()) {
    drains_applied_[n.name] = want;
  }
}

void KubeSync::ApplyHealth(const KubeNode& n) {
  if (n.gpus <= 0) return;
  state_.SetNodeHealth(n.name, HealthSource::kKubeCordon, n.unschedulable, "cordoned")
      .IgnoreError();
  state_.SetNodeHealth(n.name, HealthSource::kKubeTaint, n.tainted, "taint " + n.taint)
      .IgnoreError();
  state_.SetNodeHealth(n.name, HealthSource::kKubeNotReady, !n.ready, "NotReady").IgnoreError();
}

bool KubeSync::TierLabelsDiffer(const std::map<std::string, std::string>& a,
                                const std::map<std::string, std::string>& b) const {
  auto value = [](const std::map<std::string, std::string>& m,
                  const std::string& k) -> const std::string* {
    auto it = m.find(k);
    return it == m.end() ? nullptr : &it->second;
  };
  auto differ = [&](const std::string& label) {
    const std::string* x = value(a, label);
    const std::string* y = value(b, label);
    return (x == nullptr) != (y == nullptr) || (x != nullptr && *x != *y);
  };
  if (topology_.detect) {  // no family found yet: a family label arriving may decide it
    for (const auto* m : {&a, &b}) {
      for (const auto& [k, v] : *m) {
        if (IsFamilyLabel(k) && differ(k)) return true;
      }
    }
    return false;
  }
  for (const TierSpec& t : topology_.tiers) {
    if (!t.label.empty() && differ(t.label)) return true;
  }
  return false;
}

void KubeSync::ApplyNodeLocked(const KubeNode& n, bool deleted) {
  auto it = nodes_.find(n.name);
  if (deleted) {
    if (it != nodes_.end()) {
      bool had_gpus = it->second.gpus > 0;
      const bool was_spare = it->second.spare;
      nodes_.erase(it);
      if (was_spare) PushSparesLocked();
      if (had_gpus) {
        // Gone now; out of the model at the next rebuild.
        state_.SetNodeHealth(n.name, HealthSource::kKubeNotReady, true, "deleted").IgnoreError();
        ScheduleRebuildLocked();
      }
    }
    return;
  }
  // Only what the model is built from rebuilds it: the node set, GPU capacity, SKU and the tier
  // labels. GPU Feature Discovery rewrites dozens of labels per node; a rebuild for each would
  // re-plan every pending gang for nothing.
  bool topology_changed = it == nodes_.end()
                              ? n.gpus > 0
                              : ((it->second.gpus > 0 || n.gpus > 0) &&
                                 (it->second.gpus != n.gpus || it->second.sku != n.sku ||
                                  TierLabelsDiffer(it->second.labels, n.labels)));
  const bool spare_changed = (it == nodes_.end() ? false : it->second.spare) != n.spare;
  nodes_[n.name] = n;
  // The spare label only changes which nodes are kept idle: no model rebuild, the pool at once.
  if (spare_changed) PushSparesLocked();
  ApplyDrainLocked(n);
  // Health applies at once (a node the model does not know yet is skipped; the rebuild applies
  // it); the new shape of the model waits for the burst to end.
  ApplyHealth(n);
  if (topology_changed) ScheduleRebuildLocked();
}

bool KubeSync::HandleLine(bool nodes, absl::string_view line) {
  auto j = ParseJson(line);
  if (!j.ok() || !j->is_object()) {
    std::cerr << "topogangd: bad watch line: " << line.substr(0, 200) << std::endl;
    return true;
  }
  auto type = JsonString(*j, "type", "type");
  const Json* obj = GoField(*j, "object");
  if (!type.ok() || obj == nullptr) return true;
  if (*type == "ERROR") {
    auto code = JsonInt(*obj, "code", "object.code");
    std::cerr << "topogangd: watch error: " << DumpJson(*obj).substr(0, 300) << std::endl;
    return !(code.ok() && *code == 410);  // 410: our resourceVersion is too old -> relist
  }
  const Json* meta = GoField(*obj, "metadata");
  std::string rv;
  if (meta) {
    auto v = JsonString(*meta, "resourceVersion", "metadata.resourceVersion");
    if (v.ok()) rv = *v;
  }
  std::lock_guard<std::mutex> lock(apply_mu_);
  if (!rv.empty()) (nodes ? node_rv_ : pod_rv_) = rv;
  if (*type == "BOOKMARK") return true;
  const bool deleted = *type == "DELETED";
  if (*type != "ADDED" && *type != "MODIFIED" && !deleted) return true;
  if (nodes) {
    auto n = ParseNode(*obj, resource_);
    if (!n.ok()) {
      std::cerr << "topogangd: skipping node event: " << n.status() << std::endl;
      return true;
    }
    ApplyNodeLocked(*n, deleted);
    return true;
  }
  auto p = ParsePod(*obj, resource_);
  if (!p.ok()) {
    std::cerr << "topogangd: skipping pod event: " << p.status() << std::endl;
    return true;
  }
  const std::string key = p->uid.empty() ? p->Key() : p->uid;
  if (deleted || p->Terminal()) {
    pods_.erase(key);
    if (service_ && p->gpus > 0) service_->PodDeleted(*p);
    return true;
  }
  if (p->gpus == 0) return true;
  pods_[key] = *p;
  if (service_) service_->ObservePod(*p);
  return true;
}

void KubeSync::WatchLoop(bool nodes) {
  absl::Duration backoff = options_.backoff_initial;
  const std::string base = nodes ? "/api/v1/nodes" : "/api/v1/pods";
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    std::string rv;
    {
      std::lock_guard<std::mutex> lock(apply_mu_);
      rv = nodes ? node_rv_ : pod_rv_;
    }
    std::string path = absl::StrCat(
        base, "?watch=1&allowWatchBookmarks=true&timeoutSeconds=", options_.watch_timeout_seconds,
        rv.empty() ? "" : "&resourceVersion=", rv);
    bool relist = false;
    auto r = client_->Watch(path, [&](absl::string_view line) {
      if (!HandleLine(nodes, line)) {
        relist = true;
        return false;
      }
      return true;
    });
    if (r.ok() && *r == 410) relist = true;
    if (relist) {
      ++relists_;
      // Only this loop's kind, as each client-go reflector relists its own: the other kind's
      // watch may be live and ahead of any list taken here, which would roll it back (a pod
      // deleted since would be adopted again, its deletion never seen).
      absl::Status s = ListAll(/*list_nodes=*/nodes, /*list_pods=*/!nodes);
      if (!s.ok()) {
        std::cerr << "topogangd: relist failed: " << s << std::endl;
        if (!SleepFor(backoff)) return;
        backoff = std::min(backoff * 2, options_.backoff_max);
      } else {
        backoff = options_.backoff_initial;
      }
      continue;
    }
    if (r.ok() && *r == 200) {
      backoff = options_.backoff_initial;  // the stream ended (timeout or drop): watch again
      continue;
    }
    if (!r.ok() && r.status().code() == absl::StatusCode::kCancelled) return;
    std::cerr << "topogangd: watch " << base << ": "
              << (r.ok() ? absl::StrCat("HTTP ", *r) : r.status().ToString()) << std::endl;
    if (!SleepFor(backoff)) return;
    backoff = std::min(backoff * 2, options_.backoff_max);
  }
}

void KubeSync::EventLoop() {
  for (;;) {
    GangNotice n;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !notices_.empty(); });
      if (stop_) return;
      n = std::move(notices_.front());
      notices_.pop_front();
    }
    int posted = 0;
    for (const PodBinding& pod : n.pods) {
      if (posted++ >= 20) break;  // one event per pod, bounded for huge gangs
      auto r = client_->Post(
          absl::StrCat("/api/v1/namespaces/", PathEscape(pod.pod_namespace), "/events"),
          MakePodEvent(pod, n.type, n.reason, n.message, absl::Now()));
      if (r.ok() && (r->status == 201 || r->status == 200)) {
        ++events_posted_;
      } else {
        std::cerr << "topogangd: posting event: "
                  << (r.ok() ? absl::StrCat("HTTP ", r->status) : r.status().ToString())
                  << std::endl;
      }
    }
  }
}

}  // namespace topogang
