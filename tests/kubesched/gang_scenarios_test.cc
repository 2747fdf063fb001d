// Over 500 lines: the six gang scenarios share one topogangd + emulator harness and
// one invariant checker (no member bound before every member reached bind).
// Issue #9's gang scenarios through the kube-scheduler emulator and the real topogangd (cluster
// mode, against the fake API server): a 1,024-pod gang created at 20 pods/s, two 40-pod gangs
// interleaved on a cluster that fits one, a gang with a nodeSelector, tolerated GPU taints, and a
// pending gang deleted. Each binds whole or not at all: a watcher samples the API server's
// bindings while the scenario runs and fails the test if a member of a gang is bound while
// another member has not reached bind yet.
//
// Time runs kScale times faster for kube-scheduler (the emulator's time_scale) and for topogangd
// alike (bind_window_ms and reservation_ttl_seconds divided by kScale), and pod creation rates
// are multiplied by kScale, so a minute of cluster time takes six seconds here.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/kubesched/emulator.h"
#include "tests/kubesched/topogangd_process.h"
#include "tests/support/fake_apiserver.h"

namespace topogang::kubesched {
namespace {

using testing::GangPod;
using testing::TopogangdOptions;
using testing::TopogangdProcess;
using topogang::testing::FakeApiServer;

// kube-scheduler time and topogangd's time both run 10x faster than the wall clock.
constexpr double kScale = 10;
// topogangd's bind window: 3 s of cluster time (deploy/ ships 4 s under a 5 s httpTimeout). Its
// worker answers held binds on a 100 ms tick that is not scaled, so 300 ms + 100 ms stays below
// the emulator's httpTimeout of 5 s / kScale = 500 ms.
constexpr int kBindWindowMs = 300;
// scheduler.reservation_ttl_seconds: the default 30 s, scaled.
constexpr double kReservationTtlSeconds = 30 / kScale;
// The 1,024-pod gang of issue #9's first failure, 1 GPU each.
constexpr int kWideMembers = 1024;
constexpr char kSpine[] = "network.topology.nvidia.com/spine";
constexpr char kLeaf[] = "network.topology.nvidia.com/leaf";

// A GPU node as a kubelet reports it: cpu, memory and pods allocatable too.
Json GpuNode(const std::string& name, int gpus, const std::string& spine, const std::string& leaf,
             const Json& taints = Json()) {
  Json n = topogang::testing::MakeNode(name, gpus, {{kSpine, spine}, {kLeaf, leaf}});
  n["status"]["capacity"]["pods"] = "110";
  n["status"]["allocatable"]["pods"] = "110";
  n["status"]["allocatable"]["memory"] = "2063452392Ki";
  if (!taints.is_null()) n["spec"]["taints"] = taints;
  return n;
}

std::string GangOf(const std::string& pod_name) {
  size_t dash = pod_name.rfind('-');
  return dash == std::string::npos ? pod_name : pod_name.substr(0, dash);
}

std::string Member(const std::string& gang, int i) { return absl::StrCat(gang, "-", i); }

// Samples, every few milliseconds until stopped, how many members of each watched gang the API
// server has bound (pods/binding POSTs, which is how topogangd and the emulator bind). A gang
// binds whole when no member is bound before every member has reached bind at least once: when
// a sample finds a member bound, the emulator's records are read *after* the bindings, and every
// member must show a bind attempt (bind attempts only grow, so a member without one at that
// later moment had none when the binding happened). The API has no multi-pod binding, so the
// barrier's own POSTs still show as a short run of samples between 0 and the gang's size; those
// are counted, with how long the run lasted.
class BarrierWatch {
 public:
  struct GangLog {
    int size = 0;
    int bound = 0;
    int64_t samples_between = 0;                      // samples with 0 < bound < size
    absl::Time first_bound = absl::InfiniteFuture();  // real time of the first sample with > 0
    absl::Time all_bound = absl::InfiniteFuture();    // ... with every member bound
    bool arrivals_checked = false;
    std::vector<std::string> violations;
  };

  BarrierWatch(FakeApiServer& api, Emulator& emu, const std::map<std::string, int>& gangs)
      : api_(api), emu_(emu) {
    for (const auto& [g, size] : gangs) logs_[g].size = size;
    thread_ = std::thread([this] { Loop(); });
  }
  ~BarrierWatch() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  GangLog Log(const std::string& gang) {
    std::lock_guard<std::mutex> lock(mu_);
    return logs_[gang];
  }
  int Bound(const std::string& gang) { return Log(gang).bound; }
  int64_t samples() {
    std::lock_guard<std::mutex> lock(mu_);
    return samples_;
  }

 private:
  void Loop() {
    while (!stop_) {
      std::map<std::string, int> bound;
      for (const Json& b : api_.bindings()) {
        bound[GangOf(b["metadata"].value("name", ""))]++;
      }
      bool need_arrivals = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto& [g, log] : logs_) need_arrivals |= bound[g] > 0 && !log.arrivals_checked;
      }
      std::map<std::string, int> arrived;
      if (need_arrivals) {
        for (const PodRecord& r : emu_.Records()) {
          if (r.bind_attempts > 0) arrived[GangOf(r.key.substr(r.key.find('/') + 1))]++;
        }
      }
      const absl::Time now = absl::Now();
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++samples_;
        for (auto& [g, log] : logs_) {
          const int n = bound[g];
          log.bound = std::max(log.bound, n);
          if (n > 0 && log.first_bound == absl::InfiniteFuture()) log.first_bound = now;
          if (n >= log.size && log.all_bound == absl::InfiniteFuture()) log.all_bound = now;
          if (n > 0 && n < log.size) ++log.samples_between;
          if (n > 0 && !log.arrivals_checked) {
            if (arrived[g] < log.size) {
              log.violations.push_back(absl::StrCat(n, " of ", log.size, " members of gang ", g,
                                                    " bound while only ", arrived[g],
                                                    " had reached bind"));
            } else {
              log.arrivals_checked = true;  // every member arrived; arrivals only grow
            }
          }
        }
      }
      absl::SleepFor(absl::Milliseconds(3));
    }
  }

  FakeApiServer& api_;
  Emulator& emu_;
  std::mutex mu_;
  std::map<std::string, GangLog> logs_;
  int64_t samples_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Polls `pred` every 5 ms of real time until it holds or `timeout` passes.
bool Eventually(const std::function<bool()>& pred, absl::Duration timeout) {
  for (absl::Time deadline = absl::Now() + timeout; absl::Now() < deadline;) {
    if (pred()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return pred();
}

// How far each watch trails the API server, in cluster time (LaggedDelivery): a constant lag,
// and a cost per event that makes a burst trail further.
struct WatchLags {
  absl::Duration scheduler_lag = absl::ZeroDuration();
  absl::Duration scheduler_per_event = absl::ZeroDuration();
  absl::Duration daemon_per_event = absl::ZeroDuration();
  // Not a lag, but the same kind of real-cluster pace: kube-scheduler's client rate limit
  // (EmulatorOptions::client_qps; 0: none).
  double scheduler_client_qps = 0;
  int scheduler_client_burst = 100;
};

class GangScenarioTest : public ::testing::Test {
 protected:
  // Starts topogangd against the API server (with the nodes already there), then the emulator
  // configured as deploy/scheduler-config.yaml configures kube-scheduler.
  void StartAll(double reservation_ttl_seconds = kReservationTtlSeconds,
                const WatchLags& lags = {}) {
    if (lags.daemon_per_event > absl::ZeroDuration()) {
      api_.SetWatchLag("topogangd/", absl::ZeroDuration(), lags.daemon_per_event / kScale);
    }
    TopogangdOptions t;
    t.binary = std::string(TOPOGANG_BIN_DIR) + "/topogangd";
    t.api_url = api_.url();
    t.bind_window_ms = kBindWindowMs;
    t.reservation_ttl_seconds = reservation_ttl_seconds;
    absl::Status st = tg_.Start(t);
    ASSERT_TRUE(st.ok()) << st;
    EmulatorOptions o;
    o.api_server_url = api_.url();
    o.scheduler_name = "topogang-scheduler";
    o.extenders = {ExtenderConfig{.url_prefix = tg_.url(), .weight = 5}};  // httpTimeout 5 s
    o.percentage_of_nodes_to_score = 100;
    o.time_scale = kScale;
    o.decision_log_size = 1 << 20;
    o.watch_lag = lags.scheduler_lag;
    o.watch_event_cost = lags.scheduler_per_event;
    o.client_qps = lags.scheduler_client_qps;
    o.client_burst = lags.scheduler_client_burst;
    emu_ = std::make_unique<Emulator>(o);
    st = emu_->Start();
    ASSERT_TRUE(st.ok()) << st;
  }

  void TearDown() override {
    if (HasFailure()) {
      if (emu_) {
        EmulatorCounters c = emu_->counters();
        std::cerr << "emulator: cycles " << c.cycles << ", fit errors " << c.fit_errors
                  << ", errors " << c.scheduling_errors << ", filter calls " << c.filter_calls
                  << ", bind calls " << c.bind_calls << ", binds ok " << c.binds_ok
                  << ", bind failures " << c.bind_failures << "\nlast decisions:\n";
        std::vector<Decision> d = emu_->Decisions();
        for (size_t i = d.size() > 15 ? d.size() - 15 : 0; i < d.size(); ++i) {
          std::cerr << "  " << DecisionKindString(d[i].kind) << " " << d[i].pod << " attempt "
                    << d[i].attempt << " node " << d[i].node << ": " << d[i].message << "\n";
        }
      }
      std::cerr << "topogangd log (tail):\n" << tg_.LogTail(40) << "\n";
    }
    if (emu_) emu_->Stop();
    tg_.Stop();
  }

  // 160 nodes x 8 GPUs (2 spines x 4 leaves x 20 nodes): 1,280 GPUs, for the gang "wide".
  std::set<std::string> WideCluster() {
    std::set<std::string> cluster;
    for (int i = 0; i < 160; ++i) {
      const std::string name = absl::StrFormat("gpu-%03d", i);
      cluster.insert(name);
      api_.PutNode(GpuNode(name, 8, absl::StrCat("spine-", i / 80), absl::StrCat("leaf-", i / 20)));
    }
    return cluster;
  }

  // "wide", kWideMembers pods created from t0 until now, binds whole within `limit` (real time):
  // each pod once, on a node of `cluster`, no node over its 8 GPUs, no member bound before the
  // last one reached bind, and topogangd ends with one running gang and nothing reserved.
  void ExpectWideGangBoundWhole(BarrierWatch& watch, const std::set<std::string>& cluster,
                                absl::Time t0, absl::Duration limit) {
    constexpr int kMembers = kWideMembers;
    const absl::Time created = absl::Now();
    const bool done = Eventually([&] { return watch.Bound("wide") == kMembers; }, limit);
    const absl::Time finished = absl::Now();
    watch.Stop();
    BarrierWatch::GangLog log = watch.Log("wide");
    EmulatorCounters c = emu_->counters();
    std::map<std::string, int> errors;  // scheduling errors (extender filter), by message
    for (const Decision& d : emu_->Decisions()) {
      if (d.kind == Decision::Kind::kError) ++errors[d.message.substr(0, 160)];
    }
    for (const auto& [msg, n] : errors) std::cerr << n << " scheduling errors: " << msg << "\n";
    std::cerr << "created in " << (created - t0) << "; last creation to all bound "
              << (finished - created) << " (real); " << c.cycles << " cycles, " << c.bind_calls
              << " bind calls, " << c.bind_failures << " answered with an error, "
              << c.condition_writes << " PodScheduled conditions written; " << watch.samples()
              << " samples, " << log.samples_between << " during the barrier's bindings ("
              << (log.all_bound - log.first_bound) << ")\n";
    ASSERT_TRUE(done) << log.bound << " of " << kMembers << " bound " << (finished - created)
                      << " after the last pod was created";
    for (const std::string& v : log.violations) ADD_FAILURE() << v;
    EXPECT_GE(log.first_bound, created) << "a member was bound before the last one was created";
    ExpectAllArrivedBeforeFirstBinding("wide", kMembers);
    // Every pod bound, each once, on a node of the cluster, no node over its 8 GPUs.
    std::map<std::string, std::string> placed = Placement("wide", kMembers);
    std::map<std::string, int> per_node;
    for (const auto& [pod, node] : placed) {
      EXPECT_TRUE(cluster.count(node)) << pod << " on '" << node << "'";
      ++per_node[node];
    }
    for (const auto& [node, n] : per_node) EXPECT_LE(n, 8) << node;
    EXPECT_EQ(static_cast<int>(api_.bindings().size()), kMembers);
    auto stats = tg_.Stats();
    ASSERT_TRUE(stats.ok()) << stats.status();
    EXPECT_EQ((*stats)["reserved_gangs"], 0) << stats->dump();
    EXPECT_EQ((*stats)["running_gangs"], 1) << stats->dump();
  }

  // The node each pod is bound to, per the API server ("" while pending).
  std::map<std::string, std::string> Placement(const std::string& gang, int size) {
    std::map<std::string, std::string> out;
    for (int i = 0; i < size; ++i) {
      Json p = api_.GetPod("default", Member(gang, i));
      out[Member(gang, i)] = p.is_null() ? "" : p["spec"].value("nodeName", std::string());
    }
    return out;
  }

  // Every member of the gang was first assumed (and sent to bind) before any member of it was
  // bound, in the emulator's (virtual) clock: topogangd can bind only after it got the last
  // member's bind request, and the emulator sees a binding only after the API server applied it.
  void ExpectAllArrivedBeforeFirstBinding(const std::string& gang, int size) {
    std::map<std::string, absl::Time> first_assumed;
    for (const Decision& d : emu_->Decisions()) {
      if (d.kind != Decision::Kind::kAssumed || GangOf(d.pod.substr(8)) != gang) continue;
      first_assumed.emplace(d.pod, d.time);  // keeps the first
    }
    ASSERT_EQ(static_cast<int>(first_assumed.size()), size) << "gang " << gang;
    // The test's own watch may see the last binding before the emulator's informer does.
    Eventually(
        [&] {
          for (int i = 0; i < size; ++i) {
            auto r = emu_->Record("default/" + Member(gang, i));
            if (!r.has_value() || r->node_name.empty()) return false;
          }
          return true;
        },
        absl::Seconds(5));
    absl::Time last_arrival = absl::InfinitePast(), first_bound = absl::InfiniteFuture();
    for (const auto& [pod, t] : first_assumed) last_arrival = std::max(last_arrival, t);
    for (int i = 0; i < size; ++i) {
      auto r = emu_->Record("default/" + Member(gang, i));
      ASSERT_TRUE(r.has_value());
      ASSERT_FALSE(r->node_name.empty()) << r->key << " is not bound";
      first_bound = std::min(first_bound, r->bound_at);
    }
    EXPECT_LT(last_arrival, first_bound)
        << "gang " << gang << ": a member was bound " << (last_arrival - first_bound)
        << " (cluster time) before the last member was first sent to bind";
  }

  // Creates "wide" at 20 pods/s of cluster time (one pod every 50 ms / kScale of real time), as
  // a controller does; returns when it started.
  absl::Time CreateWideGangAt20PodsPerSecond() {
    const absl::Time t0 = absl::Now();
    for (int i = 0; i < kWideMembers; ++i) {
      absl::SleepFor(t0 + i * absl::Milliseconds(50) / kScale - absl::Now());
      api_.PutPod(GangPod(Member("wide", i), "wide", kWideMembers, 1));
    }
    return t0;
  }

  // The 1,024-pod gang created at once behind bursty watches, then five 16-GPU pods that fit no
  // 8-GPU node 3 s (cluster time) later, with kube-scheduler's client at `qps` / `burst`: the
  // longest pause between two of the scheduling loop's decisions (cluster time), and how many of
  // kube-scheduler's API calls waited for a token of its client's rate limit.
  struct LoopPause {
    absl::Duration longest;
    int64_t throttled_calls = 0;
  };
  LoopPause LongestLoopPause(double qps, int burst) {
    std::set<std::string> cluster = WideCluster();
    StartAll(kReservationTtlSeconds, {.scheduler_per_event = absl::Milliseconds(10),
                                      .daemon_per_event = absl::Milliseconds(20),
                                      .scheduler_client_qps = qps,
                                      .scheduler_client_burst = burst});
    if (HasFatalFailure()) return {};
    BarrierWatch watch(api_, *emu_, {{"wide", kWideMembers}});
    const absl::Time t0 = absl::Now();
    for (int i = 0; i < kWideMembers; ++i) {
      api_.PutPod(GangPod(Member("wide", i), "wide", kWideMembers, 1));
    }
    absl::SleepFor(absl::Seconds(3) / kScale);
    for (int i = 0; i < 5; ++i) {
      api_.PutPod(GangPod(absl::StrCat("big-", i), absl::StrCat("big-", i), 1, 16));
    }
    ExpectWideGangBoundWhole(watch, cluster, t0, absl::Seconds(20));
    EXPECT_TRUE(Eventually(
        [&] {
          int first = 0;
          for (const Decision& d : emu_->Decisions()) {
            first += d.pod.find("/big-") != std::string::npos && d.attempt == 1;
          }
          return first == 5;
        },
        absl::Seconds(10)))
        << "the 16-GPU pods were not all tried";
    absl::Duration longest;
    std::vector<Decision> d = emu_->Decisions();
    for (size_t i = 1; i < d.size(); ++i) longest = std::max(longest, d[i].time - d[i - 1].time);
    const EmulatorCounters c = emu_->counters();
    std::cerr << "client qps " << qps << " burst " << burst << ": " << c.throttled_calls
              << " calls waited, " << c.throttled_wait << " in all; " << c.condition_writes
              << " PodScheduled writes; longest pause of the loop " << longest << "\n";
    return {longest, c.throttled_calls};
  }

  FakeApiServer api_;
  TopogangdProcess tg_;
  std::unique_ptr<Emulator> emu_;
};

// Issue #9, failure 1: a 1,024-pod gang (1 GPU each) whose pods a controller creates at 20 pods/s
// (51 s of cluster time) binds whole: members that reach bind early are answered when the bind
// window passes, keep their slots and arrivals, and go through kube-scheduler's backoff; the
// reservation lives while members keep coming; the gang binds once the last member arrives.
TEST_F(GangScenarioTest, ThousandPodGangCreatedAt20PodsPerSecondBindsWhole) {
  std::set<std::string> cluster = WideCluster();
  StartAll();
  if (HasFatalFailure()) return;
  BarrierWatch watch(api_, *emu_, {{"wide", kWideMembers}});
  const absl::Time t0 = CreateWideGangAt20PodsPerSecond();
  ExpectWideGangBoundWhole(watch, cluster, t0, absl::Seconds(8));
}

// The same gang under kube-scheduler's default client rate limit (qps 50, burst 100): each
// PodScheduled write waits for its token, in the scheduling loop after a failed filter and in
// the binding goroutine after a refused bind (the barrier refuses binds until the gang is whole),
// so a flood of refusals slows the loop's own writes. The gang still binds whole.
TEST_F(GangScenarioTest, ThousandPodGangCreatedAt20PodsPerSecondBindsWholeAtDefaultClientQps) {
  std::set<std::string> cluster = WideCluster();
  StartAll(kReservationTtlSeconds, {.scheduler_client_qps = 50});
  if (HasFatalFailure()) return;
  BarrierWatch watch(api_, *emu_, {{"wide", kWideMembers}});
  const absl::Time t0 = CreateWideGangAt20PodsPerSecond();
  ExpectWideGangBoundWhole(watch, cluster, t0, absl::Seconds(20));
  const EmulatorCounters c = emu_->counters();
  std::cerr << c.throttled_calls << " kube-scheduler API calls waited for the client rate limit, "
            << c.throttled_wait << " (cluster time) in all\n";
}

// The same gang created at once, as a JobSet or LeaderWorkerSet controller creates a replica's
// pods, with both watches working through the burst at a finite rate: kube-scheduler's cache
// takes 10 ms and topogangd's 20 ms (cluster time) per event, so the last of the 1,024 creations
// reaches them about 10 s and 20 s late, and the bindings trail as far. kube-scheduler asks about
// pods topogangd has not seen yet, and sees nodes full or free seconds after topogangd does.
TEST_F(GangScenarioTest, ThousandPodGangCreatedAtOnceBindsWholeBehindBurstyWatches) {
  std::set<std::string> cluster = WideCluster();
  StartAll(kReservationTtlSeconds, {.scheduler_per_event = absl::Milliseconds(10),
                                    .daemon_per_event = absl::Milliseconds(20)});
  if (HasFatalFailure()) return;
  BarrierWatch watch(api_, *emu_, {{"wide", kWideMembers}});
  const absl::Time t0 = absl::Now();
  for (int i = 0; i < kWideMembers; ++i) {
    api_.PutPod(GangPod(Member("wide", i), "wide", kWideMembers, 1));
  }
  ExpectWideGangBoundWhole(watch, cluster, t0, absl::Seconds(20));
  EXPECT_GE(api_.LaggedWatchWrites(), static_cast<uint64_t>(kWideMembers))
      << "topogangd's watch was not the one lagged";
}

// The same burst, plus five 16-GPU pods that fit no 8-GPU node, created 3 s (cluster time) after
// the gang. Every bind the barrier refuses is a PodScheduled write on kube-scheduler's client,
// about 1,800 in 20 s; each first failure of a 16-GPU pod is a write the scheduling loop itself
// waits for (LongestLoopPause).
// Below the rate the refusals' writes come at, the 16-GPU pods' writes queue behind the gang's
// and the loop decides nothing for seconds. At kube-scheduler's default 50 QPS / burst 100 that
// was 10-19 s (cluster time) in four runs on an idle machine, but on a loaded one the emulator
// makes fewer writes per cluster second and the debt may not build (0.8 s once under a full
// ctest); 20 QPS shows the stall either way.
TEST_F(GangScenarioTest, ARefusedGangsStatusWritesStallTheLoopBelowTheirRate) {
  const LoopPause pause = LongestLoopPause(20, 40);
  EXPECT_GT(pause.throttled_calls, 0);
  EXPECT_GT(pause.longest, absl::Seconds(5));
}

// ... and at the shipped 300 / 600 (deploy/scheduler-config.yaml) no call waits, so nothing stalls
// the loop. Its longest pause is 0.2-0.4 s (cluster time) on an idle machine, but 0.38-0.95 s in
// 18 full ctest runs (none waiting) and once 1.04 s: at kScale a loaded machine's 100 ms (wall)
// between two decisions is a second of cluster time. So the bound is 3 s, still a quarter of the
// 13-15 s stall at 20 QPS, and the waits themselves are counted.
TEST_F(GangScenarioTest, ARefusedGangsStatusWritesDoNotStallTheLoopAtTheShippedClientQps) {
  const LoopPause pause = LongestLoopPause(300, 600);
  EXPECT_EQ(pause.throttled_calls, 0);
  EXPECT_LT(pause.longest, absl::Seconds(3));
}

// Issue #9: two 40 x 8-GPU gangs created interleaved on 48 nodes, which fit only one of them.
// One binds whole; the other binds nothing until the first one's pods finish, then binds whole.
TEST_F(GangScenarioTest, TwoFortyPodGangsInterleavedBindOneAfterTheOther) {
  for (int i = 0; i < 48; ++i) {
    api_.PutNode(GpuNode(absl::StrFormat("gpu-%02d", i), 8, absl::StrCat("spine-", i / 24),
                         absl::StrCat("leaf-", i / 8)));
  }
  StartAll();
  if (HasFatalFailure()) return;
  constexpr int kMembers = 40;
  BarrierWatch watch(api_, *emu_, {{"left", kMembers}, {"right", kMembers}});
  // Interleaved, 20 pods/s of cluster time.
  const absl::Time t0 = absl::Now();
  for (int i = 0; i < kMembers; ++i) {
    absl::SleepFor(t0 + 2 * i * absl::Milliseconds(50) / kScale - absl::Now());
    api_.PutPod(GangPod(Member("left", i), "left", kMembers, 8));
    absl::SleepFor(t0 + (2 * i + 1) * absl::Milliseconds(50) / kScale - absl::Now());
    api_.PutPod(GangPod(Member("right", i), "right", kMembers, 8));
  }
  ASSERT_TRUE(Eventually(
      [&] { return watch.Bound("left") == kMembers || watch.Bound("right") == kMembers; },
      absl::Seconds(5)))
      << "neither gang bound: left " << watch.Bound("left") << ", right " << watch.Bound("right");
  const std::string first = watch.Bound("left") == kMembers ? "left" : "right";
  const std::string second = first == "left" ? "right" : "left";
  ExpectAllArrivedBeforeFirstBinding(first, kMembers);
  // Let kube-scheduler cycle the second gang's pods against the full cluster for a while
  // (3 s of cluster time): none of them may bind.
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(watch.Bound(second), 0) << second << " was bound while " << first << " runs";
  // The first gang's pods finish (status.phase Succeeded, as the kubelet reports it).
  const absl::Time finish = absl::Now();
  for (int i = 0; i < kMembers; ++i) {
    Json p = api_.GetPod("default", Member(first, i));
    p["status"]["phase"] = "Succeeded";
    api_.PutPod(p);
  }
  const bool done = Eventually([&] { return watch.Bound(second) == kMembers; }, absl::Seconds(5));
  watch.Stop();
  ASSERT_TRUE(done) << watch.Bound(second) << " of " << kMembers << " of " << second
                    << " bound after " << first << " finished";
  for (const std::string& g : {first, second}) {
    BarrierWatch::GangLog log = watch.Log(g);
    for (const std::string& v : log.violations) ADD_FAILURE() << v;
    std::map<std::string, std::string> placed = Placement(g, kMembers);
    std::set<std::string> nodes;
    for (const auto& [pod, node] : placed) nodes.insert(node);
    EXPECT_EQ(nodes.size(), static_cast<size_t>(kMembers)) << g << ": one 8-GPU pod per node";
  }
  ExpectAllArrivedBeforeFirstBinding(second, kMembers);
  EXPECT_GT(watch.Log(second).first_bound, finish)
      << second << " bound before " << first << " finished";
  EXPECT_EQ(static_cast<int>(api_.bindings().size()), 2 * kMembers);
}

// Issue #9, failure 2: an 8 x 8-GPU gang with nodeSelector spine-1 on a cluster whose spine-0
// has a leaf that holds the whole gang (where a planner blind to the selector puts it) while
// spine-1 holds it only across four leaves. It lands inside spine-1.
TEST_F(GangScenarioTest, GangWithNodeSelectorLandsInsideIt) {
  std::set<std::string> spine1;
  for (int i = 0; i < 16; ++i) {  // spine-0: two leaves of 8 nodes
    api_.PutNode(
        GpuNode(absl::StrFormat("s0-node-%02d", i), 8, "spine-0", absl::StrCat("leaf-0-", i / 8)));
  }
  for (int i = 0; i < 8; ++i) {  // spine-1: four leaves of 2 nodes
    const std::string name = absl::StrFormat("s1-node-%02d", i);
    spine1.insert(name);
    api_.PutNode(GpuNode(name, 8, "spine-1", absl::StrCat("leaf-1-", i / 2)));
  }
  StartAll();
  if (HasFatalFailure()) return;
  constexpr int kMembers = 8;
  BarrierWatch watch(api_, *emu_, {{"sel", kMembers}});
  for (int i = 0; i < kMembers; ++i) {
    api_.PutPod(GangPod(Member("sel", i), "sel", kMembers, 8,
                        Json{{"nodeSelector", {{kSpine, "spine-1"}}}}));
  }
  const bool done = Eventually([&] { return watch.Bound("sel") == kMembers; }, absl::Seconds(5));
  watch.Stop();
  ASSERT_TRUE(done) << watch.Bound("sel") << " of " << kMembers << " bound";
  for (const std::string& v : watch.Log("sel").violations) ADD_FAILURE() << v;
  ExpectAllArrivedBeforeFirstBinding("sel", kMembers);
  std::set<std::string> nodes;
  for (const auto& [pod, node] : Placement("sel", kMembers)) {
    EXPECT_TRUE(spine1.count(node)) << pod << " bound to " << node << ", outside spine-1";
    nodes.insert(node);
  }
  EXPECT_EQ(nodes.size(), static_cast<size_t>(kMembers));
}

// 8 GPU nodes tainted nvidia.com/gpu=present:NoSchedule (as GKE taints every GPU node) and 2
// untainted ones, all of one spine.
std::set<std::string> PutTaintedCluster(FakeApiServer& api) {
  const Json taint =
      Json::array({{{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}}});
  std::set<std::string> all;
  for (int i = 0; i < 8; ++i) {
    const std::string name = absl::StrFormat("tainted-%02d", i);
    all.insert(name);
    api.PutNode(GpuNode(name, 8, "spine-0", absl::StrCat("leaf-", i / 4), taint));
  }
  for (int i = 0; i < 2; ++i) {
    const std::string name = absl::StrFormat("plain-%02d", i);
    all.insert(name);
    api.PutNode(GpuNode(name, 8, "spine-0", "leaf-2"));
  }
  return all;
}

// Pods of gang "tol" (8 x 8 GPUs) tolerating the taint: GKE's form (Exists) for half of them,
// the Equal form for the others.
void PutToleratingGang(FakeApiServer& api) {
  const Json exists =
      Json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
  const Json equal = Json::array({{{"key", "nvidia.com/gpu"},
                                   {"operator", "Equal"},
                                   {"value", "present"},
                                   {"effect", "NoSchedule"}}});
  for (int i = 0; i < 8; ++i) {
    api.PutPod(
        GangPod(Member("tol", i), "tol", 8, 8, Json{{"tolerations", i % 2 ? exists : equal}}));
  }
}

// Issue #9, failure 3: a taint the pods tolerate does not make a node unusable. The gang needs 8
// of the 10 nodes, so at least 6 tainted ones.
TEST_F(GangScenarioTest, ToleratedGpuTaintLeavesNodesUsable) {
  const std::set<std::string> all = PutTaintedCluster(api_);
  StartAll();
  if (HasFatalFailure()) return;
  BarrierWatch watch(api_, *emu_, {{"tol", 8}});
  PutToleratingGang(api_);
  const bool done = Eventually([&] { return watch.Bound("tol") == 8; }, absl::Seconds(5));
  watch.Stop();
  ASSERT_TRUE(done) << watch.Bound("tol") << " of 8 tolerating pods bound";
  for (const std::string& v : watch.Log("tol").violations) ADD_FAILURE() << v;
  ExpectAllArrivedBeforeFirstBinding("tol", 8);
  std::set<std::string> nodes;
  for (const auto& [pod, node] : Placement("tol", 8)) {
    EXPECT_TRUE(all.count(node)) << pod << " on '" << node << "'";
    nodes.insert(node);
  }
  EXPECT_EQ(nodes.size(), 8u);
}

// Issue #9, failure 3 and "plan inside what kube-scheduler allows": a gang whose pods do NOT
// tolerate the taint (created first) stays pending with kube-scheduler's own TaintToleration
// FitError, and topogang reserves nothing for it anywhere: not on the tainted nodes, which
// kube-scheduler never gives it (a reservation there would leave the tolerating gang, which
// needs 8 of the 10 nodes, without room), and not on the two untainted ones, which cannot hold it.
// The tolerating gang created next binds.
TEST_F(GangScenarioTest, GangThatDoesNotTolerateTheTaintReservesNothing) {
  const std::set<std::string> all = PutTaintedCluster(api_);
  StartAll();
  if (HasFatalFailure()) return;
  BarrierWatch watch(api_, *emu_, {{"untol", 4}, {"tol", 8}});
  for (int i = 0; i < 4; ++i) api_.PutPod(GangPod(Member("untol", i), "untol", 4, 8));
  ASSERT_TRUE(Eventually(
      [&] {
        for (int i = 0; i < 4; ++i) {
          auto r = emu_->Record("default/" + Member("untol", i));
          if (!r || r->fit_errors == 0) return false;
        }
        return true;
      },
      absl::Seconds(5)))
      << "the untolerating gang's pods were never found unschedulable";
  PutToleratingGang(api_);
  const bool done = Eventually([&] { return watch.Bound("tol") == 8; }, absl::Seconds(5));
  // A few more cycles of the untolerating pods (3 s of cluster time).
  absl::SleepFor(absl::Milliseconds(300));
  watch.Stop();
  const std::string log = tg_.Log();
  // Evidence of a reservation for the untolerating gang: a reserve decision, or the TTL expiry of
  // a reservation the gang queue made for it.
  EXPECT_EQ(log.find("reserve default/untol"), std::string::npos)
      << "topogangd reserved GPUs for a gang kube-scheduler will not place there";
  EXPECT_EQ(log.find("expire default/untol"), std::string::npos)
      << "topogangd held a reservation for a gang kube-scheduler will not place there";
  ASSERT_TRUE(done) << watch.Bound("tol") << " of 8 tolerating pods bound";
  for (const std::string& v : watch.Log("tol").violations) ADD_FAILURE() << v;
  std::set<std::string> nodes;
  for (const auto& [pod, node] : Placement("tol", 8)) {
    EXPECT_TRUE(all.count(node)) << pod << " on '" << node << "'";
    nodes.insert(node);
  }
  EXPECT_EQ(nodes.size(), 8u);
  EXPECT_EQ(watch.Bound("untol"), 0);
  for (int i = 0; i < 4; ++i) {
    auto r = emu_->Record("default/" + Member("untol", i));
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->node_name.empty()) << r->key << " bound to " << r->node_name;
    EXPECT_EQ(r->bind_attempts, 0) << r->key;
    EXPECT_NE(r->last_failure.find("8 node(s) had untolerated taint {nvidia.com/gpu: present}"),
              std::string::npos)
        << r->key << ": " << r->last_failure;
  }
  EXPECT_EQ(tg_.ReservedGangs(), 0);
}

// Issue #9, failure 5: 3 of the 4 pods of a gang are created (reserved, held at the barrier),
// then deleted. The reservation goes at once, long before its TTL (60 s of real time here), and
// a gang that needs those GPUs binds.
TEST_F(GangScenarioTest, DeletingAPendingGangFreesItsReservationAtOnce) {
  // 5 nodes x 8 GPUs: one 4 x 8 gang at a time.
  for (int i = 0; i < 5; ++i) {
    api_.PutNode(GpuNode(absl::StrFormat("gpu-%d", i), 8, "spine-0", "leaf-0"));
  }
  StartAll(/*reservation_ttl_seconds=*/60);
  if (HasFatalFailure()) return;
  BarrierWatch watch(api_, *emu_, {{"gone", 4}, {"next", 4}});
  for (int i = 0; i < 3; ++i) api_.PutPod(GangPod(Member("gone", i), "gone", 4, 8));
  ASSERT_TRUE(Eventually(
      [&] {
        for (int i = 0; i < 3; ++i) {
          auto r = emu_->Record("default/" + Member("gone", i));
          if (!r || r->bind_attempts == 0) return false;
        }
        return tg_.ReservedGangs() == 1;
      },
      absl::Seconds(5)))
      << "the 3 pods never reached bind with one reservation (reserved_gangs "
      << tg_.ReservedGangs() << ")";
  const absl::Time deleted = absl::Now();
  for (int i = 0; i < 3; ++i) api_.DeletePod("default", Member("gone", i));
  const bool freed = Eventually([&] { return tg_.ReservedGangs() == 0; }, absl::Seconds(2));
  const absl::Duration took = absl::Now() - deleted;
  ASSERT_TRUE(freed) << "reserved_gangs still " << tg_.ReservedGangs() << " " << took
                     << " after every pod of the pending gang was deleted";
  EXPECT_LT(took, absl::Milliseconds(500));
  for (int i = 0; i < 4; ++i) api_.PutPod(GangPod(Member("next", i), "next", 4, 8));
  const bool done = Eventually([&] { return watch.Bound("next") == 4; }, absl::Seconds(3));
  watch.Stop();
  ASSERT_TRUE(done) << watch.Bound("next") << " of 4 pods of the next gang bound";
  for (const std::string& v : watch.Log("next").violations) ADD_FAILURE() << v;
  EXPECT_EQ(watch.Bound("gone"), 0);
  EXPECT_EQ(static_cast<int>(api_.bindings().size()), 4);
  std::cerr << "reservation freed " << took << " after the deletes\n";
}

}  // namespace
}  // namespace topogang::kubesched
