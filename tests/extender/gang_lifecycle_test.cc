// Over 500 lines: one suite for a gang's life in the extender (filter, re-plan, bind, expiry),
// its cases sharing the fixture and its helpers.
// The gang lifecycle under kube-scheduler's real behaviour (issue #6), at the service level:
// gangs planned inside the nodes kube-scheduler offers, slots that stop being offered, held
// members whose slot moves, pods deleted while pending, bindings that fail, and watch events that
// arrive after a binding timed out. The same scenarios through the kube-scheduler emulator and
// the fake API server live in tests/kubesched/.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>

#include "k8s/pod_info.h"
#include "tests/support/service_fixture.h"

namespace topogang {
namespace {

using testing::GangPod;
using testing::MakePod;
using testing::NodeNames;
using Fixture = testing::ServiceFixture;

constexpr auto kWait = std::chrono::seconds(20);

std::vector<std::string> Slice(const std::vector<std::string>& v, size_t from, size_t to) {
  return std::vector<std::string>(v.begin() + from, v.begin() + to);
}

std::string OnlyPassing(const ExtenderFilterResult& r) {
  EXPECT_EQ(r.node_names.size(), 1u)
      << (r.failed_unresolvable.empty() ? r.error : r.failed_unresolvable[0].second);
  return r.node_names.empty() ? "" : r.node_names[0];
}

// Fails the binding of one pod `failures` times (the API server's 500 or a timeout).
class FlakyBinder : public Binder {
 public:
  FlakyBinder(std::string pod, int failures) : pod_(std::move(pod)), failures_(failures) {}
  absl::Status Bind(const PodBinding& b) override {
    if (b.pod_name == pod_ && failures_-- > 0) {
      return absl::UnavailableError("the server is currently unable to handle the request");
    }
    return memory_.Bind(b);
  }
  std::map<std::string, std::string> Bindings() const { return memory_.Bindings(); }

 private:
  std::string pod_;
  std::atomic<int> failures_;
  MemoryBinder memory_;
};

// Holds every binding until Open(): an API server slower than kube-scheduler's httpTimeout.
class GatedBinder : public Binder {
 public:
  absl::Status Bind(const PodBinding& b) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++waiting_;
      cv_.wait(lock, [&] { return open_; });
    }
    return memory_.Bind(b);
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  int Waiting() {
    std::lock_guard<std::mutex> lock(mu_);
    return waiting_;
  }
  std::map<std::string, std::string> Bindings() const { return memory_.Bindings(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int waiting_ = 0;
  MemoryBinder memory_;
};

// A nodeSelector (or affinity, or a taint the pod does not tolerate) leaves kube-scheduler
// offering only part of the cluster: the gang is planned inside it.
TEST(GangLifecycleTest, GangWithANodeSelectorIsPlannedInsideTheOfferedNodes) {
  Fixture f(32);
  const std::vector<std::string> spine1 = Slice(f.names, 16, 32);  // "spine-1": nodes 16..31
  std::set<std::string> used;
  for (int i = 0; i < 8; ++i) {
    std::string n = OnlyPassing(f.FilterOffered(MakePod(GangPod("sel", 8, i, 8)), spine1));
    EXPECT_NE(std::find(spine1.begin(), spine1.end(), n), spine1.end()) << n;
    used.insert(n);
  }
  EXPECT_EQ(used.size(), 8u);
  std::vector<std::future<std::string>> binds;
  for (int i = 0; i < 8; ++i) {
    Json p = MakePod(GangPod("sel", 8, i, 8));
    binds.push_back(f.Bind(p, OnlyPassing(f.FilterOffered(p, spine1))));
  }
  for (auto& b : binds) {
    ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
    EXPECT_EQ(b.get(), "");
  }
  for (const auto& [pod, node] : f.binder.Bindings()) {
    EXPECT_NE(std::find(spine1.begin(), spine1.end(), node), spine1.end()) << pod << " " << node;
  }
}

// The first member was offered everything; a later member is offered none of the reserved
// nodes (its own constraints): the gang is planned again inside what it was offered, never a
// livelock on "holds GPUs on nodes kube-scheduler did not offer".
TEST(GangLifecycleTest, AMemberNotOfferedItsSlotsReplansTheGang) {
  Fixture f(32);
  Json p0 = MakePod(GangPod("g", 2, 0, 8)), p1 = MakePod(GangPod("g", 2, 1, 8));
  std::string n0 = OnlyPassing(f.FilterOffered(p0, f.names));
  std::set<std::string> first = f.state.With([](GangScheduler& s) {
    std::set<std::string> out;
    for (const MemberPlacement& m : s.Find("default/g")->placement.members) {
      out.insert(s.cluster().node(m.node).name);
    }
    return out;
  });
  std::vector<std::string> others;
  for (const std::string& n : f.names) {
    if (!first.contains(n)) others.push_back(n);
  }
  std::string n1 = OnlyPassing(f.FilterOffered(p1, others));
  EXPECT_FALSE(first.contains(n1));
  EXPECT_EQ(f.UsedGpus(), 16) << "one reservation, moved, not two";
  // Member 0 is steered to its new slot on its next filter.
  std::string m0 = OnlyPassing(f.FilterOffered(p0, others));
  EXPECT_NE(m0, n1);
  EXPECT_FALSE(first.contains(m0));
  auto b0 = f.Bind(p0, m0), b1 = f.Bind(p1, n1);
  ASSERT_EQ(b0.wait_for(kWait), std::future_status::ready);
  ASSERT_EQ(b1.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(b0.get(), "");
  EXPECT_EQ(b1.get(), "");
}

// `pod` filters with every node offered, then retries with its node no longer offered (its own
// filters now reject it): it must pass another node, and a "replan" event for `gang` is
// published.
void RetryWithoutItsNodeIsPlannedAgain(Fixture& f, const Json& pod, const std::string& gang) {
  std::string n0 = OnlyPassing(f.FilterOffered(pod, f.names));
  std::vector<std::string> without;
  for (const std::string& n : f.names) {
    if (n != n0) without.push_back(n);
  }
  std::string again = OnlyPassing(f.FilterOffered(pod, without));
  EXPECT_NE(again, n0);
  EXPECT_FALSE(again.empty());
  bool replanned = false;
  for (const DecisionEvent& e : f.state.WaitEvents(0, absl::Now(), 1000)) {
    replanned |= e.kind == "replan" && e.gang == gang;
  }
  EXPECT_TRUE(replanned);
}

// A member's retry finds its slot no longer offered (kube-scheduler's own filters now reject
// that node): the gang is planned again, not steered to a node it will never get.
TEST(GangLifecycleTest, ARetryWhoseSlotIsNoLongerOfferedReplansTheGang) {
  Fixture f(32);
  RetryWithoutItsNodeIsPlannedAgain(f, MakePod(GangPod("q", 2, 0, 8)), "default/q");
  EXPECT_EQ(f.UsedGpus(), 16);
}

// The same for a pod of no gang: its retry finds its reserved node no longer offered (its own
// filters now reject the node, or a model rebuild planned it again without the nodes its offers
// had excluded, which index the old model). It is planned again inside the offer. Refused as
// unresolvable, kube-scheduler parked it until the next cluster event or for 5 minutes while its
// reservation ran out (a churn run stalled 20 s on such a pod).
TEST(GangLifecycleTest, APodOfNoGangWhoseNodeIsNoLongerOfferedIsPlannedAgain) {
  Fixture f(32);
  testing::PodOpts o;
  o.name = "solo";
  o.gpus = 2;
  RetryWithoutItsNodeIsPlannedAgain(f, MakePod(o), "default/pod:solo");
  EXPECT_EQ(f.UsedGpus(), 2);
}

// Members whose constraints exclude each other cannot be placed together: a few re-plans, then
// a readable refusal instead of moving the gang back and forth forever.
TEST(GangLifecycleTest, MembersWithDisjointConstraintsGetAReasonNotALivelock) {
  Fixture f(32);
  const std::vector<std::string> a = Slice(f.names, 0, 16), b = Slice(f.names, 16, 32);
  Json p0 = MakePod(GangPod("x", 2, 0, 8)), p1 = MakePod(GangPod("x", 2, 1, 8));
  std::string last;
  for (int round = 0; round < 10; ++round) {
    ExtenderFilterResult r = f.FilterOffered(round % 2 ? p1 : p0, round % 2 ? b : a);
    if (r.node_names.empty()) {
      ASSERT_FALSE(r.failed_unresolvable.empty());
      last = r.failed_unresolvable[0].second;
      break;
    }
  }
  EXPECT_NE(last.find("did not offer"), std::string::npos) << last;
  EXPECT_LE(f.UsedGpus(), 16);
  // The limit is on re-plans close together: a gang waiting for hours may meet a cordon or a
  // taint now and then, and each must still move it. A minute later the gang moves again.
  f.clock.Advance(absl::Minutes(2));
  const bool in_a = f.state.With([&](GangScheduler& s) {
    const GangRecord* r = s.Find("default/x");
    return r != nullptr &&
           std::find(a.begin(), a.end(), s.cluster().node(r->placement.members[0].node).name) !=
               a.end();
  });
  const auto moved = in_a ? f.FilterOffered(p1, b) : f.FilterOffered(p0, a);
  EXPECT_EQ(moved.node_names.size(), 1u)
      << (moved.failed_unresolvable.empty() ? moved.error : moved.failed_unresolvable[0].second);
}

// A cordon while members wait at the barrier moves the reservation: held members whose slot
// moved are answered (never bound to their old node), and the barrier opens only when every
// member has arrived at its current slot. Members retry the way kube-scheduler does: filter
// again, bind to the node they are steered to.
TEST(GangLifecycleTest, CordonWhileMembersAreHeldNeverBindsToAStaleNode) {
  Fixture f(16, absl::Seconds(30));
  std::vector<Json> pods;
  std::vector<std::string> nodes;
  for (int i = 0; i < 4; ++i) {
    pods.push_back(MakePod(GangPod("c", 4, i, 8)));
    nodes.push_back(f.FilterOne(pods[i]));
  }
  std::vector<std::future<std::string>> first;
  for (int i = 0; i < 3; ++i) first.push_back(f.Bind(pods[i], nodes[i]));
  while (f.ledger.GetStats().held_binds < 3) absl::SleepFor(absl::Milliseconds(2));
  ASSERT_TRUE(f.state.SetNodeHealth(nodes[0], HealthSource::kKubeCordon, true, "drain").ok());
  ASSERT_EQ(first[0].wait_for(kWait), std::future_status::ready);
  const std::string moved = first[0].get();
  EXPECT_NE(moved.find("moved"), std::string::npos) << moved;
  EXPECT_TRUE(f.binder.Bindings().empty());
  // Every member, as kube-scheduler would: retry until bound.
  std::vector<std::future<void>> members;
  for (int i = 0; i < 4; ++i) {
    members.push_back(std::async(std::launch::async, [&, i] {
      std::string err = i == 0 ? moved : i < 3 ? first[i].get() : "not tried";
      for (int attempt = 0; !err.empty() && attempt < 20; ++attempt) {
        err = f.Bind(pods[i], f.FilterOne(pods[i])).get();
      }
      EXPECT_EQ(err, "") << "member " << i;
    }));
  }
  for (auto& m : members) ASSERT_EQ(m.wait_for(kWait), std::future_status::ready);
  auto bound = f.binder.Bindings();
  ASSERT_EQ(bound.size(), 4u);
  for (const auto& [pod, node] : bound) EXPECT_NE(node, nodes[0]) << pod << " on the cordoned node";
  // The model agrees with the bindings: the gang holds exactly the bound nodes.
  std::set<std::string> model = f.state.With([](GangScheduler& s) {
    std::set<std::string> out;
    for (const MemberPlacement& m : s.Find("default/c")->placement.members) {
      out.insert(s.cluster().node(m.node).name);
    }
    return out;
  });
  std::set<std::string> api;
  for (const auto& [pod, node] : bound) api.insert(node);
  EXPECT_EQ(model, api);
}

// Pods of a pending gang deleted: their reservation is freed at once, not after a TTL.
TEST(GangLifecycleTest, DeletingAPendingGangFreesItsReservationAtOnce) {
  Fixture f(16);
  std::vector<Json> pods;
  for (int i = 0; i < 3; ++i) {
    pods.push_back(MakePod(GangPod("d", 4, i, 8)));
    f.FilterOne(pods[i]);
  }
  EXPECT_EQ(f.UsedGpus(), 32);
  for (int i = 0; i < 3; ++i) {
    auto info = ParsePod(pods[i], "nvidia.com/gpu");
    ASSERT_TRUE(info.ok());
    f.ledger.PodDeleted(*info);
    EXPECT_EQ(f.UsedGpus(), i < 2 ? 32 : 0) << "after deleting " << i + 1 << " pods";
  }
  EXPECT_EQ(f.ledger.GetStats().reserved_gangs, 0);
  // Another gang gets the GPUs straight away.
  for (int i = 0; i < 2; ++i) f.FilterOne(MakePod(GangPod("e", 2, i, 8)));
  EXPECT_EQ(f.UsedGpus(), 16);
}

// A gang too large for the free GPUs waits in the queue without a reservation; its pods are
// deleted: it leaves the queue at once. Without that, the queue would reserve the pod-less gang
// as soon as GPUs free up and another gang's filter runs (issue #9, failure 5).
TEST(GangLifecycleTest, DeletingAWaitingGangTakesItOutOfTheQueueAtOnce) {
  Fixture f(16);
  std::vector<Json> a, big;
  for (int i = 0; i < 12; ++i) {
    a.push_back(MakePod(GangPod("a", 12, i, 8)));
    f.FilterOne(a.back());  // 12 of the 16 nodes reserved
  }
  for (int i = 0; i < 2; ++i) {
    big.push_back(MakePod(GangPod("big", 8, i, 8)));
    EXPECT_TRUE(f.service.Filter(testing::MakeArgs(big[i], f.names)).node_names.empty());
  }
  auto remove = [&](const std::vector<Json>& pods) {
    for (const Json& p : pods) {
      auto info = ParsePod(p, "nvidia.com/gpu");
      ASSERT_TRUE(info.ok());
      f.ledger.PodDeleted(*info);
    }
  };
  remove(big);
  remove(a);  // the GPUs come back
  EXPECT_EQ(f.UsedGpus(), 0);
  // Another gang's filter runs the queue: only that gang is placed, nothing for "big".
  for (int i = 0; i < 2; ++i) f.FilterOne(MakePod(GangPod("small", 2, i, 8)));
  EXPECT_EQ(f.UsedGpus(), 16) << "GPUs reserved for a gang whose pods are all gone";
  bool released = false;
  for (const DecisionEvent& e : f.state.WaitEvents(0, absl::Now(), 10000)) {
    released = released || (e.kind == "release" && e.gang == "default/big");
  }
  EXPECT_TRUE(released);
}

// One binding of sixteen fails at the API server: the fifteen others bind, the failed member is
// retried by kube-scheduler onto its reserved node and binds alone; no GPU leaks.
TEST(GangLifecycleTest, OneFailedBindingOfSixteenIsRetriedAndNothingLeaks) {
  FlakyBinder flaky("b-5", 1);
  Fixture f(32, absl::Seconds(30), {}, &flaky);
  std::vector<Json> pods;
  std::vector<std::string> nodes;
  for (int i = 0; i < 16; ++i) {
    pods.push_back(MakePod(GangPod("b", 16, i, 8)));
    nodes.push_back(f.FilterOne(pods[i]));
  }
  std::vector<std::future<std::string>> binds;
  for (int i = 0; i < 16; ++i) binds.push_back(f.Bind(pods[i], nodes[i]));
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(binds[i].wait_for(kWait), std::future_status::ready);
    std::string e = binds[i].get();
    EXPECT_EQ(e.empty(), i != 5) << i << ": " << e;
  }
  EXPECT_EQ(flaky.Bindings().size(), 15u);
  EXPECT_EQ(f.UsedGpus(), 128) << "the failed member keeps its slot, nothing else is held";
  // kube-scheduler's retry after backoff: same node, bound alone.
  EXPECT_EQ(f.FilterOne(pods[5]), nodes[5]);
  auto retry = f.Bind(pods[5], nodes[5]);
  ASSERT_EQ(retry.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(retry.get(), "");
  EXPECT_EQ(flaky.Bindings().size(), 16u);
  EXPECT_EQ(f.UsedGpus(), 128);
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

// A member whose binding failed is deleted and its controller makes a replacement: the
// replacement takes the dead member's place next to the survivors, and its GPUs are not lost.
TEST(GangLifecycleTest, AReplacementPodTakesTheSlotOfAMemberThatNeverBound) {
  FlakyBinder flaky("r-2", 100);
  Fixture f(32, absl::Seconds(30), {}, &flaky);
  std::vector<Json> pods;
  std::vector<std::future<std::string>> binds;
  for (int i = 0; i < 4; ++i) pods.push_back(MakePod(GangPod("r", 4, i, 8)));
  for (int i = 0; i < 4; ++i) binds.push_back(f.Bind(pods[i], f.FilterOne(pods[i])));
  for (auto& b : binds) ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(flaky.Bindings().size(), 3u);
  auto dead = ParsePod(pods[2], "nvidia.com/gpu");
  ASSERT_TRUE(dead.ok());
  f.ledger.PodDeleted(*dead);
  EXPECT_EQ(f.UsedGpus(), 24) << "the dead member's GPUs come back";
  testing::PodOpts o = GangPod("r", 4, 2, 8);
  o.name = "r-2-retry";
  Json replacement = MakePod(o);
  std::string n = f.FilterOne(replacement);
  EXPECT_FALSE(n.empty());
  EXPECT_EQ(f.UsedGpus(), 32);
  auto b = f.Bind(replacement, n);
  ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(b.get(), "");
  EXPECT_EQ(flaky.Bindings().size(), 4u);
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

// The binding POST timed out on our side but the API server applied it; its watch event comes
// later: it confirms the member, it never frees the running gang's GPUs.
TEST(GangLifecycleTest, LateWatchEventOfATimedOutBindingKeepsTheGangsGpus) {
  FlakyBinder flaky("w-1", 1);
  Fixture f(16, absl::Seconds(30), {}, &flaky);
  std::vector<Json> pods;
  std::vector<std::string> nodes;
  std::vector<std::future<std::string>> binds;
  for (int i = 0; i < 2; ++i) {
    pods.push_back(MakePod(GangPod("w", 2, i, 8)));
    nodes.push_back(f.FilterOne(pods[i]));
  }
  for (int i = 0; i < 2; ++i) binds.push_back(f.Bind(pods[i], nodes[i]));
  for (auto& b : binds) ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(f.UsedGpus(), 16);
  for (int i = 0; i < 1000 && f.ledger.GetStats().running_gangs != 1; ++i) {
    absl::SleepFor(absl::Milliseconds(1));  // replies go out before the gang is marked running
  }
  auto late = ParsePod(pods[1], "nvidia.com/gpu");
  ASSERT_TRUE(late.ok());
  late->node_name = nodes[1];
  late->phase = "Running";
  f.ledger.ObservePod(*late);
  EXPECT_EQ(f.UsedGpus(), 16);
  EXPECT_EQ(f.ledger.GetStats().running_gangs, 1);
  // kube-scheduler's own retry of that bind now succeeds without a second binding.
  auto again = f.Bind(pods[1], nodes[1]);
  ASSERT_EQ(again.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(again.get(), "");
  EXPECT_EQ(flaky.Bindings().size(), 1u) << "only w-0 went through the binder";
}

// A replica that is not (or no longer) the leader binds nothing: the barrier's bindings fail
// instead of reaching the API server.
TEST(GangLifecycleTest, NothingBindsWithoutLeadership) {
  Fixture f(8, absl::Seconds(30));
  f.ledger.SetBindingAllowed(false, "topogangd lost leadership: lease taken");
  std::vector<std::future<std::string>> binds;
  for (int i = 0; i < 2; ++i) {
    Json p = MakePod(GangPod("l", 2, i, 8));
    binds.push_back(f.Bind(p, f.FilterOne(p)));
  }
  for (auto& b : binds) {
    ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
    EXPECT_NE(b.get().find("lost leadership"), std::string::npos);
  }
  EXPECT_TRUE(f.binder.Bindings().empty());
}

// Gangs waiting for GPUs start by pod priority (spec.priority), then arrival: a high-priority
// gang that came later gets the GPUs first.
TEST(GangLifecycleTest, WaitingGangsStartByPodPriority) {
  Fixture f(4);
  std::vector<Json> running;
  for (int i = 0; i < 4; ++i) {
    running.push_back(MakePod(GangPod("run", 4, i, 8)));
    f.FilterOne(running.back());
  }
  Json low = MakePod(GangPod("low", 3, 0, 8));  // 24 of 32 GPUs: only one of them fits
  Json high = MakePod(GangPod("high", 3, 0, 8));
  high["spec"]["priority"] = 1000;
  EXPECT_TRUE(f.FilterOffered(low, f.names).node_names.empty());   // queued first
  EXPECT_TRUE(f.FilterOffered(high, f.names).node_names.empty());  // queued second
  for (const Json& p : running) {  // the running gang's pods are deleted: room for one gang
    auto info = ParsePod(p, "nvidia.com/gpu");
    ASSERT_TRUE(info.ok());
    f.ledger.PodDeleted(*info);
  }
  ExtenderFilterResult r = f.FilterOffered(low, f.names);  // low asks first...
  EXPECT_TRUE(r.node_names.empty()) << "the higher-priority gang goes first";
  ASSERT_FALSE(r.failed_unresolvable.empty());
  // The queue started `high` on low's filter: what is left cannot hold low.
  EXPECT_NE(r.failed_unresolvable[0].second.find("cannot be placed now"), std::string::npos)
      << r.failed_unresolvable[0].second;
  EXPECT_EQ(f.UsedGpus(), 24);
  EXPECT_FALSE(OnlyPassing(f.FilterOffered(high, f.names)).empty());
}

TEST(GangLifecycleTest, PodPriorityIsRead) {
  Json pod = MakePod(GangPod("p", 2, 0, 8));
  pod["spec"]["priority"] = 1000000;
  auto info = ParsePod(pod, "nvidia.com/gpu");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->priority, 1000000);
  pod["spec"]["priority"] = "high";
  EXPECT_FALSE(ParsePod(pod, "nvidia.com/gpu").ok());
  pod["spec"]["priority"] = 1LL << 40;
  EXPECT_FALSE(ParsePod(pod, "nvidia.com/gpu").ok());
}

// The barrier opened but the bindings outlast the window (a 4,096-member burst, a slow API
// server): held members are answered at the end of their window instead of running into
// kube-scheduler's httpTimeout, and their bindings still complete.
TEST(GangLifecycleTest, MembersWhoseBindingOutlastsTheWindowAreAnsweredAndStillBound) {
  GatedBinder gated;
  Fixture f(16, absl::Milliseconds(500), {}, &gated);
  std::vector<Json> pods;
  std::vector<std::string> nodes;
  std::vector<std::future<std::string>> binds;
  for (int i = 0; i < 4; ++i) pods.push_back(MakePod(GangPod("slow", 4, i, 8)));
  for (int i = 0; i < 4; ++i) nodes.push_back(f.FilterOne(pods[i]));
  for (int i = 0; i < 4; ++i) binds.push_back(f.Bind(pods[i], nodes[i]));
  for (auto& b : binds) {
    ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
    const std::string e = b.get();
    EXPECT_NE(e.find("is being bound"), std::string::npos) << e;
  }
  EXPECT_GT(gated.Waiting(), 0) << "the bindings had started";
  EXPECT_TRUE(gated.Bindings().empty());
  gated.Open();
  for (int i = 0; i < 500 && f.ledger.GetStats().running_gangs < 1; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(gated.Bindings().size(), 4u);
  EXPECT_EQ(f.UsedGpus(), 32);
}

// A member deleted while its gang's bindings are at the API server: its GPUs come back at once
// (the gang is committed in the core, so the member is released there), and the binding's late
// answer does not resurrect its slot.
TEST(GangLifecycleTest, AMemberDeletedWhileItsGangIsBeingBoundIsReleased) {
  GatedBinder gated;
  Fixture f(16, absl::Seconds(30), {}, &gated);
  std::vector<Json> pods;
  std::vector<std::future<std::string>> binds;
  for (int i = 0; i < 4; ++i) pods.push_back(MakePod(GangPod("del", 4, i, 8)));
  for (int i = 0; i < 4; ++i) binds.push_back(f.Bind(pods[i], f.FilterOne(pods[i])));
  for (int i = 0; i < 500 && gated.Waiting() < 4; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_EQ(gated.Waiting(), 4) << "every binding is at the API server";
  auto gone = ParsePod(pods[1], "nvidia.com/gpu");
  ASSERT_TRUE(gone.ok());
  f.ledger.PodDeleted(*gone);
  EXPECT_EQ(f.UsedGpus(), 24) << "the deleted member's GPUs come back while the others bind";
  gated.Open();
  for (auto& b : binds) ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
  for (int i = 0; i < 500 && f.ledger.GetStats().running_gangs < 1; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(f.ledger.GetStats().running_gangs, 1);
  EXPECT_EQ(f.UsedGpus(), 24) << "the late answer for the deleted pod takes nothing back";
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

}  // namespace
}  // namespace topogang
