// kube-scheduler's client rate limit: the token bucket on a fake clock, then through the emulator
// against the fake API server (its own pods/binding POSTs, and the PodScheduled writes that the
// scheduling loop waits for).
#include "tests/kubesched/client_throttle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/kubesched/emulator.h"
#include "tests/support/fake_apiserver.h"
#include "tests/support/test_util.h"

namespace topogang::kubesched {
namespace {

TEST(ClientThrottle, BurstThenQpsWithTokensReservedAhead) {
  FakeClock clock;
  ClientThrottle t(clock, /*qps=*/2, /*burst=*/3);
  // A full bucket of 3, then one token per 0.5 s, each reserved after the ones before it.
  EXPECT_EQ(t.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(t.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(t.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(t.Reserve(), absl::Milliseconds(500));
  EXPECT_EQ(t.Reserve(), absl::Seconds(1));
  // 1 s later two tokens have come, both taken already: the next waits 0.5 s.
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(t.Reserve(), absl::Milliseconds(500));
  // Idle for long: the bucket refills to its burst, no more.
  clock.Advance(absl::Seconds(60));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(t.Reserve(), absl::ZeroDuration()) << i;
  EXPECT_EQ(t.Reserve(), absl::Milliseconds(500));
  EXPECT_EQ(t.throttled(), 4);
  EXPECT_EQ(t.waited(), absl::Milliseconds(2500));
}

TEST(ClientThrottle, NoQpsNoLimit) {
  FakeClock clock;
  ClientThrottle t(clock, 0, 1);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(t.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(t.throttled(), 0);
}

// A call whose token is already there when it is made (time passed since the last) must still
// run after the calls queued before it, not in the caller ahead of them: what made the test below
// fail, rarely, on a loaded machine. Here every second call waits for its token and the next
// finds one at once, 500 times over.
TEST(ClientThrottle, ACallWhoseTokenIsAlreadyHereStillRunsAfterTheQueuedOnes) {
  FakeClock clock;  // queued calls are due at once in real time: only their order is left
  ClientThrottle t(clock, /*qps=*/1, /*burst=*/1);
  std::mutex mu;
  std::vector<int> order;
  constexpr int kCalls = 1000;
  for (int i = 0; i < kCalls; ++i) {
    if (i % 2 == 0) clock.Advance(absl::Seconds(2));  // a token is back in the bucket
    t.Call([&, i] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    });
  }
  for (absl::Time deadline = absl::Now() + absl::Seconds(5); absl::Now() < deadline;) {
    std::lock_guard<std::mutex> lock(mu);
    if (order.size() == kCalls) break;
  }
  std::vector<int> want(kCalls);
  for (int i = 0; i < kCalls; ++i) want[i] = i;
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(order, want);
}

TEST(ClientThrottle, CallsRunInTokenOrderAndStopRunsTheRestAtOnce) {
  ScaledClock clock(1000);  // a virtual second is a real millisecond
  ClientThrottle t(clock, /*qps=*/100, /*burst=*/1);
  std::mutex mu;
  std::vector<int> order;
  std::thread::id first_ran_on;
  for (int i = 0; i < 5; ++i) {
    t.Call([&, i] {
      std::lock_guard<std::mutex> lock(mu);
      if (i == 0) first_ran_on = std::this_thread::get_id();
      order.push_back(i);
    });
  }
  {
    // The one token in the bucket: run in the caller. (Not "only call 0 has run yet": the next
    // token is 10 us of real time away, which a loaded machine can let pass before this check;
    // then a later call finds its token already there, and must still run after those queued.)
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_FALSE(order.empty());
    EXPECT_EQ(order.front(), 0);
    EXPECT_EQ(first_ran_on, std::this_thread::get_id());
  }
  for (absl::Time deadline = absl::Now() + absl::Seconds(5); absl::Now() < deadline;) {
    std::lock_guard<std::mutex> lock(mu);
    if (order.size() == 5) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  }
  // A token a virtual hour (3.6 s of real time) away: Stop runs the call waiting for it at once,
  // and wakes a caller waiting for the next.
  ClientThrottle slow(clock, /*qps=*/1.0 / 3600, /*burst=*/1);
  std::atomic<bool> ran{false};
  slow.Call([] {});
  slow.Call([&] { ran = true; });
  EXPECT_FALSE(ran);
  std::atomic<int> waited{-1};
  std::thread waiter([&] { waited = slow.Wait() ? 1 : 0; });
  const absl::Time t0 = absl::Now();
  slow.Stop();
  waiter.join();
  EXPECT_TRUE(ran);
  EXPECT_EQ(waited, 0);
  EXPECT_LT(absl::Now() - t0, absl::Seconds(1));
}

class ClientThrottleEndToEnd : public ::testing::Test {
 protected:
  void Start(double qps, int burst, double time_scale = 20) {
    EmulatorOptions o;
    o.api_server_url = api_.url();
    o.time_scale = time_scale;
    o.client_qps = qps;
    o.client_burst = burst;
    emu_ = std::make_unique<Emulator>(o);  // no extender: kube-scheduler binds itself
    ASSERT_TRUE(emu_->Start().ok());
  }
  void TearDown() override {
    if (emu_) emu_->Stop();
  }

  // When the pods named `prefix`* were first attempted (decisions of `kind`, logged once the
  // attempt's failure has been handled).
  std::vector<absl::Time> FirstAttempts(Decision::Kind kind, const std::string& prefix) {
    std::vector<absl::Time> out;
    for (const Decision& d : emu_->Decisions()) {
      if (d.kind == kind && d.attempt == 1 && d.pod.rfind("default/" + prefix, 0) == 0) {
        out.push_back(d.time);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  topogang::testing::FakeApiServer api_;
  std::unique_ptr<Emulator> emu_;
};

// 20 pods on free nodes, bound by kube-scheduler's own pods/binding POSTs: at 5 QPS with a burst
// of 1 the bindings land 0.2 s apart, 3.8 s from the first to the last (virtual time); without a
// limit they all land in well under a second. Both the spans and the token count rest on real
// time: the spans are read where the informer saw each binding, and a call takes no token of
// its own only when the loop stalled a whole token interval. At 20x (a virtual second in 50 ms)
// a loaded machine broke both: informer lags of tens of ms (spans of 3.53-3.58 s and 1.16-2.11 s)
// and stalls of over 10 ms (18 throttled calls): 3-4 runs in 1,000 with eight copies of this test
// on two cores. At 5x the same stalls are a quarter as long in virtual time, and the bounds keep
// room besides (3 s, 2 s): none in 3,200 runs, eight copies beside six busy loops.
TEST_F(ClientThrottleEndToEnd, OwnBindingsWaitForTheirTokens) {
  for (int i = 0; i < 20; ++i)
    api_.PutNode(topogang::testing::MakeNode(absl::StrCat("n", i), 8, {}));
  for (double qps : {0.0, 5.0}) {
    SCOPED_TRACE(absl::StrCat("qps ", qps));
    Start(qps, 1, /*time_scale=*/5);
    for (int i = 0; i < 20; ++i) {
      topogang::testing::PodOpts p;
      p.name = absl::StrCat(qps > 0 ? "slow-" : "fast-", i);
      api_.PutPod(topogang::testing::MakePod(p));
    }
    const std::string prefix = qps > 0 ? "slow-" : "fast-";
    // bound_at: when the emulator's informer saw spec.nodeName.
    std::vector<absl::Time> bound;
    ASSERT_TRUE(emu_->WaitFor([&] {
      bound.clear();
      for (int i = 0; i < 20; ++i) {
        auto r = emu_->Record(absl::StrCat("default/", prefix, i));
        if (!r.has_value() || r->node_name.empty()) return false;
        bound.push_back(r->bound_at);
      }
      return true;
    }));
    const absl::Duration span = *std::max_element(bound.begin(), bound.end()) -
                                *std::min_element(bound.begin(), bound.end());
    if (qps > 0) {
      EXPECT_GE(span, absl::Seconds(3));
      EXPECT_EQ(emu_->counters().throttled_calls, 19);
    } else {
      EXPECT_LT(span, absl::Seconds(2));
      EXPECT_EQ(emu_->counters().throttled_calls, 0);
    }
    emu_->Stop();
    emu_.reset();
  }
}

// 10 pods that fit nowhere: each first failure writes its PodScheduled condition, and the
// scheduling loop waits for each write's token. At 1 QPS (burst 1) the ten first attempts are
// 1 s apart, 8 s or more from the first to the last; without a limit, well under one.
TEST_F(ClientThrottleEndToEnd, TheSchedulingLoopWaitsForItsStatusWrites) {
  api_.PutNode(topogang::testing::MakeNode("small", 1, {}));
  for (double qps : {0.0, 1.0}) {
    SCOPED_TRACE(absl::StrCat("qps ", qps));
    Start(qps, 1);
    for (int i = 0; i < 10; ++i) {
      topogang::testing::PodOpts p;
      p.name = absl::StrCat(qps > 0 ? "slow-" : "fast-", i);
      p.gpus = 8;  // the only node has 1
      api_.PutPod(topogang::testing::MakePod(p));
    }
    const std::string prefix = qps > 0 ? "slow-" : "fast-";
    std::vector<absl::Time> first;
    ASSERT_TRUE(emu_->WaitFor(
        [&] {
          first = FirstAttempts(Decision::Kind::kFitError, prefix);
          return first.size() == 10;
        },
        absl::Seconds(20)));
    const absl::Duration span = first.back() - first.front();
    if (qps > 0) {
      EXPECT_GE(span, absl::Milliseconds(7500));
    } else {
      EXPECT_LT(span, absl::Seconds(1));
    }
    emu_->Stop();
    emu_.reset();
  }
}

}  // namespace
}  // namespace topogang::kubesched
