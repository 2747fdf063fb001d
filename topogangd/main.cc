// topogangd: the kube-scheduler extender daemon.
//
//   topogangd --cluster FILE [--config FILE] --http-port P [--bind-address 127.0.0.1]
//       standalone: the cluster file is the node set, bindings are recorded in memory
//   topogangd (--kubeconfig FILE | --in-cluster) [--config FILE] [--http-port P]
//       cluster mode: nodes and pods from the API server, bindings through it
//   Either mode also serves the gRPC placement and agent services when the config has a
//   daemon.grpc section or --grpc-address is given (docs/grpc.md).
//
// Cluster mode runs leader election on a Lease (daemon.leader_election, --leader-elect): every
// replica lists and watches (a warm standby), only the leader is ready and serves. See
// docs/high-availability.md.
//
// SIGTERM/SIGINT: stop listening, fail held binds, release the lease, exit 0.
// Leadership lost (renewal failed past the renew deadline): fail held binds, exit 1.
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "api/grpc_config.h"
#include "api/grpc_server.h"
#include "common/args.h"
#include "common/file_util.h"
#include "config/config_file.h"
#include "config/loader.h"
#include "daemon/daemon_state.h"
#include "daemon/gang_ledger.h"
#include "daemon/metrics.h"
#include "extender/extender_service.h"
#include "extender/http_server.h"
#include "k8s/node_info.h"
#include "kube/group_objects_watch.h"
#include "kube/kube_evictor.h"
#include "kube/kube_sync.h"
#include "kube/leader_election.h"
#include "kube/node_annotation_writer.h"
#include "kube/queue_journal.h"
#include "scheduler/spares.h"
#include "topogangd/daemon_config.h"
#include "topogangd/kube_reviewers.h"

namespace topogang {
namespace {

constexpr char kUsage[] =
    "usage: topogangd --cluster FILE [--config FILE] --http-port P [--bind-address ADDR]\n"
    "       topogangd (--kubeconfig FILE | --in-cluster) [--config FILE] [--http-port P]\n"
    "options: --url-prefix PATH  --bind-window-ms N  --gpu-resource NAME\n"
    "         --grpc-address HOST:PORT (gRPC placement + agent services; also daemon.grpc)\n"
    "         --grpc-insecure-agents (accept agents without a token or certificate: demos only)\n"
    "         --grpc-insecure-admin (accept drain/undrain from anyone: demos only)\n"
    "         --leader-elect=true|false (cluster mode; default true)  --lease-namespace NS\n"
    "         --gang-barrier auto|topogang (who holds upstream PodGroup gangs; default auto)\n"
    "         --tls-cert-file F --tls-key-file F [--tls-client-ca-file F] (or daemon.tls)\n";

int Fail(const std::string& msg) {
  std::cerr << "topogangd: " << msg << "\n";
  return 2;
}

int Main(int argc, char** argv) {
  auto args =
      ParseArgs(argc, argv, 1,
                {"cluster", "config", "http-port", "bind-address", "url-prefix", "bind-window-ms",
                 "gpu-resource", "kubeconfig", "grpc-address", "leader-elect", "lease-namespace",
                 "gang-barrier", "tls-cert-file", "tls-key-file", "tls-client-ca-file"},
                {"in-cluster", "help", "grpc-insecure-agents", "grpc-insecure-admin"});
  if (!args.ok()) return Fail(absl::StrCat(args.status().message(), "\n", kUsage));
  if (args->Has("help")) {
    std::cout << kUsage;
    return 0;
  }
  const bool kube = args->Has("kubeconfig") || args->Has("in-cluster");
  if (kube == args->Has("cluster")) {
    return Fail(
        absl::StrCat("give exactly one of --cluster or --kubeconfig/--in-cluster\n", kUsage));
  }

  // Config file (optional): topology, scheduler options, daemon section.
  TopogangConfig config;
  if (args->Has("config")) {
    auto text = ReadFileToString(args->Get("config"));
    if (!text.ok()) return Fail(std::string(text.status().message()));
    auto c = ParseConfigFile(*text, args->Get("config"));
    if (!c.ok()) return Fail(std::string(c.status().message()));
    config = *c;
  }
  auto dc = ParseDaemonConfig(config.daemon, args->Get("config", "config"));
  if (!dc.ok()) return Fail(std::string(dc.status().message()));
  DaemonConfig daemon = *dc;
  if (args->Has("http-port")) {
    int port = 0;
    if (!absl::SimpleAtoi(args->Get("http-port"), &port) || port <= 0 || port > 65535) {
      return Fail("--http-port: expected 1..65535");
    }
    daemon.http.port = port;
  }
  if (args->Has("bind-address")) daemon.http.bind_address = args->Get("bind-address");
  if (args->Has("url-prefix")) daemon.http.prefix = args->Get("url-prefix");
  if (args->Has("gpu-resource")) daemon.extender.gpu_resource = args->Get("gpu-resource");
  if (args->Has("bind-window-ms")) {
    int ms = 0;
    if (!absl::SimpleAtoi(args->Get("bind-window-ms"), &ms) || ms < 10 || ms > 600000) {
      return Fail("--bind-window-ms: expected 10..600000");
    }
    daemon.extender.bind_window = absl::Milliseconds(ms);
  }
  if (args->Has("gang-barrier")) {
    const std::string v = args->Get("gang-barrier");
    if (v != "auto" && v != "topogang") return Fail("--gang-barrier: expected auto or topogang");
    daemon.extender.gang_barrier = v == "auto" ? GangLedgerOptions::GangBarrier::kAuto
                                               : GangLedgerOptions::GangBarrier::kTopogang;
  }

  if (args->Has("tls-cert-file")) daemon.transport.tls.cert_file = args->Get("tls-cert-file");
  if (args->Has("tls-key-file")) daemon.transport.tls.key_file = args->Get("tls-key-file");
  if (args->Has("tls-client-ca-file")) {
    daemon.transport.tls.client_ca_file = args->Get("tls-client-ca-file");
  }
  if (absl::Status s = ValidateTlsFiles(daemon.transport.tls, "flags and config"); !s.ok()) {
    return Fail(std::string(s.message()));
  }

  LeaderElectionConfig election = daemon.leader_election;
  if (args->Has("leader-elect")) {
    const std::string v = args->Get("leader-elect");
    if (v != "true" && v != "false") return Fail("--leader-elect: expected true or false");
    election.enabled = v == "true";
  }
  if (args->Has("lease-namespace")) {
    election.lease_namespace = args->Get("lease-namespace");
    if (absl::Status s = ValidateLeaderElection(election, "--lease-namespace"); !s.ok()) {
      return Fail(std::string(s.message()));
    }
  }
  const bool elect = election.enabled.value_or(kube);
  if (elect && !kube) {
    return Fail("leader election needs cluster mode (--kubeconfig or --in-cluster)");
  }

  const bool want_grpc = args->Has("grpc-address") ||
                         (config.daemon.IsDefined() && config.daemon.IsMap() &&
                          config.daemon["grpc"].IsDefined() && !config.daemon["grpc"].IsNull());
  GrpcServerOptions grpc_options;
  if (want_grpc) {
    auto g = ParseGrpcConfig(config.daemon.IsMap() ? config.daemon["grpc"] : YAML::Node(),
                             args->Get("config", "config"));
    if (!g.ok()) return Fail(std::string(g.status().message()));
    grpc_options = *g;
    if (args->Has("grpc-address")) grpc_options.address = args->Get("grpc-address");
    if (args->Has("grpc-insecure-agents")) grpc_options.allow_unauthenticated_agents = true;
    if (args->Has("grpc-insecure-admin")) grpc_options.allow_unauthenticated_admin = true;
  }
  // Block the stop signals in every thread; main waits for them with sigwait.
  // Every gang member waits at the bind barrier on its own connection: a 2,000-member gang is
  // 2,000 sockets. Take the whole hard limit of open files and say so if it is short.
  if (rlimit nofile{}; getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    if (nofile.rlim_cur < nofile.rlim_max) {
      nofile.rlim_cur = nofile.rlim_max;
      setrlimit(RLIMIT_NOFILE, &nofile);
    }
    getrlimit(RLIMIT_NOFILE, &nofile);
    const rlim_t want = static_cast<rlim_t>(daemon.http.max_connections) + 256;
    if (nofile.rlim_cur != RLIM_INFINITY && nofile.rlim_cur < want) {
      std::cerr << "topogangd: warning: open-files limit " << nofile.rlim_cur
                << " is below http max_connections + 256 (" << want << "); gangs larger than ~"
                << (nofile.rlim_cur > 256 ? nofile.rlim_cur - 256 : 0)
                << " members cannot all wait at the bind barrier" << std::endl;
    }
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGUSR1);  // raised by the elector when leadership is lost
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  // Wall time: agent tokens' expiry (JWT exp) and other replicas' journal stamps are compared
  // with it. The ledger's worker times its own intervals with SteadyNow().
  SystemClock clock;
  std::unique_ptr<DaemonState> state;
  std::unique_ptr<Binder> binder;
  // Gang preemption evicts through the API server; standalone mode has none (preemption off).
  // Declared before the ledger, whose eviction queue calls it until the ledger is gone.
  std::unique_ptr<KubeEvictor> evictor;
  std::unique_ptr<KubeSync> sync;
  std::unique_ptr<GroupObjectsWatch> groups;  // PodGroups, JobSets, ... that size gangs
  // Drains and wakes, as Node annotations (declared before the ledger, which wakes through it).
  std::unique_ptr<NodeAnnotationWriter> annotations;
  KubeConfig kube_config;
  TopologyConfig topology;
  if (!kube) {
    auto loaded = LoadClusterFiles(args->Get("cluster"), args->Get("config"));
    if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
    auto cluster = BuildCluster(*loaded);
    if (!cluster.ok()) return Fail(std::string(cluster.status().message()));
    if (!loaded->topology_note.empty()) std::cerr << "topogangd: " << loaded->topology_note << "\n";
    for (const std::string& w : loaded->warnings) std::cerr << "topogangd: warning: " << w << "\n";
    // Standalone, the cluster file's node labels mark the spares (topogang.io/spare: "true").
    SpareOptions spares = daemon.spares;
    for (const NodeSpec& n : loaded->spec.nodes) {
      if (auto l = n.labels.find(kSpareNodeLabel); l != n.labels.end() && l->second == "true") {
        spares.marked_nodes.push_back(n.name);
      }
    }
    for (const auto& [tier, wait] : daemon.extender.required_tier_max_wait) {
      if (cluster->LevelByName(tier) < 0) {
        return Fail(absl::StrCat("daemon.required_tier_max_wait_seconds: '", tier,
                                 "' is not a tier of the cluster"));
      }
    }
    if (auto pool = SparePool::Build(*cluster, spares); !pool.ok()) {
      return Fail(absl::StrCat("daemon.spares: ", pool.status().message()));
    }
    state = std::make_unique<DaemonState>(
        GangScheduler(std::move(*cluster), loaded->config.scheduler), clock);
    state->slow_nodes().SetOptions(daemon.slowness);
    state->SetSpareOptions(spares);
    state->SetMarkedSpares(spares.marked_nodes);
    binder = std::make_unique<MemoryBinder>();
  } else {
    if (config.topology) {
      topology = *config.topology;
    } else {
      auto preset = PresetTopology("auto");  // KubeSync detects the tiers from the node labels
      if (!preset.ok()) return Fail(std::string(preset.status().message()));
      topology = *preset;
    }
    auto kc = args->Has("in-cluster") ? InClusterConfig() : LoadKubeconfig(args->Get("kubeconfig"));
    if (!kc.ok()) return Fail(std::string(kc.status().message()));
    auto empty = Cluster::Build(ClusterSpec{}, topology);
    if (!empty.ok()) return Fail(std::string(empty.status().message()));
    // Configured tiers are known now (the model's levels only once nodes carry them); detected
    // ones only once nodes are listed. Either way a tier missing from the model later is a
    // spares-invalid event, and no spares are kept.
    // Detected tiers are unknown here: a required-tier wait naming none of them never applies.
    std::vector<std::string> names = {"cluster"};
    for (const TierSpec& t : topology.tiers) {
      names.push_back(t.name);
      names.insert(names.end(), t.aliases.begin(), t.aliases.end());
    }
    auto known = [&](const std::string& tier) {
      return std::find(names.begin(), names.end(), tier) != names.end();
    };
    if (!topology.detect && !daemon.spares.tier.empty() && !known(daemon.spares.tier)) {
      return Fail(absl::StrCat(
          "daemon.spares.tier: '", daemon.spares.tier,
          "' is not a tier above the nodes (tiers: ", absl::StrJoin(names, ", "), ")"));
    }
    for (const auto& [tier, wait] : daemon.extender.required_tier_max_wait) {
      if (!topology.detect && tier != "node" && !known(tier)) {
        return Fail(absl::StrCat("daemon.required_tier_max_wait_seconds: '", tier,
                                 "' is not a tier of the topology (tiers: node, ",
                                 absl::StrJoin(names, ", "), ")"));
      }
    }
    state =
        std::make_unique<DaemonState>(GangScheduler(std::move(*empty), config.scheduler), clock);
    state->slow_nodes().SetOptions(daemon.slowness);
    state->SetSpareOptions(daemon.spares);  // the labelled spares come with the node list
    kube_config = *kc;
    auto client = std::make_shared<KubeClient>(*kc);
    binder = std::make_unique<KubeBinder>(client);
    if (daemon.extender.preemption) evictor = std::make_unique<KubeEvictor>(client);
    sync = std::make_unique<KubeSync>(client, *state, topology, daemon.extender.gpu_resource);
    GroupObjectsWatchOptions go;
    go.gpu_resource = daemon.extender.gpu_resource;
    groups = std::make_unique<GroupObjectsWatch>(std::make_shared<KubeClient>(*kc), go);
    // Drains are kept on the Node objects, so a restart or the standby taking over keeps them.
    annotations = std::make_unique<NodeAnnotationWriter>(client);
    state->SetDrainRecorder(
        [w = annotations.get()](const std::string& node, bool drained, const std::string& reason) {
          w->RecordDrain(node, drained, reason);
        });
  }
  // Before the service, so it outlives it (held binds failed at teardown still count).
  DaemonMetrics metrics(state.get());
  GangLedger ledger(*state, *binder, daemon.extender);
  if (groups) ledger.SetGroupLookup(groups.get());
  if (evictor) ledger.SetEvictor(evictor.get());
  if (annotations) {
    ledger.SetWaker([w = annotations.get()](const std::string& node, const std::string& gang) {
      w->RecordWake(node, gang);
    });
  }
  ExtenderService service(ledger);
  metrics.AttachLedger(&ledger);
  ExtenderHttpServer server(service, daemon.http, &metrics, daemon.transport);
  // Ready (in the Service's endpoints) only when the model is in sync AND this replica leads.
  std::atomic<bool> synced{!sync}, leading{!elect}, lost{false};
  std::mutex lost_mu;
  std::string lost_why;
  std::mutex ready_mu;  // read-and-set as one step: the sync and the elector race here
  auto update_ready = [&] {
    std::lock_guard<std::mutex> l(ready_mu);
    // A standby answers verbs with an error (a Service may route one to it during a failover):
    // its reservation ledger is empty, and two ledgers would double-book GPUs.
    server.SetLeader(leading);  // these two also set topogang_leader and topogang_ready
    server.SetReady(synced && leading);
    metrics.SetModelSynced(synced);
    // Nothing binds unless this replica leads: queued bindings fail instead.
    ledger.SetBindingAllowed(leading, "topogangd is not the leader");
  };
  // One line per decision, so an operator can tell why a gang waits.
  state->SetDecisionLogger([](const DecisionEvent& e) {
    std::cerr << "topogangd: " << e.kind << " " << (e.gang.empty() ? "-" : e.gang)
              << (e.node.empty() ? "" : " node=" + e.node) << ": " << e.detail << "\n";
  });
  update_ready();
  if (sync) {
    sync->Attach(&ledger, [&] {
      synced = true;
      update_ready();
    });
  }
  const std::string lease_namespace = election.lease_namespace.empty()
                                          ? DefaultLeaseNamespace(kServiceAccountDir)
                                          : election.lease_namespace;
  // Queue seniority across restarts and failovers (kube/queue_journal.h). Declared after the
  // ledger, whose arrivals its thread reads, so it stops first.
  std::unique_ptr<QueueJournal> journal;
  if (kube && daemon.queue_journal.enabled) {
    QueueJournalOptions jo;
    jo.name_space = lease_namespace;
    jo.name = daemon.queue_journal.configmap;
    jo.period = absl::Milliseconds(daemon.queue_journal.period_ms);
    // Its own client with a short timeout: the read runs before this replica serves.
    journal =
        std::make_unique<QueueJournal>(std::make_shared<KubeClient>(kube_config, absl::Seconds(3)),
                                       jo, [&ledger] { return ledger.QueueSnapshot(); });
  }
  // Before serving: gangs an earlier leader had queued keep their arrival.
  auto resume_queue = [&] {
    if (!journal) return;
    auto seed = journal->Load();
    if (seed.ok()) {
      ledger.SeedQueue(*seed);
      std::cerr << "topogangd: queue journal " << lease_namespace << "/"
                << daemon.queue_journal.configmap << ": " << seed->arrivals.size()
                << " waiting gangs keep their arrival" << std::endl;
      if (seed->large_overload_seen != absl::InfinitePast()) {
        std::cerr << "topogangd: queue journal: the large gangs last overloaded the cluster at "
                  << absl::FormatTime(seed->large_overload_seen) << std::endl;
      }
    } else {
      std::cerr << "topogangd: " << seed.status().message()
                << "; waiting gangs queue from their next filter" << std::endl;
    }
    journal->Start();
  };
  SteadyClock election_clock;  // deadlines must not jump with the wall clock
  std::unique_ptr<LeaderElector> elector;
  if (elect) {
    LeaderElectorOptions eo;
    eo.lease_name = election.lease_name;
    eo.lease_namespace = lease_namespace;
    eo.identity = MakeLeaderIdentity();
    eo.lease_duration = absl::Milliseconds(election.lease_duration_ms);
    eo.renew_deadline = absl::Milliseconds(election.renew_deadline_ms);
    eo.retry_period = absl::Milliseconds(election.retry_period_ms);
    LeaderCallbacks cb;
    cb.on_started_leading = [&] {
      resume_queue();
      leading = true;
      update_ready();
    };
    cb.on_stopped_leading = [&](const absl::Status& why) {
      leading = false;
      update_ready();
      if (why.ok()) return;  // released by our own shutdown
      // Lost: a standby may take over once the lease expires, so stop acting now. Held binds
      // fail (kube-scheduler retries them against the new leader). Then exit(1), like client-go:
      // this replica's in-memory ledger may disagree with what the new leader decides, and a
      // clean restart (Deployment) rejoins as a standby that relists from the API server,
      // instead of trying to reconcile a half-stale state in place.
      ledger.SetBindingAllowed(false, absl::StrCat("topogangd lost leadership: ", why.message()));
      if (journal) journal->Abandon();  // the new leader owns the record now
      ledger.FailHeldBinds(absl::StrCat("topogangd lost leadership: ", why.message()));
      {
        std::lock_guard<std::mutex> l(lost_mu);
        lost_why = std::string(why.message());
      }
      lost = true;
      kill(getpid(), SIGUSR1);  // main thread shuts down and exits 1
    };
    cb.on_new_leader = [](const std::string& holder) {
      std::cerr << "topogangd: leader election: lease holder is now "
                << (holder.empty() ? "nobody (released)" : holder) << std::endl;
    };
    // Its own client: requests time out within the renew deadline, so a hung API server
    // cannot stall renewals (the elector's watchdog enforces the deadline regardless).
    elector = std::make_unique<LeaderElector>(
        std::make_shared<KubeClient>(kube_config, eo.renew_deadline), eo, std::move(cb),
        election_clock);
  }
  if (!elector) resume_queue();
  if (absl::Status s = server.Start(); !s.ok()) return Fail(std::string(s.message()));
  if (groups) {
    // Before the pod list, so bound pods of JobSets etc. are regrouped into their gangs.
    groups->Start();
    if (!groups->WaitSynced(absl::Seconds(10))) {
      std::cerr << "topogangd: group objects not listed yet; their pods wait" << std::endl;
    }
  }
  if (sync) sync->Start();
  if (elector) elector->Start();
  std::unique_ptr<GrpcServer> grpc_server;
  if (want_grpc && kube &&
      (grpc_options.token_review.enabled || grpc_options.access_review.enabled)) {
    // Agents' ServiceAccount tokens and Drain callers are checked with the API server (its own
    // client: a review waits at most token_review.timeout).
    auto reviews = std::make_shared<KubeReviewClient>(
        std::make_shared<KubeClient>(kube_config, grpc_options.token_review.timeout));
    grpc_options.token_reviewer = std::make_shared<KubeTokenReviewer>(reviews);
    grpc_options.access_reviewer = std::make_shared<KubeAccessReviewer>(reviews);
  }
  if (want_grpc) {
    auto g = StartGrpcServer(*state, grpc_options);
    if (!g.ok()) {
      server.Stop();
      return Fail(absl::StrCat("gRPC on ", grpc_options.address, ": ", g.status().message()));
    }
    grpc_server = *std::move(g);
    metrics.SetAgentStreamsSource(
        [g = grpc_server.get()] { return static_cast<double>(g->agents().active_streams()); });
    std::cerr << "topogangd: gRPC on port " << grpc_server->port() << std::endl;
  }
  std::cerr << "topogangd: serving " << server.BaseUrl() << daemon.http.prefix << "/{"
            << daemon.http.filter_verb << "," << daemon.http.prioritize_verb << ","
            << daemon.http.bind_verb << "," << daemon.http.preempt_verb << "} ("
            << (kube ? "cluster mode" : "standalone") << ")" << std::endl;

  int sig = 0;
  for (;;) {
    sigwait(&stop, &sig);
    if (sig != SIGUSR1 || lost) break;  // a stray SIGUSR1 is not a lost lease
  }
  if (lost) {
    std::lock_guard<std::mutex> l(lost_mu);
    std::cerr << "topogangd: leadership lost (" << lost_why
              << "); exiting with status 1 to restart as a standby" << std::endl;
  } else {
    std::cerr << "topogangd: signal " << sig << ", shutting down" << std::endl;
  }
  // Stop serving before the lease is released, so two replicas never serve at once.
  leading = false;
  update_ready();
  if (sync) sync->Stop();
  if (groups) groups->Stop();
  if (grpc_server) grpc_server->Shutdown();
  server.Stop();
  if (journal && !lost) journal->Stop();  // the last arrivals, before the lease is released
  if (elector) elector->Stop();  // a leader releases the lease: the standby takes over at once
  state->Shutdown();
  return lost ? 1 : 0;
}

}  // namespace
}  // namespace topogang

int main(int argc, char** argv) { return topogang::Main(argc, argv); }
