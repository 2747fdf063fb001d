// Over 500 lines: one churn day end to end, with the checker that watches it and the two runs of
// it (with and without the API server timing watches out), which share the fixture.
// A day on a shared cluster, compressed, end to end: the real topogangd behind the kube-scheduler
// emulator, driven by a seeded random mix of what a cluster sees. Gangs of 1 to 16 pods, some
// held to a node pool by a nodeSelector, arrive (some created pod by pod, as a controller does);
// jobs end; pending gangs are cancelled; a member of a running gang fails and its controller
// creates a replacement; nodes are cordoned and uncordoned; up to two nodes join (an autoscaler:
// topogangd rebuilds its model while gangs are being bound); a node carrying bound pods is
// deleted, its pods collected as the pod garbage collector does and replaced by their
// controllers, and it may come back empty; both informers lose their watches (a 410 and a relist,
// or a cut connection) while pods are being deleted; single GPU pods without a gang come and go;
// two nodes carry a taint only some pods tolerate.
//
// A checker samples the API server's pods (one consistent snapshot) every few milliseconds while
// that runs, and fails the test on what no user may ever see:
//   - a node with more GPUs bound than it has (a GPU promised twice);
//   - a pod bound outside its nodeSelector, or on a node whose taint it does not tolerate;
//   - a gang partly bound for longer than its bind window allows (a split gang).
// Then the churn stops, every node is uncordoned and every job that runs ends: every gang left
// must start (nothing livelocks), and topogangd must end with nothing reserved, no bind held and
// every GPU free in its model.
//
// Seeds: TOPOGANG_CHURN_SEEDS (comma-separated, default "1,2"); steps per seed:
// TOPOGANG_CHURN_STEPS (default 160); each seed runs once per pair of watch lags, kube-scheduler's
// and topogangd's behind the API server, TOPOGANG_CHURN_WATCH_LAGS_MS (cluster ms, "S/D" pairs,
// each a constant with an optional "+cost per event", default "0/0,2000/0,0/2000,200+10/200+20",
// churn_model.h): kube-scheduler lagging filters pods deleted seconds ago and offers nodes freed
// seconds ago as full; topogangd lagging is asked about pods it has not seen and refuses room
// that kube-scheduler has seen freed; with a cost per event, a burst trails further as it goes. A
// failure prints the seed and the step log.
#include <cpprest/http_client.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/kubesched/churn_cluster.h"
#include "tests/kubesched/churn_model.h"
#include "tests/kubesched/churn_snapshot.h"
#include "tests/kubesched/daemon_harness.h"
#include "tests/support/prom_text.h"

namespace topogang::kubesched {
namespace {

using testing::GangPod;

// A gang may stay partly bound this long (real time): the barrier's POSTs take milliseconds, a
// bind window is 300 ms here, and kube-scheduler's httpTimeout 500 ms (5 s at 10x).
constexpr absl::Duration kMaxPartial = absl::Seconds(4);
// The drain phase fails when no gang has started for this long (real time): shorter than one of
// kube-scheduler's 5-minute flushes of unschedulable pods at 10x (33 s, with its 30 s check), so
// a gang whose pods nobody wakes fails it. As jobs end, their deletions wake every waiting pod,
// and topogangd wakes the pods of gangs its queue starts by itself (docs/extender.md, "Waking
// waiting pods"): the longest stretch seen in 140 runs of seeds 1-20 was 2.8 s. The summary line
// prints it.
constexpr absl::Duration kNoProgress = absl::Seconds(20);
// A drain stall this long is printed with the steps even when the run passes.
constexpr absl::Duration kStallWorthKeeping = absl::Seconds(5);

using churn::GpusOf;
using churn::Job;
using churn::NodeSpec;
using churn::Seeds;
using churn::Steps;

// (seed, kube-scheduler's and topogangd's watch lags)
class ChurnEndToEnd : public churn::ChurnCluster,
                      public ::testing::WithParamInterface<std::tuple<uint64_t, churn::WatchLags>> {
 protected:
  uint64_t Seed() const { return std::get<0>(GetParam()); }
  const churn::WatchLags& WatchLags() const { return std::get<1>(GetParam()); }
  std::string Lags() const {
    return absl::StrCat(ToString(WatchLags().scheduler), "-", ToString(WatchLags().daemon));
  }
  void SetUp() override {
    MakeCluster();
    const churn::WatchLag s = WatchLags().scheduler, d = WatchLags().daemon;
    // topogangd runs in real time with its durations divided by kTimeScale; so does its lag.
    if (d.ms > 0 || d.per_event_ms > 0) {
      api.SetWatchLag("topogangd/", absl::Milliseconds(d.ms) / testing::kTimeScale,
                      absl::Milliseconds(d.per_event_ms) / testing::kTimeScale);
    }
    StartAll("", [s](EmulatorOptions& o) {
      o.watch_lag = absl::Milliseconds(s.ms);
      o.watch_event_cost = absl::Milliseconds(s.per_event_ms);
    });
  }
  void TearDown() override {
    StopChecker();
    // A long stall that still passed is kept too (it is rare and timing-dependent: one of ~50
    // runs once went 11.5 s): the steps, with what was pending, and topogangd's last lines.
    const bool stalled = longest_stall_ > kStallWorthKeeping;
    if (HasFailure() || stalled || std::getenv("TOPOGANG_CHURN_VERBOSE")) {
      std::cerr << "seed " << Seed() << ", steps:\n" << absl::StrJoin(log_, "\n") << "\n";
      if (stalled && !HasFailure()) {
        std::cerr << "stalled " << longest_stall_ << "; topogangd's last lines:\n"
                  << topogangd.LogTail(200) << "\n";
      }
      if (const char* dir = std::getenv("TOPOGANG_CHURN_LOG_DIR")) {
        std::ofstream(absl::StrCat(dir, "/topogangd-", Seed(), "-", Lags(), ".log"))
            << topogangd.Log();
      }
    }
    testing::EmulatedDaemonTest::TearDown();
  }

  void RunDay();

  // --- The checker -------------------------------------------------------------------------
  void StartChecker() {
    checker_ = std::thread([this] {
      while (!stop_checker_) {
        Check();
        absl::SleepFor(absl::Milliseconds(4));
      }
    });
  }
  void StopChecker() {
    stop_checker_ = true;
    if (checker_.joinable()) checker_.join();
  }
  void Check() {
    churn::Snapshot snap = churn::ReadSnapshot(api.Pods(), nodes_);
    const absl::Time now = absl::Now();
    std::vector<std::string> split;
    {
      std::lock_guard<std::mutex> lock(mu_);
      FindSplitGangsLocked(snap, now, &split);
    }
    for (std::string& v : snap.violations) Violation(std::move(v));
    for (std::string& v : split) Violation(std::move(v));
  }
  void FindSplitGangsLocked(churn::Snapshot& snap, absl::Time now, std::vector<std::string>* out) {
    for (auto& [name, job] : jobs_) {
      if (!job.gang || job.done || job.repairing || job.size == 1) continue;
      const int b = snap.bound_of_gang[name];
      if (b > 0 && b < job.size) {
        auto [it, fresh] = partial_since_.try_emplace(name, now);
        if (!fresh && now - it->second > kMaxPartial && !partial_reported_.count(name)) {
          partial_reported_.insert(name);
          out->push_back(absl::StrCat("gang ", name, ": ", b, " of ", job.size,
                                      " members bound for over ",
                                      absl::FormatDuration(kMaxPartial)));
        }
      } else {
        partial_since_.erase(name);
      }
    }
  }

  // --- The workload --------------------------------------------------------------------------
  bool Bound(const std::string& pod) {
    Json p = api.GetPod("default", pod);
    return !p.is_null() && !p["spec"].value("nodeName", "").empty();
  }
  bool AllBound(const Job& j) {
    if (j.created < j.size || static_cast<int>(j.members.size()) < j.size) return false;
    for (const std::string& m : j.members) {
      if (!Bound(m)) return false;
    }
    return true;
  }
  Json PodOf(const Job& j, const std::string& name) {
    Json spec = Json::object();
    if (!j.pool.empty()) spec["nodeSelector"] = {{"pool", j.pool}};
    if (j.tolerates) {
      spec["tolerations"] = Json::array({{{"key", "dedicated"},
                                          {"operator", "Equal"},
                                          {"value", "other"},
                                          {"effect", "NoSchedule"}}});
    }
    return GangPod(name, j.gang ? j.name : "", j.size, j.gpus, spec);
  }
  void CreateMember(Job& j) {
    const std::string name = absl::StrCat(j.name, "-", j.created++);
    {
      std::lock_guard<std::mutex> lock(mu_);
      j.members.push_back(name);
    }
    api.PutPod(PodOf(j, name));
  }
  void Delete(Job& j) {
    for (const std::string& m : j.members) api.DeletePod("default", m);
    std::lock_guard<std::mutex> lock(mu_);
    j.done = true;
  }
  // Pending, running and growing jobs.
  std::vector<Job*> Live(const std::function<bool(Job&)>& pred) {
    std::vector<Job*> out;
    for (auto& [name, j] : jobs_) {
      if (!j.done && pred(j)) out.push_back(&j);
    }
    return out;
  }
  template <typename T>
  T* Pick(const std::vector<T*>& v) {
    return v.empty() ? nullptr : v[rng_() % v.size()];
  }

  void NewJob(bool gang) {
    Job j;
    j.gang = gang;
    j.name = absl::StrCat(gang ? "g" : "s", next_job_++);
    static constexpr int kSizes[] = {2, 2, 4, 4, 8, 16};
    static constexpr int kGpus[] = {1, 2, 4, 8, 8};
    j.size = gang ? kSizes[rng_() % 6] : 1;
    j.gpus = kGpus[rng_() % 5];
    // Every job fits either pool alone, taints aside: pool b has 40 GPUs on untainted 8-GPU
    // nodes (5) and 24 on 4-GPU nodes (leaf-3), so at most 4 members of 8 GPUs.
    while (j.size * j.gpus > 64) j.gpus /= 2;
    if (rng_() % 10 < 3) j.pool = rng_() % 2 ? "a" : "b";
    if (j.pool == "b" && j.gpus == 8 && j.size > 4) j.gpus = 4;
    j.tolerates = rng_() % 4 == 0;
    const bool pod_by_pod = gang && rng_() % 3 == 0;
    Log(absl::StrCat("create ", j.name, " ", j.size, "x", j.gpus, j.pool.empty() ? "" : " pool ",
                     j.pool, j.tolerates ? " tolerates" : "", pod_by_pod ? " pod by pod" : ""));
    Job* p;
    {
      std::lock_guard<std::mutex> lock(mu_);
      p = &jobs_.emplace(j.name, j).first->second;
    }
    if (pod_by_pod) {
      growing_.push_back(p);
    } else {
      for (int m = 0; m < p->size; ++m) CreateMember(*p);
    }
  }
  void Grow() {
    for (size_t i = 0; i < growing_.size();) {
      Job* j = growing_[i];
      if (!j->done && j->created < j->size) CreateMember(*j);
      if (j->done || j->created >= j->size) {
        growing_.erase(growing_.begin() + i);
      } else {
        ++i;
      }
    }
  }
  // A member fails (or its node did): its controller creates a replacement, which must be bound
  // before the gang is whole again.
  void ReplaceMember(Job& j, const std::string failed,
                     const char* why) {  // a copy: j.members changes
    const std::string repl = absl::StrCat(failed, "-r");
    {
      std::lock_guard<std::mutex> lock(mu_);
      j.repairing = j.gang && j.size > 1;
      std::replace(j.members.begin(), j.members.end(), failed, repl);
    }
    api.DeletePod("default", failed);
    api.PutPod(PodOf(j, repl));
    Log(absl::StrCat(why, " ", failed, ", replaced by ", repl));
  }
  // Both informers (kube-scheduler's and topogangd's) lose their watches: history compacted (an
  // ERROR 410, then a relist) or the connection cut mid-event (a new watch, or a relist). A job
  // ended at once has its pods deleted while they relist, so some learn it only from a list
  // that no longer has them.
  void BreakWatches() {
    const bool compact = rng_() % 2 == 0;
    if (compact) {
      api.Compact();
    } else {
      api.DropWatches();
    }
    Log(compact ? "watches compacted (410)" : "watches dropped");
    ++watch_breaks_;
    if (Job* j = Pick(Live([&](Job& j) { return AllBound(j); }))) {
      Log("end " + j->name);
      Delete(*j);
      ++ended_;
    }
  }
  // The pod garbage collector deletes the pods bound to a node that no longer exists
  // (pkg/controller/podgc/gc_controller.go, gcOrphaned; after a 40 s quarantine there, at the
  // next step here), and their jobs' controllers replace them.
  void CollectOrphans() {
    for (const Json& p : api.Pods()) {
      const std::string node = p["spec"].value("nodeName", "");
      auto it = nodes_.find(node);
      if (node.empty() || it == nodes_.end() || it->second.joined) continue;
      const std::string name = p["metadata"].value("name", "");
      std::vector<Job*> owner = Live([&](Job& j) {
        return std::find(j.members.begin(), j.members.end(), name) != j.members.end();
      });
      if (owner.empty()) {
        api.DeletePod("default", name);
      } else {
        ReplaceMember(*owner.front(), name, "orphaned by its node:");
      }
    }
  }
  void Step() {
    CollectOrphans();
    Grow();
    const int r = static_cast<int>(rng_() % 100);
    auto running = [&](Job& j) { return AllBound(j); };
    if (r < 30) {
      if (Live([](Job&) { return true; }).size() < 14) NewJob(true);
    } else if (r < 40) {
      if (Live([](Job&) { return true; }).size() < 14) NewJob(false);
    } else if (r < 60) {
      if (Job* j = Pick(Live(running))) {
        Log("end " + j->name);
        Delete(*j);
        ++ended_;
      }
    } else if (r < 66) {
      if (Job* j = Pick(Live([&](Job& j) { return !AllBound(j); }))) {
        Log("cancel " + j->name);
        Delete(*j);
      }
    } else if (r < 74) {
      if (Job* j = Pick(Live([&](Job& j) { return j.gang && j.size > 1 && AllBound(j); }))) {
        ReplaceMember(*j, j->members[rng_() % j->members.size()], "fail");
        ++failures_;
      }
    } else if (r < 86) {
      auto it = nodes_.begin();
      std::advance(it, rng_() % nodes_.size());
      if (!it->second.joined) {
        // not there yet
      } else if (cordoned_.count(it->first)) {
        SetCordon(it->first, false);
      } else if (cordoned_.size() < 3) {
        SetCordon(it->first, true);
      }
    } else if (r < 89) {
      for (auto& [name, n] : nodes_) {
        if (n.joined || OnNode(name) > 0) continue;  // a failed node's pods are collected first
        Join(n);
        break;
      }
    } else if (r < 93) {
      BreakWatches();
    } else if (r < 96) {
      FailNode();
    }
    // A repaired gang is whole again once its replacement is bound.
    for (Job* j : Live([](Job& j) { return j.repairing; })) {
      if (AllBound(*j)) {
        std::lock_guard<std::mutex> lock(mu_);
        j->repairing = false;
      }
    }
    absl::SleepFor(absl::Milliseconds(5 + rng_() % 40));
  }

  // Every node schedulable, every running job ended as soon as it runs, until no job is left.
  void Drain() {
    // Deleted nodes come back empty first (uncordoning one would create it with its pods).
    CollectOrphans();
    for (const std::string& n : std::set<std::string>(down_)) Join(nodes_.at(n));
    for (const std::string& n : std::set<std::string>(cordoned_)) SetCordon(n, false);
    absl::Time progress = absl::Now(), last_dump = absl::Now();
    while (!Live([](Job&) { return true; }).empty()) {
      CollectOrphans();  // bindings that landed on a node after its deletion
      Grow();
      for (Job* j : Live([&](Job& j) { return AllBound(j); })) {
        Log("drain: end " + j->name);
        Delete(*j);
        ++ended_;
        longest_stall_ = std::max(longest_stall_, absl::Now() - progress);
        progress = absl::Now();
      }
      if (absl::Now() - progress > absl::Seconds(3) && absl::Now() - last_dump > absl::Seconds(3)) {
        last_dump = absl::Now();
        std::string pending;
        for (Job* j : Live([](Job&) { return true; })) {
          absl::StrAppend(&pending, " ", j->name, " ", j->size, "x", j->gpus, j->pool, ":");
          for (const std::string& m : j->members) {
            absl::StrAppend(&pending, " ",
                            Bound(m) ? "bound" : QueueNameString(emu->WhereIs("default/" + m)));
          }
          if (auto r = emu->Record("default/" + j->members[0])) {
            absl::StrAppend(&pending, " [", j->members[0], ": ", r->last_failure, "]");
          }
        }
        Log("drain: waiting" + pending);
      }
      if (absl::Now() - progress > kNoProgress) {
        longest_stall_ = std::max(longest_stall_, absl::Now() - progress);
        std::string pending;
        for (Job* j : Live([](Job&) { return true; })) {
          absl::StrAppend(&pending, "\n  ", j->name, " ", j->size, "x", j->gpus, " pool '", j->pool,
                          "':");
          for (const std::string& m : j->members) {
            absl::StrAppend(&pending, " ", m, "@",
                            Bound(m) ? "bound" : QueueNameString(emu->WhereIs("default/" + m)));
          }
        }
        ADD_FAILURE() << "no job started for " << absl::FormatDuration(kNoProgress)
                      << "; waiting:" << pending << "\n"
                      << topogangd.LogTail(60);
        return;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
  }

  std::mutex mu_;  // jobs_' fields the checker reads
  std::map<std::string, Job> jobs_;
  std::vector<Job*> growing_;
  int next_job_ = 0, ended_ = 0, failures_ = 0, watch_breaks_ = 0;
  absl::Duration longest_stall_;  // the drain's longest stretch without a gang starting
  std::map<std::string, absl::Time> partial_since_;
  std::set<std::string> partial_reported_;
  std::atomic<bool> stop_checker_{false};
  std::thread checker_;
};

// The day, then the checks that everything drained (both tests below).
void ChurnEndToEnd::RunDay() {
  rng_.seed(Seed());
  StartChecker();
  const absl::Time start = absl::Now();
  for (int i = 0; i < Steps(); ++i) Step();
  const absl::Time churned = absl::Now();
  Drain();
  const absl::Time drained = absl::Now();
  StopChecker();
  for (const std::string& v : Violations()) ADD_FAILURE() << v;

  // Nothing left in topogangd: no reservation, no held bind, every GPU free in its model.
  bool clean = emu->WaitFor(
      [&] {
        auto s = topogangd.Stats();
        return s.ok() && s->value("reserved_gangs", -1) == 0 &&
               s->value("running_gangs", -1) == 0 && s->value("held_binds", -1) == 0;
      },
      absl::Seconds(10));
  auto stats = topogangd.Stats();
  EXPECT_TRUE(clean) << (stats.ok() ? stats->dump() : std::string(stats.status().message()));
  double free = -1, allocated = -1, wakes = 0;
  for (absl::Time deadline = absl::Now() + absl::Seconds(5); absl::Now() < deadline;) {
    auto metrics = Metrics();
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    free = metrics->Get("topogang_gpus", {{"state", "free"}});
    allocated = metrics->Get("topogang_gpus", {{"state", "allocated"}});
    wakes = metrics->Value("topogang_gang_events_total", {{"event", "wake"}}).value_or(0);
    if (free == total_gpus_ && allocated == 0) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(allocated, 0);
  EXPECT_EQ(free, total_gpus_);
  std::cerr << "seed " << Seed() << ": " << next_job_ << " jobs, " << ended_ << " ended, "
            << failures_ << " members failed and replaced, " << nodes_failed_
            << " nodes deleted with pods bound, " << watch_breaks_ << " watch breaks; churn "
            << absl::FormatDuration(churned - start) << ", drain "
            << absl::FormatDuration(drained - churned) << " (longest without a start "
            << absl::FormatDuration(longest_stall_) << "); " << wakes
            << " gangs started by the queue while their pods waited, woken; kube-scheduler "
            << "(watch lags in cluster ms, + per event: " << WatchLags() << ", topogangd's "
            << api.LaggedWatchWrites() << " events delivered late"
            << "): " << emu->counters().filter_errors << " filter errors, "
            << emu->counters().bind_failures << " failed binds, " << emu->counters().fit_errors
            << " refusals, " << emu->counters().condition_writes
            << " PodScheduled conditions written\n";
  if (std::getenv("TOPOGANG_CHURN_VERBOSE")) {
    // Why kube-scheduler's cycles and binds failed (the last decision_log_size decisions), by
    // the first words of the message with every number as '#'.
    std::map<std::string, int> why;
    for (const Decision& d : emu->Decisions()) {
      if (d.kind != Decision::Kind::kError && d.kind != Decision::Kind::kBindFailed) continue;
      std::string m;
      for (char c : d.message) {
        if (!std::isdigit(static_cast<unsigned char>(c))) {
          m += c;
        } else if (m.empty() || m.back() != '#') {
          m += '#';
        }
      }
      why[absl::StrCat(DecisionKindString(d.kind), ": ", m.substr(0, 80))]++;
    }
    for (const auto& [w, n] : why) std::cerr << "  " << n << " x " << w << "\n";
  }
}

TEST_P(ChurnEndToEnd, NoGpuTwiceNoSplitGangAndEveryGangStarts) { RunDay(); }

INSTANTIATE_TEST_SUITE_P(Seeds, ChurnEndToEnd,
                         ::testing::Combine(::testing::ValuesIn(Seeds()),
                                            ::testing::ValuesIn(churn::WatchLagsMs())));

// The same day with every watch also ended by the API server's own timeouts, as a real one ends
// them (FakeApiServer::SetWatchTimeouts): after the client's timeoutSeconds, 300 s for
// topogangd's and 300-600 s for kube-scheduler's informers (client-go's reflector). Here 300 s of
// cluster time is 0.2 s, so they end three to five times a second (on a real cluster: every 5-10
// minutes): each is watched again from its last resourceVersion, between events that keep
// coming.
class ChurnWithWatchTimeouts : public ChurnEndToEnd {
 protected:
  void SetUp() override {
    api.SetWatchTimeouts(/*time_scale=*/1500, absl::Minutes(30), Seed());
    ChurnEndToEnd::SetUp();
  }
};

TEST_P(ChurnWithWatchTimeouts, NoGpuTwiceNoSplitGangAndEveryGangStarts) {
  RunDay();
  // Several ends per watch over a day of 5-10 s.
  EXPECT_GE(api.timed_out_watches(), 20);
  std::cerr << api.timed_out_watches() << " watches ended by their timeouts\n";
}

INSTANTIATE_TEST_SUITE_P(Seeds, ChurnWithWatchTimeouts,
                         ::testing::Combine(::testing::ValuesIn(Seeds()),
                                            ::testing::Values(churn::WatchLags{})));

}  // namespace
}  // namespace topogang::kubesched
