// Leader election against the fake API server: lease parsing, the acquire/renew/takeover
// decisions under a FakeClock, and real election loops (short durations) for handover on
// release, API outages (errors and hung requests), races on the lease and garbage records.
// The invariant checked throughout: never two leaders at once.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kube/leader_election.h"
#include "tests/support/fake_apiserver.h"

namespace topogang {
namespace {

using testing::FakeApiServer;

constexpr char kNs[] = "topogang-system";
constexpr char kName[] = "topogangd";

KubeConfig Config(const FakeApiServer& api, const std::string& token) {
  KubeConfig kc;
  kc.server = api.url();
  kc.token = token;  // the fake server tells clients apart by token (per-client outages)
  return kc;
}

LeaderElectorOptions Options(const std::string& identity, absl::Duration lease,
                             absl::Duration renew, absl::Duration retry) {
  LeaderElectorOptions o;
  o.lease_namespace = kNs;
  o.lease_name = kName;
  o.identity = identity;
  o.lease_duration = lease;
  o.renew_deadline = renew;
  o.retry_period = retry;
  return o;
}

Json Spec(FakeApiServer& api) {
  Json l = api.GetLease(kNs, kName);
  return l.is_object() ? l["spec"] : Json();
}

// Counts leaders across candidates from inside the callbacks: a second on_started_leading while
// another candidate has not yet run on_stopped_leading is a violation.
struct Invariant {
  std::mutex mu;
  int leaders = 0;
  int max_leaders = 0;
  std::vector<std::string> log;  // "+id" / "-id" in callback order
};

struct Candidate {
  Candidate(FakeApiServer& api, Invariant& inv, const std::string& id, absl::Duration lease,
            absl::Duration renew, absl::Duration retry)
      : id(id), inv(inv) {
    LeaderCallbacks cb;
    cb.on_started_leading = [this] {
      std::lock_guard<std::mutex> l(this->inv.mu);
      this->inv.max_leaders = std::max(this->inv.max_leaders, ++this->inv.leaders);
      this->inv.log.push_back("+" + this->id);
      ++started;
    };
    cb.on_stopped_leading = [this](const absl::Status& why) {
      std::lock_guard<std::mutex> l(this->inv.mu);
      --this->inv.leaders;
      this->inv.log.push_back("-" + this->id);
      stop_status = why;
      ++stopped;
    };
    // A request timeout far beyond the deadlines: a hung request must not delay the loss of
    // leadership (the elector's watchdog ends it at the renew deadline).
    elector = std::make_unique<LeaderElector>(
        std::make_shared<KubeClient>(Config(api, "token-" + id), absl::Seconds(30)),
        Options(id, lease, renew, retry), std::move(cb), clock);
  }
  absl::Status StopStatus() {
    std::lock_guard<std::mutex> l(inv.mu);
    return stop_status;
  }

  std::string id;
  Invariant& inv;
  SteadyClock clock;
  std::atomic<int> started{0}, stopped{0};
  absl::Status stop_status;
  std::unique_ptr<LeaderElector> elector;
};

int CountLeaders(const std::vector<std::unique_ptr<Candidate>>& cs) {
  int n = 0;
  for (const auto& c : cs) n += c->elector->IsLeader() ? 1 : 0;
  return n;
}

Candidate* Leader(const std::vector<std::unique_ptr<Candidate>>& cs) {
  for (const auto& c : cs) {
    if (c->elector->IsLeader()) return c.get();
  }
  return nullptr;
}

TEST(LeaseParseTest, ValidRecordsAndFreeLeases) {
  auto r = ParseLease(R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease",
    "metadata":{"name":"topogangd","resourceVersion":"42"},
    "spec":{"holderIdentity":"a_1","leaseDurationSeconds":15,"leaseTransitions":3,
            "acquireTime":"2026-11-23T03:00:00.000000Z","renewTime":"2026-11-23T03:00:10.123456Z"}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->holder, "a_1");
  EXPECT_EQ(r->lease_duration_seconds, 15);
  EXPECT_EQ(r->transitions, 3);
  EXPECT_EQ(r->resource_version, "42");
  EXPECT_EQ(r->renew_time, "2026-11-23T03:00:10.123456Z");
  // A Lease without a spec (or without a holder) is free, as in the API.
  auto free = ParseLease(R"({"metadata":{"resourceVersion":"7"}})");
  ASSERT_TRUE(free.ok()) << free.status();
  EXPECT_EQ(free->holder, "");
  EXPECT_EQ(FormatMicroTime(absl::FromUnixMicros(1763866800123456)), "2025-11-23T03:00:00.123456Z");
}

TEST(LeaseParseTest, GarbageIsAnErrorNeverACrash) {
  for (const char* bad : {
           "",
           "not json",
           "[]",
           "42",
           "{",
           R"({"metadata":"x"})",
           R"({"metadata":{}})",                                    // no resourceVersion
           R"({"metadata":{"resourceVersion":5}})",                 // wrong type
           R"({"kind":"Pod","metadata":{"resourceVersion":"5"}})",  // not a Lease
           R"({"metadata":{"resourceVersion":"5"},"spec":"x"})",
           R"({"metadata":{"resourceVersion":"5"},"spec":{"holderIdentity":42}})",
           R"({"metadata":{"resourceVersion":"5"},"spec":{"leaseDurationSeconds":"15"}})",
           R"({"metadata":{"resourceVersion":"5"},"spec":{"leaseDurationSeconds":-1}})",
           R"({"metadata":{"resourceVersion":"5"},"spec":{"leaseDurationSeconds":1e300}})",
           R"({"metadata":{"resourceVersion":"5"},"spec":{"leaseTransitions":[1]}})",
           R"({"metadata":{"resourceVersion":"5"},"spec":{"renewTime":{}}})",
       }) {
    EXPECT_FALSE(ParseLease(bad).ok()) << bad;
  }
}

TEST(LeaderIdentityTest, PodNamePlusRandomSuffixAndNamespaceFile) {
  setenv("POD_NAME", "topogangd-7d9f-abcde", 1);
  std::string a = MakeLeaderIdentity(), b = MakeLeaderIdentity();
  unsetenv("POD_NAME");
  EXPECT_EQ(a.rfind("topogangd-7d9f-abcde_", 0), 0u) << a;
  EXPECT_NE(a, b);  // a restarted pod with the same name is a different candidate

  auto dir = std::filesystem::temp_directory_path() / absl::StrCat("topogang-sa-", ::getpid());
  std::filesystem::create_directories(dir);
  EXPECT_EQ(DefaultLeaseNamespace(dir.string()), "kube-system");  // no file
  std::ofstream(dir / "namespace") << "gpu-system\n";
  EXPECT_EQ(DefaultLeaseNamespace(dir.string()), "gpu-system");
  std::ofstream(dir / "namespace") << "../../etc";
  EXPECT_EQ(DefaultLeaseNamespace(dir.string()), "kube-system");  // not a DNS label
  std::filesystem::remove_all(dir);
}

TEST(SteadyClockTest, TracksWallTimeAndNeverGoesBack) {
  SteadyClock c;
  absl::Time prev = c.Now();
  EXPECT_LT(absl::AbsDuration(prev - absl::Now()), absl::Seconds(1));
  for (int i = 0; i < 1000; ++i) {
    absl::Time t = c.Now();
    ASSERT_GE(t, prev);
    prev = t;
  }
}

// Candidates "a" and "b" on one fake API server and one FakeClock (lease 15 s, renew 10 s,
// retry 2 s), driven one attempt at a time: no threads, no waiting.
struct TwoCandidates {
  TwoCandidates()
      : clock(absl::FromUnixSeconds(1800000000)),
        a(std::make_shared<KubeClient>(Config(api, "a")), Opts("a"), {}, clock),
        b(std::make_shared<KubeClient>(Config(api, "b")), Opts("b"), {}, clock) {}
  static LeaderElectorOptions Opts(const std::string& id) {
    return Options(id, absl::Seconds(15), absl::Seconds(10), absl::Seconds(2));
  }
  FakeApiServer api;
  FakeClock clock;
  LeaderElector a, b;
};

// `first` attempts; while its `method` request waits at the server, `second` attempts (a real
// interleaving). Returns whether each won.
std::pair<bool, bool> Race(FakeApiServer& api, const std::string& method, LeaderElector& first,
                           LeaderElector& second) {
  std::atomic<bool> raced{false}, second_won{false};
  api.SetLeaseHook([&](const std::string& m) {
    if (m == method && !raced.exchange(true)) second_won = second.TryAcquireOrRenew();
  });
  const bool first_won = first.TryAcquireOrRenew();
  api.SetLeaseHook(nullptr);
  EXPECT_TRUE(raced) << method;
  return {first_won, second_won.load()};
}

// The decisions, one attempt at a time, with a FakeClock: no threads, no waiting.
TEST(LeaderElectorTest, AcquireRenewExpireAndTransitionsWithFakeClock) {
  TwoCandidates t;
  FakeApiServer& api = t.api;
  FakeClock& clock = t.clock;
  LeaderElector& a = t.a;
  LeaderElector& b = t.b;

  // Absent: created with POST.
  EXPECT_EQ(api.GetLease(kNs, kName), Json());
  ASSERT_TRUE(a.TryAcquireOrRenew());
  EXPECT_EQ(api.lease_requests("POST"), 1);
  Json s = Spec(api);
  EXPECT_EQ(s["holderIdentity"], "a");
  EXPECT_EQ(s["leaseDurationSeconds"], 15);
  EXPECT_EQ(s["leaseTransitions"], 0);
  EXPECT_EQ(s["acquireTime"], "2027-01-15T08:00:00.000000Z");
  EXPECT_EQ(s["renewTime"], s["acquireTime"]);
  const std::string acquired = s["acquireTime"];

  // Held by a live leader: b waits the full lease duration from when IT saw the record.
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock.Advance(absl::Seconds(14));
  EXPECT_FALSE(b.TryAcquireOrRenew());
  // a renews: renewTime moves, acquireTime and transitions stay, resourceVersion bumps.
  const std::string rv = api.GetLease(kNs, kName)["metadata"]["resourceVersion"];
  clock.Advance(absl::Milliseconds(1500));
  ASSERT_TRUE(a.TryAcquireOrRenew());
  s = Spec(api);
  EXPECT_EQ(s["acquireTime"], acquired);
  EXPECT_EQ(s["renewTime"], "2027-01-15T08:00:15.500000Z");
  EXPECT_EQ(s["leaseTransitions"], 0);
  EXPECT_NE(api.GetLease(kNs, kName)["metadata"]["resourceVersion"], rv);
  // The renewal is a change b observes: its 15 s start again.
  clock.Advance(absl::Seconds(1));
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock.Advance(absl::Seconds(14));
  EXPECT_FALSE(b.TryAcquireOrRenew());
  // a is silent for a whole lease duration: b takes over, transitions counted.
  clock.Advance(absl::Seconds(1));
  ASSERT_TRUE(b.TryAcquireOrRenew());
  s = Spec(api);
  EXPECT_EQ(s["holderIdentity"], "b");
  EXPECT_EQ(s["leaseTransitions"], 1);
  EXPECT_NE(s["acquireTime"], acquired);
  EXPECT_FALSE(a.TryAcquireOrRenew());  // a sees b's record: held
  clock.Advance(absl::Seconds(16));
  ASSERT_TRUE(a.TryAcquireOrRenew());
  EXPECT_EQ(Spec(api)["leaseTransitions"], 2);
  EXPECT_EQ(api.lease_holders(), (std::vector<std::string>{"a", "a", "b", "a"}));
}

// A 409 on the PUT (another replica wrote first) is not leadership, for either side.
TEST(LeaderElectorTest, ConflictingUpdatesNeverGiveTwoLeaders) {
  TwoCandidates t;
  FakeApiServer& api = t.api;
  FakeClock& clock = t.clock;
  LeaderElector& a = t.a;
  LeaderElector& b = t.b;
  // An expired lease of a dead replica, both candidates have observed it long enough.
  api.SetLease(
      Json{{"metadata", {{"name", kName}, {"namespace", kNs}}},
           {"spec",
            {{"holderIdentity", "dead"}, {"leaseDurationSeconds", 15}, {"leaseTransitions", 4}}}});
  EXPECT_FALSE(a.TryAcquireOrRenew());
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock.Advance(absl::Seconds(20));

  // While a's PUT is in flight, b reads and writes the lease (a real interleaving: b's
  // requests are served while a's request waits in the hook).
  auto [a_won, b_won] = Race(api, "PUT", a, b);
  EXPECT_TRUE(b_won);
  EXPECT_FALSE(a_won);  // 409 Conflict: stale resourceVersion
  EXPECT_EQ(Spec(api)["holderIdentity"], "b");
  EXPECT_EQ(Spec(api)["leaseTransitions"], 5);  // one takeover, counted once
  EXPECT_EQ(api.lease_holders(), (std::vector<std::string>{"b"}));
  // a now sees b's fresh record and keeps off it; b renews.
  EXPECT_FALSE(a.TryAcquireOrRenew());
  EXPECT_TRUE(b.TryAcquireOrRenew());

  // Create race: both see 404; the second POST is 409 AlreadyExists.
  TwoCandidates fresh;
  auto [first_won, second_won] = Race(fresh.api, "POST", fresh.a, fresh.b);
  EXPECT_TRUE(second_won);
  EXPECT_FALSE(first_won);
  EXPECT_EQ(fresh.api.lease_requests("POST"), 2);
  EXPECT_EQ(Spec(fresh.api)["holderIdentity"], "b");
}

TEST(LeaderElectorTest, GarbageLeaseNeverLeadsAndNeverCrashes) {
  FakeApiServer api;
  FakeClock clock(absl::FromUnixSeconds(1800000000));
  LeaderElector a(std::make_shared<KubeClient>(Config(api, "a")),
                  Options("a", absl::Seconds(15), absl::Seconds(10), absl::Seconds(2)), {}, clock);
  for (const char* garbage : {
           "<html>502 Bad Gateway</html>",
           "[]",
           R"({"metadata":{"resourceVersion":"5"},"spec":{"holderIdentity":42}})",
           R"({"metadata":{"resourceVersion":"5"},"spec":{"leaseDurationSeconds":"never"}})",
           R"({"metadata":{},"spec":{"holderIdentity":""}})",
       }) {
    api.SetLeaseRaw(kNs, kName, garbage);
    for (int i = 0; i < 3; ++i) {
      EXPECT_FALSE(a.TryAcquireOrRenew()) << garbage;
      clock.Advance(absl::Hours(1));  // however long it stays unreadable
    }
  }
  EXPECT_EQ(api.lease_requests("PUT"), 0);
  EXPECT_EQ(api.lease_requests("POST"), 0);

  // Also through the election loop: attempts keep coming, leadership never does.
  Invariant inv;
  Candidate c(api, inv, "c", absl::Milliseconds(600), absl::Milliseconds(400),
              absl::Milliseconds(20));
  const int gets = api.lease_requests("GET");
  c.elector->Start();
  ASSERT_TRUE(api.WaitFor([&] { return api.lease_requests("GET") >= gets + 5; }));
  EXPECT_FALSE(c.elector->IsLeader());
  EXPECT_EQ(c.started, 0);
  // A readable record again (its holder long gone): c takes it once the lease duration passes.
  api.SetLease(Json{{"metadata", {{"name", kName}, {"namespace", kNs}}},
                    {"spec", {{"holderIdentity", "gone"}, {"leaseDurationSeconds", 1}}}});
  ASSERT_TRUE(api.WaitFor([&] { return c.started == 1; }));
  EXPECT_EQ(Spec(api)["holderIdentity"], "c");
  EXPECT_EQ(Spec(api)["leaseTransitions"], 1);
}

// Election loops from here on: short real durations, waits on conditions only.
TEST(LeaderElectorTest, RacingCandidatesExactlyOneLeadsAndReleaseHandsOverQuickly) {
  FakeApiServer api;
  Invariant inv;
  // A long lease: a handover within it proves the release, not expiry, did it.
  const absl::Duration lease = absl::Seconds(30), renew = absl::Seconds(20),
                       retry = absl::Milliseconds(30);
  std::vector<std::unique_ptr<Candidate>> cs;
  for (const char* id : {"r0", "r1", "r2"}) {
    cs.push_back(std::make_unique<Candidate>(api, inv, id, lease, renew, retry));
  }
  for (auto& c : cs) c->elector->Start();
  int next_id = 3;
  for (int round = 0; round < 4; ++round) {
    ASSERT_TRUE(api.WaitFor([&] { return CountLeaders(cs) == 1; }, 10000)) << round;
    Candidate* leader = Leader(cs);
    ASSERT_NE(leader, nullptr);
    // Let several renewals happen; check the invariant at each.
    const int puts = api.lease_requests("PUT");
    ASSERT_TRUE(api.WaitFor([&] {
      EXPECT_LE(CountLeaders(cs), 1);
      return api.lease_requests("PUT") >= puts + 5;
    }));
    EXPECT_EQ(Leader(cs), leader);
    EXPECT_EQ(Spec(api)["holderIdentity"], leader->id);
    EXPECT_EQ(Spec(api)["leaseTransitions"], round);
    // Graceful release: holder "" with a 1 s duration, then one of the others leads.
    const auto start = absl::Now();
    leader->elector->Stop();
    EXPECT_TRUE(leader->StopStatus().ok());
    EXPECT_EQ(leader->stopped, 1);
    ASSERT_TRUE(api.WaitFor(
        [&] {
          EXPECT_LE(CountLeaders(cs), 1);
          return CountLeaders(cs) == 1;
        },
        10000))
        << round;
    EXPECT_LT(absl::Now() - start, lease / 2);
    EXPECT_NE(Leader(cs), leader);
    std::vector<std::string> holders = api.lease_holders();
    EXPECT_NE(std::find(holders.begin(), holders.end(), ""), holders.end());
    // Replace the stopped candidate with a fresh one (as the Deployment would).
    for (auto& c : cs) {
      if (c.get() == leader) {
        c = std::make_unique<Candidate>(api, inv, absl::StrCat("r", next_id++), lease, renew,
                                        retry);
        c->elector->Start();
      }
    }
  }
  for (auto& c : cs) c->elector->Stop();
  std::lock_guard<std::mutex> l(inv.mu);
  EXPECT_EQ(inv.max_leaders, 1);
  EXPECT_EQ(inv.leaders, 0);
  // Callbacks strictly alternate: +x -x +y -y ...
  for (size_t i = 0; i < inv.log.size(); ++i) {
    EXPECT_EQ(inv.log[i][0], i % 2 == 0 ? '+' : '-') << i;
    if (i % 2 == 1) {
      EXPECT_EQ(inv.log[i].substr(1), inv.log[i - 1].substr(1));
    }
  }
}

class OutageTest : public ::testing::TestWithParam<FakeApiServer::Outage> {};

// The leader loses the API server (its requests fail, or hang): it stops leading after the
// renew deadline; the standby, which still reaches the API, takes over after the lease
// expires, and only after the old leader stopped.
TEST_P(OutageTest, LeaderStopsAfterRenewDeadlineThenStandbyTakesOver) {
  FakeApiServer api;
  Invariant inv;
  const absl::Duration lease = absl::Milliseconds(2000), renew = absl::Milliseconds(600),
                       retry = absl::Milliseconds(50);
  std::vector<std::unique_ptr<Candidate>> cs;
  cs.push_back(std::make_unique<Candidate>(api, inv, "o0", lease, renew, retry));
  cs.push_back(std::make_unique<Candidate>(api, inv, "o1", lease, renew, retry));
  for (auto& c : cs) c->elector->Start();
  ASSERT_TRUE(api.WaitFor([&] { return CountLeaders(cs) == 1; }));
  Candidate* old = Leader(cs);
  Candidate* standby = old == cs[0].get() ? cs[1].get() : cs[0].get();
  ASSERT_TRUE(api.WaitFor([&] { return Spec(api)["holderIdentity"] == old->id; }));

  const absl::Time cut = absl::Now();
  api.SetLeaseOutage(GetParam(), "token-" + old->id);
  ASSERT_TRUE(api.WaitFor([&] { return old->stopped == 1; }));
  const absl::Duration to_loss = absl::Now() - cut;
  EXPECT_GE(to_loss, renew - 2 * retry);  // not before the deadline
  EXPECT_FALSE(old->elector->IsLeader());
  EXPECT_TRUE(old->elector->Lost());
  EXPECT_FALSE(old->StopStatus().ok());
  EXPECT_NE(old->StopStatus().message().find("could not renew lease"), std::string::npos)
      << old->StopStatus();

  ASSERT_TRUE(api.WaitFor([&] {
    EXPECT_LE(CountLeaders(cs), 1);
    return standby->started == 1;
  }));
  EXPECT_EQ(Spec(api)["holderIdentity"], standby->id);
  EXPECT_EQ(Spec(api)["leaseTransitions"], 1);
  // The standby's takeover waited for the lease to expire, counted from its last observation.
  EXPECT_GE(absl::Now() - cut, lease - 2 * retry);
  // The lost elector is done: the outage ending does not make it try again.
  api.SetLeaseOutage(FakeApiServer::Outage::kNone);
  const int puts = api.lease_requests("PUT");
  ASSERT_TRUE(api.WaitFor([&] { return api.lease_requests("PUT") >= puts + 3; }));
  EXPECT_EQ(old->started, 1);
  EXPECT_EQ(Spec(api)["holderIdentity"], standby->id);
  for (auto& c : cs) c->elector->Stop();
  std::lock_guard<std::mutex> l(inv.mu);
  EXPECT_EQ(inv.max_leaders, 1);
  EXPECT_EQ(inv.log, (std::vector<std::string>{"+" + old->id, "-" + old->id, "+" + standby->id,
                                               "-" + standby->id}));
}

INSTANTIATE_TEST_SUITE_P(ErrorsAndHangs, OutageTest,
                         ::testing::Values(FakeApiServer::Outage::kError,
                                           FakeApiServer::Outage::kHang),
                         [](const auto& info) {
                           return info.param == FakeApiServer::Outage::kError
                                      ? std::string("Errors")
                                      : std::string("Hangs");
                         });

}  // namespace
}  // namespace topogang
