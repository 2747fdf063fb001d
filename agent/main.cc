// topogang-agent: runs on every GPU node (DaemonSet). Discovers the node's GPUs through NVML
// (loaded at run time), registers them with topogangd, and streams heartbeats and GPU events.
#include <signal.h>

#include <fstream>
#include <iostream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/agent_client.h"
#include "agent/fake_source.h"
#include "agent/nvml_source.h"
#include "common/args.h"
#include "common/file_util.h"

namespace {

const char kHelp[] = R"(usage: topogang-agent --server HOST:PORT [--node NAME] [options]

Reports this node's GPUs and their health to topogangd.

  --server HOST:PORT     topogangd gRPC address
  --node NAME            node name (default: $NODE_NAME, from the downward API)
  --token-file FILE      bearer token identifying this node (or $TOPOGANG_AGENT_TOKEN): a
                         per-node token, or the pod's projected ServiceAccount token (re-read
                         when the kubelet rotates it)
  --ca FILE              CA bundle to verify topogangd (enables TLS)
  --cert FILE --key FILE client certificate (mutual TLS); its CN/SAN must be the node name
  --tls-server-name NAME expected name in topogangd's certificate
  --stream-heartbeats    heartbeats on a gRPC stream, not as UDP datagrams to the daemon's
                         gRPC port (the default, with a fallback to a stream when they get
                         no answer)
  --discover             print the GPUs NVML sees and exit
  --fake-gpus N          no NVML: pretend to have N GPUs (tests, demos)
  --fake-model NAME      model of the fake GPUs (default "NVIDIA H100 80GB HBM3")
  --fake-control FILE    fake mode: append lines "xid GPU CODE", "ecc GPU", "lost GPU",
                         "thermal GPU", "recover GPU", and the slowness signals
                         "ecc-burst GPU", "replay GPU", "throttle GPU", "slow-nccl GPU"
                         to raise events
  --fake-xid-after S:GPU:XID  fake mode: raise XID on GPU after S seconds

Exit status: 0 on SIGTERM/SIGINT, 1 when no GPUs can be found, 2 on bad flags.
)";

void FollowControlFile(const std::string& path, topogang::agent::FakeGpuSource* src,
                       std::atomic<bool>* stop) {
  std::streamoff offset = 0;
  std::string partial;
  while (!*stop) {
    std::ifstream in(path);
    if (in) {
      in.seekg(offset);
      std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      offset += static_cast<std::streamoff>(chunk.size());
      partial += chunk;
      size_t nl;
      while ((nl = partial.find('\n')) != std::string::npos) {
        std::string line = partial.substr(0, nl);
        partial.erase(0, nl + 1);
        auto ev = topogang::agent::ParseControlLine(line);
        if (!ev.ok()) {
          std::cerr << "topogang-agent: " << ev.status().message() << "\n";
        } else if (*ev) {
          src->Inject(**ev);
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace topogang;
  auto args = ParseArgs(argc, argv, 1,
                        {"server", "node", "token-file", "ca", "cert", "key", "tls-server-name",
                         "fake-gpus", "fake-model", "fake-control", "fake-xid-after"},
                        {"help", "discover", "stream-heartbeats"});
  if (!args.ok()) {
    std::cerr << "topogang-agent: " << args.status().message() << "\n\n" << kHelp;
    return 2;
  }
  if (args->Has("help")) {
    std::cout << kHelp;
    return 0;
  }
  int fake_gpus = -1;
  if (args->Has("fake-gpus") && (!absl::SimpleAtoi(args->Get("fake-gpus"), &fake_gpus) ||
                                 fake_gpus < 0 || fake_gpus > 1024)) {
    std::cerr << "topogang-agent: --fake-gpus must be 0..1024\n";
    return 2;
  }
  agent::AgentOptions o;
  o.node = args->Get("node");
  if (o.node.empty() && std::getenv("NODE_NAME")) o.node = std::getenv("NODE_NAME");

  std::unique_ptr<agent::GpuSource> source;
  agent::FakeGpuSource* fake = nullptr;
  if (fake_gpus >= 0) {
    auto f = std::make_unique<agent::FakeGpuSource>(
        fake_gpus, args->Get("fake-model", "NVIDIA H100 80GB HBM3"), o.node);
    fake = f.get();
    source = std::move(f);
  } else {
    auto nvml = agent::NvmlGpuSource::Open();
    if (!nvml.ok()) {
      std::cerr << "topogang-agent: " << nvml.status().message() << "\n";
      return 1;
    }
    std::cerr << "topogang-agent: NVML: " << (*nvml)->events_note() << "\n";
    source = *std::move(nvml);
  }
  if (args->Has("discover")) {
    auto gpus = source->Discover();
    if (!gpus.ok()) {
      std::cerr << "topogang-agent: " << gpus.status().message() << "\n";
      return 1;
    }
    std::cout << "driver " << source->DriverVersion() << ", " << gpus->size() << " GPU(s)\n";
    for (const auto& g : *gpus) {
      std::cout << "gpu " << g.index << ": " << g.model << " uuid=" << g.uuid
                << " memory=" << (g.memory_bytes >> 20)
                << "MiB nvlink_active=" << g.nvlink_active_links
                << " fabric=" << (g.fabric_cluster_uuid.empty() ? "-" : g.fabric_cluster_uuid)
                << " clique=" << g.fabric_clique_id << "\n";
    }
    return 0;
  }
  o.server = args->Get("server");
  if (o.server.empty() || o.node.empty()) {
    std::cerr << "topogang-agent: --server and --node (or NODE_NAME) are required\n\n" << kHelp;
    return 2;
  }
  std::string token_file = args->Get("token-file");
  if (!token_file.empty()) {
    // Read again at every connect and watched while connected (projected tokens rotate).
    auto t = ReadFileToString(token_file);
    if (!t.ok()) {
      std::cerr << "topogang-agent: " << t.status().message() << "\n";
      return 2;
    }
    o.token_file = token_file;
  } else if (std::getenv("TOPOGANG_AGENT_TOKEN")) {
    o.token = std::getenv("TOPOGANG_AGENT_TOKEN");
  }
  o.ca_file = args->Get("ca");
  o.cert_file = args->Get("cert");
  o.key_file = args->Get("key");
  o.tls_server_name = args->Get("tls-server-name");
  o.datagram_heartbeats = !args->Has("stream-heartbeats");

  // Signals are taken by sigwait below, so block them before any thread starts.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  std::atomic<bool> stop{false};
  std::vector<std::thread> helpers;
  if (fake && args->Has("fake-control")) {
    helpers.emplace_back(FollowControlFile, args->Get("fake-control"), fake, &stop);
  }
  if (fake && args->Has("fake-xid-after")) {
    std::vector<std::string> p = absl::StrSplit(args->Get("fake-xid-after"), ':');
    double secs = 0;
    int gpu = 0;
    uint32_t xid = 0;
    if (p.size() != 3 || !absl::SimpleAtod(p[0], &secs) || !absl::SimpleAtoi(p[1], &gpu) ||
        !absl::SimpleAtoi(p[2], &xid) || secs < 0 || gpu < 0) {
      std::cerr << "topogang-agent: --fake-xid-after wants SECONDS:GPU:XID\n";
      return 2;
    }
    helpers.emplace_back([=, &stop] {
      absl::Time at = absl::Now() + absl::Seconds(secs);
      while (!stop && absl::Now() < at) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (!stop) fake->Inject({gpu, agent::GpuEventKind::kXid, xid, "fake XID (--fake-xid-after)"});
    });
  }
  agent::AgentClient client(o, *source);
  client.Start();
  int sig = 0;
  sigwait(&sigs, &sig);
  std::cerr << "topogang-agent: signal " << sig << ", stopping\n";
  stop = true;
  client.Stop();
  for (auto& t : helpers) t.join();
  return 0;
}
