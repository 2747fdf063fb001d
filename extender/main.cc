// topogangd: the kube-scheduler extender daemon.
//
//   topogangd --cluster FILE [--config FILE] --http-port P [--bind-address 127.0.0.1]
//       standalone: the cluster file is the node set, bindings are recorded in memory
//   topogangd (--kubeconfig FILE | --in-cluster) [--config FILE] [--http-port P]
//       cluster mode: nodes and pods from the API server, bindings through it
//   Either mode also serves the gRPC placement and agent services when the config has a
//   daemon.grpc section or --grpc-address is given (docs/grpc.md).
//
// SIGTERM/SIGINT: stop listening, fail held binds, exit 0.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "common/file_util.h"
#include "config/config_file.h"
#include "config/loader.h"
#include "extender/daemon_config.h"
#include "extender/daemon_state.h"
#include "extender/extender_service.h"
#include "extender/grpc_config.h"
#include "extender/grpc_server.h"
#include "extender/http_server.h"
#include "extender/kube_sync.h"

namespace topogang {
namespace {

constexpr char kUsage[] =
    "usage: topogangd --cluster FILE [--config FILE] --http-port P [--bind-address ADDR]\n"
    "       topogangd (--kubeconfig FILE | --in-cluster) [--config FILE] [--http-port P]\n"
    "options: --url-prefix PATH  --bind-window-ms N  --gpu-resource NAME\n"
    "         --grpc-address HOST:PORT (gRPC placement + agent services; also daemon.grpc)\n"
    "         --grpc-insecure-agents (accept agents without a token or certificate: demos only)\n";

int Fail(const std::string& msg) {
  std::cerr << "topogangd: " << msg << "\n";
  return 2;
}

int Main(int argc, char** argv) {
  auto args = cli::ParseArgs(argc, argv, 1,
                             {"cluster", "config", "http-port", "bind-address", "url-prefix",
                              "bind-window-ms", "gpu-resource", "kubeconfig", "grpc-address"},
                             {"in-cluster", "help", "grpc-insecure-agents"});
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
  }
  // Block the stop signals in every thread; main waits for them with sigwait.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  SystemClock clock;
  std::unique_ptr<DaemonState> state;
  std::unique_ptr<Binder> binder;
  std::unique_ptr<KubeSync> sync;
  TopologyConfig topology;
  if (!kube) {
    auto loaded = LoadClusterFiles(args->Get("cluster"), args->Get("config"));
    if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
    auto cluster = BuildCluster(*loaded);
    if (!cluster.ok()) return Fail(std::string(cluster.status().message()));
    for (const std::string& w : loaded->warnings) std::cerr << "topogangd: warning: " << w << "\n";
    state = std::make_unique<DaemonState>(
        GangScheduler(std::move(*cluster), loaded->config.scheduler), clock);
    binder = std::make_unique<MemoryBinder>();
  } else {
    if (config.topology) {
      topology = *config.topology;
    } else {
      auto preset = PresetTopology("topograph");
      if (!preset.ok()) return Fail(std::string(preset.status().message()));
      topology = *preset;
    }
    auto kc = args->Has("in-cluster") ? InClusterConfig() : LoadKubeconfig(args->Get("kubeconfig"));
    if (!kc.ok()) return Fail(std::string(kc.status().message()));
    auto empty = Cluster::Build(ClusterSpec{}, topology);
    if (!empty.ok()) return Fail(std::string(empty.status().message()));
    state =
        std::make_unique<DaemonState>(GangScheduler(std::move(*empty), config.scheduler), clock);
    auto client = std::make_shared<KubeClient>(*kc);
    binder = std::make_unique<KubeBinder>(client);
    sync = std::make_unique<KubeSync>(client, *state, topology, daemon.extender.gpu_resource);
  }
  ExtenderService service(*state, *binder, daemon.extender);
  ExtenderHttpServer server(service, daemon.http);
  if (sync) {
    server.SetReady(false);
    sync->Attach(&service, [&server] { server.SetReady(true); });
  }
  if (absl::Status s = server.Start(); !s.ok()) return Fail(std::string(s.message()));
  if (sync) sync->Start();
  std::unique_ptr<GrpcServer> grpc_server;
  if (want_grpc) {
    auto g = StartGrpcServer(*state, grpc_options);
    if (!g.ok()) {
      server.Stop();
      return Fail(absl::StrCat("gRPC on ", grpc_options.address, ": ", g.status().message()));
    }
    grpc_server = *std::move(g);
    std::cerr << "topogangd: gRPC on port " << grpc_server->port() << std::endl;
  }
  std::cerr << "topogangd: serving " << server.BaseUrl() << daemon.http.prefix << "/{"
            << daemon.http.filter_verb << "," << daemon.http.prioritize_verb << ","
            << daemon.http.bind_verb << "," << daemon.http.preempt_verb << "} ("
            << (kube ? "cluster mode" : "standalone") << ")" << std::endl;

  int sig = 0;
  sigwait(&stop, &sig);
  std::cerr << "topogangd: signal " << sig << ", shutting down" << std::endl;
  if (sync) sync->Stop();
  if (grpc_server) grpc_server->Shutdown();
  server.Stop();
  state->Shutdown();
  return 0;
}

}  // namespace
}  // namespace topogang

int main(int argc, char** argv) { return topogang::Main(argc, argv); }
