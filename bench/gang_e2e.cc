// gang_e2e: how long a gang takes through kube-scheduler with topogang, against kube-scheduler
// alone (issue #9's benchmark; run by hand, see docs/benchmarks.md).
//
// For each gang size, two runs on a fresh fake API server holding the cluster's Node objects
// (examples/clusters/hyperscale-100k.yaml by default: 12,500 nodes x 8 GPUs with Topograph
// labels):
//   baseline  the kube-scheduler emulator alone: its own filters and scores, binding through
//             the API server's pods/binding (the same pods, gang labels and all, are ignored)
//   topogang  the emulator with the real topogangd (cluster mode, forked) as its extender, as
//             deploy/scheduler-config.yaml configures it: filter/prioritize/bind, weight 5,
//             httpTimeout 5 s, nodeCacheCapable, percentageOfNodesToScore 100; topogangd with
//             bind_window_ms 4000, bind_parallelism 64 and reservation_ttl_seconds 30 (the shipped
//             defaults)
// Both at kube-scheduler's realistic pace: cycle_cost 10 ms of extra time per scheduling cycle
// (~100 pods/s), time_scale 1 (real time). Each member asks for --gpus-per-pod GPUs (1).
//
// Measured: from the last member's creation to the last member bound (as the emulator's pod
// informer sees spec.nodeName appear), and from the first creation. Overhead is topogang's
// time over the baseline's, in %.
//
//   gang_e2e [--topogangd PATH] [--cluster FILE] [--nodes N] [--sizes 16,256,1024,4096]
//            [--rate PODS_PER_S] [--cycle-cost-ms 10] [--bind-window-ms 4000]
//            [--bind-parallelism 64]
//            [--gpus-per-pod 1] [--modes baseline,topogang] [--timeout-s 600]
//   --topogangd defaults to topogangd next to this executable; --rate 0 (the default) creates
//   the pods as fast as the API server takes them; --nodes takes the cluster's first N nodes.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tests/kubesched/emulator.h"
#include "tests/kubesched/topogangd_process.h"
#include "tests/support/fake_apiserver.h"
#include "topology/cluster_file.h"

namespace topogang::kubesched {
namespace {

struct Flags {
  std::string topogangd;
  std::string cluster =
      std::string(TOPOGANG_SOURCE_DIR) + "/examples/clusters/hyperscale-100k.yaml";
  int nodes = 0;  // 0: all
  std::vector<int> sizes = {16, 256, 1024, 4096};
  double rate = 0;  // pods/s; 0: as fast as possible
  int cycle_cost_ms = 10;
  int bind_window_ms = 4000;
  int bind_parallelism = 64;
  int gpus_per_pod = 1;
  bool baseline = true, topogang = true;
  int timeout_s = 600;
};

double PerCycleMs(absl::Duration d, int64_t cycles) {
  return cycles > 0 ? absl::ToDoubleMilliseconds(d) / static_cast<double>(cycles) : 0;
}

struct Result {
  std::string error;  // "" when every member was bound
  absl::Duration setup, create, last_to_bound, first_to_bound;
  absl::Duration bind_span;  // first member bound -> last member bound
  EmulatorCounters c;
  std::string server_times;  // topogangd's own time per verb, from its /metrics
};

// "filter 1234 x 0.52 ms, bind ..." from topogang_extender_request_duration_seconds.
std::string ServerTimes(const std::string& url) {
  std::string text;
  try {
    web::http::client::http_client client(url);
    text = client.request(web::http::methods::GET, "/metrics").get().extract_utf8string(true).get();
  } catch (...) {
    return "";
  }
  std::map<std::string, std::pair<double, double>> verbs;  // verb -> (sum, count)
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    for (const char* suffix : {"_sum{", "_count{"}) {
      const std::string prefix = absl::StrCat("topogang_extender_request_duration_seconds", suffix);
      if (!absl::StartsWith(line, prefix)) continue;
      size_t v = line.find("verb=\"");
      size_t sp = line.rfind(' ');
      if (v == absl::string_view::npos || sp == absl::string_view::npos) continue;
      std::string verb(line.substr(v + 6, line.find('"', v + 6) - v - 6));
      double x = 0;
      if (!absl::SimpleAtod(line.substr(sp + 1), &x)) continue;
      (std::string(suffix) == "_sum{" ? verbs[verb].first : verbs[verb].second) += x;
    }
  }
  std::string out;
  for (const auto& [verb, sc] : verbs) {
    if (sc.second <= 0) continue;
    absl::StrAppend(&out, out.empty() ? "" : ", ", verb, " ", static_cast<int64_t>(sc.second),
                    " x ", absl::StrFormat("%.2f", 1000 * sc.first / sc.second), " ms");
  }
  return out;
}

Json NodeJson(const topogang::NodeSpec& n) {
  Json j = topogang::testing::MakeNode(n.name, n.gpus, n.labels);
  j["status"]["capacity"]["pods"] = "110";
  j["status"]["allocatable"]["pods"] = "110";
  j["status"]["allocatable"]["memory"] = "2063452392Ki";
  return j;
}

Result RunOnce(const Flags& f, const std::vector<topogang::NodeSpec>& nodes, int members,
               bool with_topogang) {
  Result res;
  const absl::Time setup_start = absl::Now();
  topogang::testing::FakeApiServer api;
  for (const topogang::NodeSpec& n : nodes) api.PutNode(NodeJson(n));
  testing::TopogangdProcess tg;
  if (with_topogang) {
    testing::TopogangdOptions t;
    t.binary = f.topogangd;
    t.api_url = api.url();
    t.bind_window_ms = f.bind_window_ms;
    t.bind_parallelism = f.bind_parallelism;
    t.reservation_ttl_seconds = 30;
    t.topology = "{preset: topograph, cluster_oversubscription: 3}";
    t.ready_timeout = absl::Seconds(300);
    if (absl::Status st = tg.Start(t); !st.ok()) {
      res.error = std::string(st.message());
      return res;
    }
  }
  EmulatorOptions o;
  o.api_server_url = api.url();
  o.scheduler_name = "topogang-scheduler";
  if (with_topogang) {
    o.extenders = {
        ExtenderConfig{.url_prefix = tg.url(), .weight = 5, .http_timeout = absl::Seconds(5)}};
  }
  o.percentage_of_nodes_to_score = 100;
  o.time_scale = 1;
  o.cycle_cost = absl::Milliseconds(f.cycle_cost_ms);
  o.sync_timeout = absl::Seconds(300);
  Emulator emu(o);
  if (absl::Status st = emu.Start(); !st.ok()) {
    res.error = std::string(st.message());
    return res;
  }
  res.setup = absl::Now() - setup_start;

  const std::string gang = absl::StrCat("g", members);
  const absl::Time first = emu.clock().Now();
  const absl::Time t0 = absl::Now();
  for (int i = 0; i < members; ++i) {
    if (f.rate > 0) absl::SleepFor(t0 + absl::Seconds(i / f.rate) - absl::Now());
    api.PutPod(testing::GangPod(absl::StrCat(gang, "-", i), gang, members, f.gpus_per_pod));
  }
  const absl::Time last = emu.clock().Now();
  res.create = last - first;

  // Every member bound at the API server, then seen bound by the emulator's informer.
  const absl::Time deadline = absl::Now() + absl::Seconds(f.timeout_s);
  auto all_seen = [&] {
    for (const PodRecord& r : emu.Records()) {
      if (r.node_name.empty()) return false;
    }
    return true;
  };
  bool done = false;
  while (absl::Now() < deadline) {
    if (static_cast<int>(api.bindings().size()) >= members && all_seen()) {
      done = true;
      break;
    }
    absl::SleepFor(absl::Milliseconds(25));
  }
  res.c = emu.counters();
  absl::Time first_bound = absl::InfiniteFuture(), last_bound = absl::InfinitePast();
  int bound = 0;
  for (const PodRecord& r : emu.Records()) {
    if (r.node_name.empty()) continue;
    ++bound;
    first_bound = std::min(first_bound, r.bound_at);
    last_bound = std::max(last_bound, r.bound_at);
  }
  res.bind_span = last_bound - first_bound;
  if (!done) {
    res.error = absl::StrCat(bound, " of ", members, " bound after ", f.timeout_s, " s");
    if (with_topogang) res.error += "; topogangd log tail:\n" + tg.LogTail(10);
  }
  res.last_to_bound = last_bound - last;
  res.first_to_bound = last_bound - first;
  if (with_topogang) res.server_times = ServerTimes(tg.url());
  emu.Stop();
  tg.Stop();
  return res;
}

std::string Secs(absl::Duration d) { return absl::StrFormat("%.2f", absl::ToDoubleSeconds(d)); }

int Usage(const std::string& why) {
  std::cerr << "gang_e2e: " << why
            << "\nusage: gang_e2e [--topogangd PATH] [--cluster FILE] [--nodes N] "
               "[--sizes 16,256,1024,4096] [--rate PODS_PER_S] [--cycle-cost-ms 10] "
               "[--bind-window-ms 4000] [--bind-parallelism 64] [--gpus-per-pod 1] [--modes "
               "baseline,topogang] "
               "[--timeout-s 600]\n";
  return 2;
}

int Main(int argc, char** argv) {
  Flags f;
  f.topogangd = (std::filesystem::absolute(argv[0]).parent_path() / "topogangd").string();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return Usage("missing value for " + a);
    const std::string v = argv[++i];
    auto integer = [&](int* out) { return absl::SimpleAtoi(v, out) && *out >= 0; };
    bool ok = true;
    if (a == "--topogangd") {
      f.topogangd = v;
    } else if (a == "--cluster") {
      f.cluster = v;
    } else if (a == "--nodes") {
      ok = integer(&f.nodes);
    } else if (a == "--sizes") {
      f.sizes.clear();
      for (absl::string_view s : absl::StrSplit(v, ',')) {
        int n = 0;
        ok = ok && absl::SimpleAtoi(s, &n) && n > 0;
        f.sizes.push_back(n);
      }
    } else if (a == "--rate") {
      ok = absl::SimpleAtod(v, &f.rate) && f.rate >= 0;
    } else if (a == "--cycle-cost-ms") {
      ok = integer(&f.cycle_cost_ms);
    } else if (a == "--bind-parallelism") {
      ok = integer(&f.bind_parallelism) && f.bind_parallelism >= 1 && f.bind_parallelism <= 256;
    } else if (a == "--bind-window-ms") {
      ok = integer(&f.bind_window_ms) && f.bind_window_ms >= 10;
    } else if (a == "--gpus-per-pod") {
      ok = integer(&f.gpus_per_pod) && f.gpus_per_pod > 0;
    } else if (a == "--modes") {
      f.baseline = v.find("baseline") != std::string::npos;
      f.topogang = v.find("topogang") != std::string::npos;
      ok = f.baseline || f.topogang;
    } else if (a == "--timeout-s") {
      ok = integer(&f.timeout_s) && f.timeout_s > 0;
    } else {
      return Usage("unknown flag " + a);
    }
    if (!ok) return Usage("bad value for " + a + ": " + v);
  }
  std::ifstream in(f.cluster);
  std::stringstream text;
  text << in.rdbuf();
  auto spec = ParseClusterFile(text.str(), f.cluster);
  if (!spec.ok()) return Usage(std::string(spec.status().message()));
  std::vector<topogang::NodeSpec> nodes = spec->nodes;
  if (f.nodes > 0 && f.nodes < static_cast<int>(nodes.size())) nodes.resize(f.nodes);
  int gpus = 0;
  for (const topogang::NodeSpec& n : nodes) gpus += n.gpus;
  std::cout << "cluster " << spec->name << ": " << nodes.size() << " nodes, " << gpus
            << " GPUs; cycle_cost " << f.cycle_cost_ms << " ms, time_scale 1, httpTimeout 5 s, "
            << "percentageOfNodesToScore 100, weight 5, nodeCacheCapable; bind_window_ms "
            << f.bind_window_ms << ", bind_parallelism " << f.bind_parallelism << "; "
            << f.gpus_per_pod << " GPU(s) per member; creation "
            << (f.rate > 0 ? absl::StrCat(f.rate, " pods/s") : std::string("as fast as possible"))
            << "\n"
            << std::flush;

  struct Row {
    int members;
    Result base, tg;
  };
  std::vector<Row> rows;
  for (int members : f.sizes) {
    Row row{members, {}, {}};
    for (bool with_topogang : {false, true}) {
      if (with_topogang ? !f.topogang : !f.baseline) continue;
      Result r = RunOnce(f, nodes, members, with_topogang);
      const double created_rate =
          r.create > absl::ZeroDuration() ? members / absl::ToDoubleSeconds(r.create) : 0;
      std::cout
          << absl::StrFormat(
                 "%-8s %5d members: setup %ss, created in %ss (%.0f pods/s), last created "
                 "-> last bound %ss, first created -> last bound %ss, first bound -> last bound "
                 "%ss; %d cycles, %d "
                 "filter calls, %d extender binds (%d answered with an error), %d API "
                 "binds by the scheduler; per cycle: own filters %.2f ms, extender filter "
                 "%.2f ms, scoring %.2f ms%s%s",
                 with_topogang ? "topogang" : "baseline", members, Secs(r.setup), Secs(r.create),
                 created_rate, Secs(r.last_to_bound), Secs(r.first_to_bound), Secs(r.bind_span),
                 r.c.cycles, r.c.filter_calls, r.c.bind_calls, r.c.bind_failures,
                 r.c.api_bind_calls, PerCycleMs(r.c.own_filter_time, r.c.cycles),
                 PerCycleMs(r.c.extender_filter_time, r.c.cycles),
                 PerCycleMs(r.c.score_time, r.c.cycles),
                 r.server_times.empty() ? ""
                                        : "; topogangd mean time per request: " + r.server_times,
                 r.error.empty() ? "" : "\n  FAILED: " + r.error)
          << "\n"
          << std::flush;
      (with_topogang ? row.tg : row.base) = r;
    }
    rows.push_back(row);
  }
  if (f.baseline && f.topogang) {
    std::cout << "\n| members | created in (s) | kube-scheduler alone: last created -> last bound "
                 "(s) | with topogang (s) | overhead |\n|---:|---:|---:|---:|---:|\n";
    for (const Row& r : rows) {
      const double b = absl::ToDoubleSeconds(r.base.last_to_bound);
      const double t = absl::ToDoubleSeconds(r.tg.last_to_bound);
      std::cout << absl::StrFormat("| %d | %s / %s | %s | %s | %s |\n", r.members,
                                   Secs(r.base.create), Secs(r.tg.create),
                                   Secs(r.base.last_to_bound), Secs(r.tg.last_to_bound),
                                   (!r.base.error.empty() || !r.tg.error.empty() || b <= 0)
                                       ? std::string("n/a")
                                       : absl::StrFormat("%+.1f%%", 100 * (t - b) / b));
    }
  }
  return 0;
}

}  // namespace
}  // namespace topogang::kubesched

int main(int argc, char** argv) { return topogang::kubesched::Main(argc, argv); }
