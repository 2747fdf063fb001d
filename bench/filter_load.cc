// Load tool for /filter (run by hand; figures go to docs/benchmarks.md). Starts the real
// topogangd HTTP server in-process on a loopback port over a cluster file, then drives it with
// cpprest clients posting bodies shaped like kube-scheduler's, and prints p50/p99 latency and
// requests per second.
//
//   filter_load --cluster examples/clusters/hyperscale-100k.yaml --mode names --names 12500
//   filter_load --cluster ... --mode nodelist --nodes 1000
//   filter_load --cluster ... --mode names --names 12500 --dump-body /tmp/body.json  (for wrk)
//   modes: names     nodeCacheCapable: NodeNames, each request a new 1-GPU pod (reserve+steer)
//          gang      NodeNames, 16-member x 8-GPU gangs member by member
//          nodelist  nodeCacheCapable false: full NodeList of --nodes nodes, new 1-GPU pod each
//          cpu       NodeNames, pods without GPUs (pass-through path)
#include <cpprest/http_client.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/cluster_arg.h"
#include "common/args.h"
#include "common/free_port.h"
#include "common/json_util.h"
#include "config/loader.h"
#include "daemon/metrics.h"
#include "extender/extender_service.h"
#include "extender/http_server.h"
#include "extender/wire_types.h"

namespace topogang {
namespace {

// A pod like the captured ones (metadata with managedFields-sized annotation, limits+requests).
Json BasePod() {
  Json pod = Json::parse(R"({"metadata":{"namespace":"default","creationTimestamp":null,
    "labels":{"app":"trainer"},
    "annotations":{"kubectl.kubernetes.io/last-applied-configuration":""}},
    "spec":{"containers":[{"name":"main","image":"nvcr.io/nvidia/pytorch:24.01-py3",
      "command":["python","train.py"],"resources":{"limits":{"cpu":"8","memory":"64Gi"},
      "requests":{"cpu":"8","memory":"64Gi"}},"terminationMessagePath":"/dev/termination-log",
      "imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Never","schedulerName":"default-scheduler",
      "tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute",
      "tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},
    "status":{"phase":"Pending","qosClass":"Guaranteed"}})");
  pod["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
      std::string(1500, 'x');
  return pod;
}

// A Node object of realistic size (~4 KB: labels, capacity, conditions, images, nodeInfo).
Json MakeNodeObject(const NodeInfo& n, const Cluster& c) {
  Json node = Json::parse(R"({"metadata":{"creationTimestamp":"2026-11-22T12:23:58Z","labels":{}},
    "spec":{"podCIDR":"10.244.0.0/24"},
    "status":{"capacity":{"cpu":"192","memory":"2063554392Ki","pods":"110","ephemeral-storage":"3750000000Ki"},
      "allocatable":{"cpu":"191450m","memory":"2063451992Ki","pods":"110","ephemeral-storage":"3456000000000"},
      "conditions":[],"addresses":[{"type":"InternalIP","address":"10.0.0.1"}],
      "daemonEndpoints":{"kubeletEndpoint":{"Port":10250}},
      "nodeInfo":{"machineID":"0123456789abcdef0123456789abcdef","systemUUID":"4c4c4544-0042-3510-8052-b3c04f333233",
        "bootID":"6f9d33d2-6c9a-4c0e-9f5a-0d1d1b2e8f3a","kernelVersion":"6.8.0-45-generic",
        "osImage":"Ubuntu 24.04.1 LTS","containerRuntimeVersion":"containerd://1.7.22",
        "kubeletVersion":"v1.35.0","kubeProxyVersion":"","operatingSystem":"linux","architecture":"amd64"}}})");
  node["metadata"]["name"] = n.name;
  node["metadata"]["uid"] = "uid-" + n.name;
  node["metadata"]["resourceVersion"] = "123456";
  for (int l = 1; l < c.num_levels() - 1; ++l) {
    node["metadata"]["labels"][c.topology().tiers.size() >= static_cast<size_t>(l)
                                   ? c.topology().tiers[l - 1].label
                                   : "tier"] = "x";
  }
  node["metadata"]["labels"]["kubernetes.io/hostname"] = n.name;
  node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3";
  node["metadata"]["labels"]["nvidia.com/gpu.count"] = std::to_string(n.gpus);
  node["status"]["capacity"]["nvidia.com/gpu"] = std::to_string(n.gpus);
  node["status"]["allocatable"]["nvidia.com/gpu"] = std::to_string(n.gpus);
  for (const char* t : {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}) {
    node["status"]["conditions"].push_back(
        {{"type", t},
         {"status", std::string(t) == "Ready" ? "True" : "False"},
         {"lastHeartbeatTime", "2026-11-22T12:30:00Z"},
         {"lastTransitionTime", "2026-11-22T12:23:58Z"},
         {"reason", "KubeletReady"},
         {"message", "kubelet is posting ready status"}});
  }
  node["status"]["images"] = Json::array();
  for (int i = 0; i < 6; ++i) {
    node["status"]["images"].push_back(
        {{"names",
          {absl::StrCat("nvcr.io/nvidia/image", i, "@sha256:", std::string(64, 'a')),
           absl::StrCat("nvcr.io/nvidia/image", i, ":24.01")}},
         {"sizeBytes", 9876543210}});
  }
  return node;
}

int Main(int argc, char** argv) {
  auto args = ParseArgs(argc, argv, 1,
                        {"cluster", "config", "mode", "names", "nodes", "requests", "concurrency",
                         "warmup", "dump-body"},
                        {"inproc"});
  if (!args.ok()) {
    std::cerr << args.status().message() << "\n";
    return 2;
  }
  const std::string mode = args->Get("mode", "names");
  int names = 12500, nodes = 1000, requests = 4000, concurrency = 4, warmup = 200;
  (void)absl::SimpleAtoi(args->Get("names", "12500"), &names);
  (void)absl::SimpleAtoi(args->Get("nodes", "1000"), &nodes);
  (void)absl::SimpleAtoi(args->Get("requests", "4000"), &requests);
  (void)absl::SimpleAtoi(args->Get("concurrency", "4"), &concurrency);
  (void)absl::SimpleAtoi(args->Get("warmup", "200"), &warmup);

  auto both = LoadClusterArg(*args);
  if (!both) return 2;
  LoadedCluster* loaded = &both->first;
  Cluster* cluster = &both->second;
  // Candidate lists: a spread over the cluster, as kube-scheduler's round-robin would send.
  const Cluster& c = *cluster;
  std::vector<std::string> candidates;
  const int want = mode == "nodelist" ? nodes : names;
  for (int i = 0; i < want && i < c.num_nodes(); ++i) {
    candidates.push_back(
        c.node((static_cast<int64_t>(i) * c.num_nodes() / want) % c.num_nodes()).name);
  }
  ExtenderArgs base;
  base.pod = BasePod();
  base.names = candidates;
  if (mode == "nodelist") {
    base.node_cache = false;
    base.node_list_meta = "{}";
    for (const std::string& n : candidates) {
      base.node_items.push_back(DumpJson(MakeNodeObject(c.node(c.FindNode(n)), c)));
    }
  }
  if (args->Has("dump-body")) {
    // A body for external load generators (bench/wrk/filter.lua): pod name and UID are the
    // placeholder WRKPOD, which the script makes unique per request; in gang mode the gang
    // name is WRKGANG and the script starts a new 16-member gang every 16 requests.
    ExtenderArgs a = base;
    a.pod["metadata"]["name"] = "WRKPOD";
    a.pod["metadata"]["uid"] = "WRKPOD";
    auto& res = a.pod["spec"]["containers"][0]["resources"];
    if (mode == "gang") {
      a.pod["metadata"]["labels"]["topogang.io/gang"] = "WRKGANG";
      a.pod["metadata"]["annotations"]["topogang.io/gang-size"] = "16";
      res["limits"]["nvidia.com/gpu"] = "8";
      res["requests"]["nvidia.com/gpu"] = "8";
    } else if (mode != "cpu") {
      res["limits"]["nvidia.com/gpu"] = "1";
      res["requests"]["nvidia.com/gpu"] = "1";
    }
    std::ofstream out(args->Get("dump-body"), std::ios::binary);
    out << SerializeExtenderArgs(a);
    if (!out) {
      std::cerr << "cannot write " << args->Get("dump-body") << "\n";
      return 2;
    }
    return 0;
  }
  // Bodies are prebuilt so the clients spend their CPU on HTTP, not on JSON.
  const int total = requests + warmup;
  std::vector<std::string> bodies;
  bodies.reserve(total);
  for (int i = 0; i < total; ++i) {
    ExtenderArgs a = base;
    Json& pod = a.pod;
    pod["metadata"]["name"] = absl::StrCat("pod-", i);
    pod["metadata"]["uid"] = absl::StrCat("uid-", i);
    auto& res = pod["spec"]["containers"][0]["resources"];
    if (mode == "gang") {
      int gang = i / 16, member = i % 16;
      pod["metadata"]["name"] = absl::StrCat("g", gang, "-", member);
      pod["metadata"]["uid"] = absl::StrCat("uid-g", gang, "-", member);
      pod["metadata"]["labels"]["topogang.io/gang"] = absl::StrCat("g", gang);
      pod["metadata"]["annotations"]["topogang.io/gang-size"] = "16";
      res["limits"]["nvidia.com/gpu"] = "8";
      res["requests"]["nvidia.com/gpu"] = "8";
    } else if (mode != "cpu") {
      res["limits"]["nvidia.com/gpu"] = "1";
      res["requests"]["nvidia.com/gpu"] = "1";
    }
    bodies.push_back(SerializeExtenderArgs(a));
  }
  SystemClock clock;
  DaemonState state(GangScheduler(std::move(*cluster), loaded->config.scheduler), clock);
  MemoryBinder binder;
  DaemonMetrics metrics(&state);  // as in topogangd: every request is counted and timed
  GangLedger ledger(state, binder, GangLedgerOptions{});
  ExtenderService service(ledger);
  metrics.AttachLedger(&ledger);
  if (args->Has("inproc")) {
    // Same bodies, no HTTP: splits the cost into parse / verb logic / serialize.
    double parse_ms = 0, filter_ms = 0, ser_ms = 0;
    for (int i = 0; i < total; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto a = ParseExtenderArgs(bodies[i]);
      auto t1 = std::chrono::steady_clock::now();
      FilterVerdicts r = service.FilterNodes(*a);
      auto t2 = std::chrono::steady_clock::now();
      std::string out = SerializeFilterVerdicts(*a, r);
      auto t3 = std::chrono::steady_clock::now();
      if (i < warmup) continue;
      parse_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
      filter_ms += std::chrono::duration<double, std::milli>(t2 - t1).count();
      ser_ms += std::chrono::duration<double, std::milli>(t3 - t2).count();
    }
    std::printf("in-process mean per request: parse %.3f ms, filter %.3f ms, serialize %.3f ms\n",
                parse_ms / requests, filter_ms / requests, ser_ms / requests);
    return 0;
  }
  std::unique_ptr<ExtenderHttpServer> server;
  for (int attempt = 0; attempt < 20 && !server; ++attempt) {
    HttpServerOptions ho;
    ho.port = PickFreePort();
    auto s = std::make_unique<ExtenderHttpServer>(service, ho, &metrics);
    if (s->Start().ok()) server = std::move(s);
  }
  if (!server) {
    std::cerr << "cannot start the server\n";
    return 1;
  }
  std::printf("mode=%s candidates=%zu body=%zu bytes requests=%d concurrency=%d cluster=%d nodes\n",
              mode.c_str(), candidates.size(), bodies[0].size(), requests, concurrency,
              state.With([](GangScheduler& s) { return s.cluster().num_nodes(); }));

  std::atomic<int> next{0};
  std::atomic<int> errors{0};
  std::vector<std::vector<double>> lat(concurrency);
  std::atomic<int64_t> reply_bytes{0};
  auto run = [&](int t, int limit, bool record) {
    web::http::client::http_client client(server->BaseUrl());
    for (;;) {
      int i = next.fetch_add(1);
      if (i >= limit) break;
      web::http::http_request req(web::http::methods::POST);
      req.set_request_uri("/filter");
      req.set_body(bodies[i], "application/json");
      auto t0 = std::chrono::steady_clock::now();
      try {
        auto resp = client.request(req).get();
        std::string body = resp.extract_utf8string(true).get();
        auto t1 = std::chrono::steady_clock::now();
        if (resp.status_code() != 200 || body.find("\"Error\":\"\"") == std::string::npos) ++errors;
        reply_bytes += body.size();
        if (record) lat[t].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      } catch (...) {
        ++errors;
      }
    }
  };
  // Warm-up (connections, allocator), then the measured run.
  {
    std::vector<std::thread> ts;
    for (int t = 0; t < concurrency; ++t) ts.emplace_back(run, t, warmup, false);
    for (auto& th : ts) th.join();
  }
  auto start = std::chrono::steady_clock::now();
  {
    std::vector<std::thread> ts;
    for (int t = 0; t < concurrency; ++t) ts.emplace_back(run, t, total, true);
    for (auto& th : ts) th.join();
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) {
    return all.empty() ? 0.0 : all[std::min(all.size() - 1, size_t(p * all.size()))];
  };
  std::printf("requests=%zu errors=%d elapsed=%.2fs throughput=%.0f req/s\n", all.size(),
              errors.load(), secs, all.size() / secs);
  std::printf("latency ms: p50=%.2f p90=%.2f p99=%.2f max=%.2f  avg reply=%lld bytes\n", pct(0.50),
              pct(0.90), pct(0.99), all.empty() ? 0.0 : all.back(),
              static_cast<long long>(all.empty() ? 0 : reply_bytes.load() / (all.size() + warmup)));
  server->Stop();
  return errors.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace topogang

int main(int argc, char** argv) { return topogang::Main(argc, argv); }
