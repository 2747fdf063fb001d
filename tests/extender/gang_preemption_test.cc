// Topology-aware gang preemption through the verbs (#13): whole gangs of lower priority are
// evicted so that a high-priority gang gets the domain it needs; never part of a gang, never for
// a gang that would still not fit, never equal or higher priority; PodDisruptionBudgets block a
// preemption before anything is evicted; the freed nodes are kept for the preemptor.
// Cluster: 16 nodes x 8 GPUs, 4 nodes per rack (tests/support/test_util.h).
#include <gtest/gtest.h>

#include <mutex>
#include <set>

#include "absl/strings/str_cat.h"
#include "tests/support/service_fixture.h"

namespace topogang::testing {
namespace {

// Records evictions; refuses (as a PodDisruptionBudget would, HTTP 429) the pods in `protect`.
class FakeEvictor : public Evictor {
 public:
  absl::Status Evict(const PodBinding& p, bool dry_run) override {
    std::lock_guard<std::mutex> lock(mu_);
    (dry_run ? dry_ : evicted_).push_back(p.pod_name);
    if (protect_.contains(p.pod_name)) {
      return absl::ResourceExhaustedError(
          "Cannot evict pod as it would violate the pod's disruption budget.");
    }
    return absl::OkStatus();
  }
  void Protect(const std::string& pod, bool on) {
    std::lock_guard<std::mutex> lock(mu_);
    if (on) {
      protect_.insert(pod);
    } else {
      protect_.erase(pod);
    }
  }
  std::vector<std::string> Evicted() {
    std::lock_guard<std::mutex> lock(mu_);
    return evicted_;
  }
  size_t DryRuns() {
    std::lock_guard<std::mutex> lock(mu_);
    return dry_.size();
  }

 private:
  std::mutex mu_;
  std::set<std::string> protect_;
  std::vector<std::string> dry_, evicted_;
};

Json Pod(const std::string& gang, int size, int i, int priority, const std::string& tier = "rack") {
  PodOpts o = GangPod(gang, size, i, 8);
  if (!tier.empty()) o.annotations["topogang.io/required-tier"] = tier;
  Json p = MakePod(o);
  p["spec"]["priority"] = priority;
  return p;
}

struct PreemptFixture {
  PreemptFixture() {
    f.ledger.SetEvictor(&evictor);
    f.ledger.SetNotify([this](const GangNotice& n) {
      std::lock_guard<std::mutex> lock(mu);
      notices.push_back(n);
    });
  }
  ~PreemptFixture() { f.ledger.SetNotify(nullptr); }
  // A running gang of `size` x 8 GPUs within one `tier` ("": anywhere).
  void Run(const std::string& gang, int size, int priority, const std::string& tier = "rack") {
    std::vector<std::future<std::string>> binds;
    for (int i = 0; i < size; ++i) {
      Json p = Pod(gang, size, i, priority, tier);
      binds.push_back(f.Bind(p, f.FilterOne(p)));
    }
    for (auto& b : binds) {
      ASSERT_EQ(b.wait_for(std::chrono::seconds(10)), std::future_status::ready);
      ASSERT_EQ(b.get(), "");
    }
  }
  ExtenderFilterResult Filter(const Json& pod) { return f.FilterOffered(pod, f.names); }
  // What the API server's watch delivers once an evicted pod is gone.
  void Delete(const std::string& pod) {
    PodOpts o;
    o.name = pod;
    auto info = ParsePod(MakePod(o), "nvidia.com/gpu");
    ASSERT_TRUE(info.ok());
    f.ledger.PodDeleted(*info);
  }
  bool Noticed(const std::string& reason) {
    std::lock_guard<std::mutex> lock(mu);
    for (const GangNotice& n : notices) {
      if (n.reason == reason) return true;
    }
    return false;
  }
  // Waits (bounded, real time: the evictions run on their own thread) for `n` evictions.
  bool WaitEvicted(size_t n) {
    for (int i = 0; i < 500 && evictor.Evicted().size() < n; ++i) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    return evictor.Evicted().size() >= n;
  }

  ServiceFixture f{16};
  FakeEvictor evictor;
  std::mutex mu;
  std::vector<GangNotice> notices;
};

std::string FailReason(const ExtenderFilterResult& r) {
  if (!r.failed_unresolvable.empty()) return r.failed_unresolvable[0].second;
  if (!r.failed.empty()) return r.failed[0].second;
  return r.error;
}

// Four racks held by four low-priority gangs. A high-priority gang that needs one rack gets it:
// exactly one whole gang is evicted, its rack is kept from a low-priority newcomer, and the
// preemptor lands there once the victims are gone.
TEST(GangPreemption, AHighPriorityGangGetsARackByEvictingOneWholeGang) {
  PreemptFixture p;
  for (int g = 0; g < 4; ++g) p.Run(absl::StrCat("low", g), 4, 0);
  ASSERT_EQ(p.f.UsedGpus(), 128);
  ExtenderFilterResult r = p.Filter(Pod("hi", 4, 0, 100));
  EXPECT_TRUE(r.node_names.empty());
  EXPECT_NE(FailReason(r).find("preempted in"), std::string::npos) << FailReason(r);
  ASSERT_TRUE(p.WaitEvicted(4));
  std::vector<std::string> evicted = p.evictor.Evicted();
  ASSERT_EQ(evicted.size(), 4u) << "one whole gang, nothing else";
  const std::string victim = evicted[0].substr(0, evicted[0].find('-'));
  for (const std::string& e : evicted) EXPECT_EQ(e.substr(0, e.find('-')), victim) << e;
  EXPECT_EQ(p.evictor.DryRuns(), 4u) << "every eviction asked first";
  EXPECT_TRUE(p.Noticed("GangPreempting"));
  EXPECT_TRUE(p.Noticed("GangPreempted"));
  // The filter again while the victims terminate: no second preemption.
  EXPECT_NE(FailReason(p.Filter(Pod("hi", 4, 1, 100))).find("waiting for their pods"),
            std::string::npos);
  EXPECT_EQ(p.evictor.Evicted().size(), 4u);
  for (const std::string& e : evicted) p.Delete(e);
  EXPECT_EQ(p.f.UsedGpus(), 96);
  // A low-priority gang arriving now does not get the nominated rack.
  ExtenderFilterResult late = p.Filter(Pod("late", 2, 0, 0));
  EXPECT_TRUE(late.node_names.empty()) << "the freed rack is nominated for hi";
  // The preemptor does, all four members, inside the victim's rack.
  std::set<std::string> racks;
  std::vector<std::future<std::string>> binds;
  for (int i = 0; i < 4; ++i) {
    Json m = Pod("hi", 4, i, 100);
    const std::string n = p.f.FilterOne(m);
    ASSERT_FALSE(n.empty());
    racks.insert(std::to_string(std::stoi(n.substr(9)) / 4));
    binds.push_back(p.f.Bind(m, n));
  }
  EXPECT_EQ(racks.size(), 1u);
  for (auto& b : binds) {
    ASSERT_EQ(b.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_EQ(b.get(), "");
  }
  EXPECT_EQ(p.f.UsedGpus(), 128);
  EXPECT_TRUE(p.f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

// kube-scheduler's preempt verb (the path when its own filters reject every full node): for a
// gang member topogang preempts whole gangs itself and gives kube-scheduler no victims.
TEST(GangPreemption, ThePreemptVerbForAGangMemberPreemptsWholeGangsAndReturnsNoVictims) {
  PreemptFixture p;
  for (int g = 0; g < 4; ++g) p.Run(absl::StrCat("low", g), 4, 0);
  ExtenderPreemptionArgs args;
  args.pod = Pod("hi", 4, 0, 100);
  for (const std::string& n : p.f.names) args.victims[n].uids = {"some-uid"};
  ExtenderPreemptionResult out = p.f.service.Preempt(args);
  EXPECT_TRUE(out.victims.empty());
  ASSERT_TRUE(p.WaitEvicted(4));
  EXPECT_EQ(p.evictor.Evicted().size(), 4u);
}

TEST(GangPreemption, NeverForAGangThatWouldStillNotFitNorAgainstEqualPriority) {
  PreemptFixture p;
  for (int g = 0; g < 4; ++g) p.Run(absl::StrCat("low", g), 4, 10);
  // 5 nodes within one rack of 4: no set of victims makes room.
  ExtenderFilterResult big = p.Filter(Pod("big", 5, 0, 100));
  EXPECT_NE(FailReason(big).find("cannot be placed now"), std::string::npos) << FailReason(big);
  // Equal priority: never a victim.
  ExtenderFilterResult peer = p.Filter(Pod("peer", 4, 0, 10));
  EXPECT_NE(FailReason(peer).find("cannot be placed now"), std::string::npos) << FailReason(peer);
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_TRUE(p.evictor.Evicted().empty());
  EXPECT_EQ(p.evictor.DryRuns(), 0u);
  EXPECT_EQ(p.f.UsedGpus(), 128);
}

// A PodDisruptionBudget protecting one member blocks the whole preemption before anything is
// evicted; it is tried again after preemption_retry.
TEST(GangPreemption, APodDisruptionBudgetBlocksTheWholePreemptionThenItIsRetried) {
  PreemptFixture p;
  p.Run("low0", 16, 0, "");  // one gang over the whole cluster (no tier): the only possible victim
  for (int i = 0; i < 16; ++i) p.evictor.Protect(absl::StrCat("low0-", i), i == 7);
  ExtenderFilterResult r = p.Filter(Pod("hi", 4, 0, 100));
  EXPECT_TRUE(r.node_names.empty());
  for (int i = 0; i < 500 && !p.Noticed("GangPreemptionBlocked"); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(p.Noticed("GangPreemptionBlocked"));
  EXPECT_TRUE(p.evictor.Evicted().empty()) << "nothing evicted: the dry runs refused first";
  EXPECT_NE(FailReason(p.Filter(Pod("hi", 4, 1, 100))).find("disruption budget"),
            std::string::npos);
  // The budget allows it now; after the retry delay the preemption runs.
  p.evictor.Protect("low0-7", false);
  p.f.clock.Advance(p.f.ledger.options().preemption_retry);
  p.Filter(Pod("hi", 4, 0, 100));
  ASSERT_TRUE(p.WaitEvicted(16));
  EXPECT_EQ(p.evictor.Evicted().size(), 16u) << "the whole gang, every member";
}

}  // namespace
}  // namespace topogang::testing
