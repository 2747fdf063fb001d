// A daemon for gRPC tests: the lab-64 example cluster (8 nodes x 8 GPUs, leaves leaf-a and
// leaf-b), a FakeClock, the shared DaemonState and the gRPC server on a loopback port chosen by
// the OS. The heartbeat monitor thread is off: tests call monitor().CheckNow().
#pragma once

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "api/grpc_server.h"
#include "config/loader.h"
#include "daemon/daemon_state.h"
#include "scheduler/clock.h"
#include "tests/test_util.h"  // SourceDir(), BinDir()

namespace topogang::testing {

inline GangScheduler LabScheduler() {
  auto loaded = LoadClusterFiles(SourceDir() + "/examples/clusters/lab-64.yaml", "");
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  auto cluster = BuildCluster(*loaded);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return GangScheduler(*std::move(cluster), loaded->config.scheduler);
}

struct GrpcTestEnv {
  FakeClock clock{absl::FromUnixSeconds(1700000000)};
  std::unique_ptr<DaemonState> state;
  std::unique_ptr<GrpcServer> server;
  GrpcServerOptions options;

  static GrpcServerOptions PlaintextOptions() {
    GrpcServerOptions o;
    o.allow_unauthenticated_agents = true;
    o.allow_unauthenticated_admin = true;
    o.run_monitor_thread = false;
    o.heartbeat_interval = absl::Milliseconds(200);
    o.heartbeat_window = absl::Seconds(5);
    return o;
  }

  explicit GrpcTestEnv(GrpcServerOptions o = PlaintextOptions()) : options(std::move(o)) {
    state = std::make_unique<DaemonState>(LabScheduler(), clock);
    Restart();
  }
  ~GrpcTestEnv() {
    if (server) server->Shutdown();
  }
  // (Re)starts the server, on the same port when it ran before.
  void Restart() {
    if (server) {
      options.address = absl::StrCat("127.0.0.1:", server->port());
      server->Shutdown();
      server.reset();
    }
    auto s = StartGrpcServer(*state, options);
    ASSERT_TRUE(s.ok()) << s.status();
    server = *std::move(s);
  }
  std::string target() const { return absl::StrCat("127.0.0.1:", server->port()); }
  std::shared_ptr<grpc::Channel> Channel() const {
    return grpc::CreateChannel(target(), grpc::InsecureChannelCredentials());
  }
  // Waits (bounded) for an event of `kind` about `node` after seq `after`; returns it or fails.
  std::optional<DecisionEvent> WaitFor(int64_t after, absl::string_view kind,
                                       absl::string_view node = "",
                                       absl::Duration limit = absl::Seconds(20)) {
    const absl::Time end = absl::Now() + limit;
    while (absl::Now() < end) {
      for (const DecisionEvent& e : state->WaitEvents(after, end)) {
        after = e.seq;
        if (e.kind == kind && (node.empty() || e.node == node)) return e;
      }
    }
    ADD_FAILURE() << "no '" << kind << "' event for '" << node << "' within "
                  << absl::FormatDuration(limit);
    return std::nullopt;
  }
  bool GpuFaulty(absl::string_view node, int local) {
    return state->With([&](GangScheduler& s) {
      int n = s.cluster().FindNode(node);
      return s.cluster().GpuFaulty(s.cluster().node(n).gpu_begin + local);
    });
  }
};

}  // namespace topogang::testing
