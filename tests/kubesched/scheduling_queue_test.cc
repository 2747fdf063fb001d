// The scheduling queue on a FakeClock: ordering, backoff growth and cap, the unschedulable pool
// and its flush, cluster events, in-flight events, and the hint-less (v1.31) rules.
#include "tests/kubesched/scheduling_queue.h"

#include <gtest/gtest.h>

#include <thread>

#include "tests/kubesched/node_filters.h"

namespace topogang::kubesched {
namespace {

PodPtr MakePod(const std::string& name, int priority = 0, const std::string& extra = "{}") {
  Json spec = Json::parse(extra);
  spec["priority"] = priority;
  spec["containers"] = Json::array();
  return *ParsePod({{"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "uid-" + name}}},
                    {"spec", spec}});
}

NodePtr MakeNode(const std::string& name, const std::string& labels = "{}") {
  return *ParseNode({{"metadata", {{"name", name}, {"labels", Json::parse(labels)}}},
                     {"status", {{"allocatable", {{"cpu", "8"}, {"pods", "110"}}}}}},
                    110);
}

class QueueTest : public ::testing::Test {
 protected:
  explicit QueueTest(QueueOptions o = {}) : queue_(&clock_, o) {}

  // Pops the only pod there is and fails it with `rejectors` (none: an error).
  QueueName PopAndFail(const std::set<std::string>& rejectors = {}) {
    std::optional<QueuedPodInfo> info = queue_.Pop();
    EXPECT_TRUE(info.has_value());
    info->unschedulable_plugins = rejectors;
    return queue_.AddUnschedulableIfNotPresent(*info, queue_.SchedulingCycle());
  }

  FakeClock clock_;
  SchedulingQueue queue_;
};

TEST_F(QueueTest, PopsByPriorityThenArrival) {
  queue_.Add(MakePod("low", 0));
  clock_.Advance(absl::Milliseconds(1));
  queue_.Add(MakePod("high", 10));
  clock_.Advance(absl::Milliseconds(1));
  queue_.Add(MakePod("mid", 5));
  clock_.Advance(absl::Milliseconds(1));
  queue_.Add(MakePod("high2", 10));
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) order.push_back(queue_.Pop()->pod->name);
  EXPECT_EQ(order, (std::vector<std::string>{"high", "high2", "mid", "low"}));
  EXPECT_EQ(queue_.SchedulingCycle(), 4);
}

TEST_F(QueueTest, BackoffDoublesFromOneSecondAndStopsAtTen) {
  EXPECT_EQ(queue_.BackoffDuration(0), absl::ZeroDuration());
  EXPECT_EQ(queue_.BackoffDuration(1), absl::Seconds(1));
  EXPECT_EQ(queue_.BackoffDuration(2), absl::Seconds(2));
  EXPECT_EQ(queue_.BackoffDuration(3), absl::Seconds(4));
  EXPECT_EQ(queue_.BackoffDuration(4), absl::Seconds(8));
  EXPECT_EQ(queue_.BackoffDuration(5), absl::Seconds(10));
  EXPECT_EQ(queue_.BackoffDuration(50), absl::Seconds(10));

  // A failed pod (an error: no rejecting plugin) waits out each backoff in backoffQ.
  queue_.Add(MakePod("p"));
  for (int attempt = 1; attempt <= 6; ++attempt) {
    ASSERT_EQ(PopAndFail(), QueueName::kBackoff) << attempt;
    EXPECT_EQ(queue_.Get("ns/p")->consecutive_errors, attempt);
    const absl::Duration want = std::min(absl::Seconds(1 << (attempt - 1)), absl::Seconds(10));
    clock_.Advance(want - absl::Milliseconds(1));
    queue_.FlushBackoffQCompleted();
    EXPECT_EQ(queue_.Where("ns/p"), QueueName::kBackoff) << attempt;
    clock_.Advance(absl::Milliseconds(2));
    queue_.FlushBackoffQCompleted();
    EXPECT_EQ(queue_.Where("ns/p"), QueueName::kActive) << attempt;
  }
}

TEST_F(QueueTest, RejectedPodWaitsInUnschedulableUntilTheLeftoverFlush) {
  queue_.Add(MakePod("p"));
  ASSERT_EQ(PopAndFail({kNodeAffinity}), QueueName::kUnschedulable);
  EXPECT_EQ(queue_.Get("ns/p")->unschedulable_count, 1);
  clock_.Advance(absl::Minutes(5));
  queue_.FlushUnschedulablePodsLeftover();
  EXPECT_EQ(queue_.Where("ns/p"), QueueName::kUnschedulable);  // not longer than 5 min yet
  clock_.Advance(absl::Seconds(1));
  queue_.FlushUnschedulablePodsLeftover();
  EXPECT_EQ(queue_.Where("ns/p"), QueueName::kActive);  // backoff long over: straight to activeQ
}

TEST_F(QueueTest, ClusterEventsMoveOnlyPodsTheyMayHelp) {
  queue_.Add(MakePod("p", 0, R"({"nodeSelector": {"spine": "s1"}})"));
  ASSERT_EQ(PopAndFail({kNodeAffinity}), QueueName::kUnschedulable);
  queue_.MoveAllToActiveOrBackoffQueue(NodeAddEvent(MakeNode("n0", R"({"spine": "s0"})")));
  EXPECT_EQ(queue_.Where("ns/p"), QueueName::kUnschedulable);
  queue_.MoveAllToActiveOrBackoffQueue(NodeAddEvent(MakeNode("n1", R"({"spine": "s1"})")));
  EXPECT_EQ(queue_.Where("ns/p"), QueueName::kBackoff);  // still inside its 1 s backoff
  clock_.Advance(absl::Seconds(2));
  queue_.FlushBackoffQCompleted();
  EXPECT_EQ(queue_.Where("ns/p"), QueueName::kActive);
}

TEST_F(QueueTest, AnEventWhileInFlightSendsARejectedPodToBackoff) {
  queue_.Add(MakePod("p", 0, R"({"nodeSelector": {"spine": "s1"}})"));
  queue_.Add(MakePod("q", 0, R"({"nodeSelector": {"spine": "s1"}})"));
  // p: a matching node appears while p is being scheduled.
  std::optional<QueuedPodInfo> p = queue_.Pop();
  EXPECT_EQ(queue_.Where("ns/p"), QueueName::kInFlight);
  queue_.MoveAllToActiveOrBackoffQueue(NodeAddEvent(MakeNode("n1", R"({"spine": "s1"})")));
  p->unschedulable_plugins = {kNodeAffinity};
  EXPECT_EQ(queue_.AddUnschedulableIfNotPresent(*p, queue_.SchedulingCycle()), QueueName::kBackoff);
  // q: popped after that event, so it does not count for q.
  std::optional<QueuedPodInfo> q = queue_.Pop();
  q->unschedulable_plugins = {kNodeAffinity};
  EXPECT_EQ(queue_.AddUnschedulableIfNotPresent(*q, queue_.SchedulingCycle()),
            QueueName::kUnschedulable);
}

TEST_F(QueueTest, PodsRejectedByTheExtenderComeBackOnAnyEvent) {
  queue_.Add(MakePod("p"));
  ASSERT_EQ(PopAndFail({kExtenderPlugin}), QueueName::kUnschedulable);
  PodPtr bound = MakePod("other", 0, R"({"nodeName": "n1"})");
  queue_.MoveAllToActiveOrBackoffQueue(AssignedPodAddEvent(bound));
  EXPECT_EQ(queue_.Where("ns/p"), QueueName::kBackoff);
  // While in flight, an assigned pod appearing sends it to backoff, not to the pool.
  clock_.Advance(absl::Seconds(1));
  queue_.FlushBackoffQCompleted();
  std::optional<QueuedPodInfo> p = queue_.Pop();
  queue_.MoveAllToActiveOrBackoffQueue(AssignedPodAddEvent(bound));
  p->unschedulable_plugins = {kExtenderPlugin};
  EXPECT_EQ(queue_.AddUnschedulableIfNotPresent(*p, queue_.SchedulingCycle()), QueueName::kBackoff);
}

TEST_F(QueueTest, UpdatesDeletesAndDuplicates) {
  queue_.Add(MakePod("p", 0, R"({"tolerations": []})"));
  std::optional<QueuedPodInfo> p = queue_.Pop();
  p->unschedulable_plugins = {kTaintToleration};
  ASSERT_EQ(queue_.AddUnschedulableIfNotPresent(*p, queue_.SchedulingCycle()),
            QueueName::kUnschedulable);
  // A second requeue of the same pod is refused.
  EXPECT_EQ(queue_.AddUnschedulableIfNotPresent(*p, queue_.SchedulingCycle()), QueueName::kNone);
  // The pod gains a toleration: TaintToleration's hint requeues it.
  PodPtr updated = MakePod("p", 0, R"({"tolerations": [{"operator": "Exists"}]})");
  queue_.Update(p->pod, updated);
  EXPECT_EQ(queue_.Where("ns/p"), QueueName::kBackoff);
  EXPECT_EQ(queue_.Get("ns/p")->pod, updated);
  queue_.Delete(*updated);
  EXPECT_EQ(queue_.Where("ns/p"), QueueName::kNone);
  EXPECT_EQ(queue_.Size(QueueName::kBackoff), 0u);
  // An update for a pod the queue does not hold adds it.
  queue_.Update(updated, updated);
  EXPECT_EQ(queue_.Where("ns/p"), QueueName::kActive);
}

TEST_F(QueueTest, PopBlocksUntilAPodArrivesAndCloseReleasesIt) {
  std::thread adder([&] {
    absl::SleepFor(absl::Milliseconds(20));
    queue_.Add(MakePod("late"));
  });
  std::optional<QueuedPodInfo> info = queue_.Pop();
  adder.join();
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->pod->name, "late");
  EXPECT_EQ(info->attempts, 1);
  std::thread closer([&] {
    absl::SleepFor(absl::Milliseconds(20));
    queue_.Close();
  });
  EXPECT_FALSE(queue_.Pop().has_value());
  closer.join();
}

class NoHintsQueueTest : public QueueTest {
 protected:
  NoHintsQueueTest() : QueueTest(QueueOptions{.queueing_hints = false}) {}
};

TEST_F(NoHintsQueueTest, AMoveRequestDuringTheCycleSendsThePodToBackoff) {
  queue_.Add(MakePod("p"));
  queue_.Add(MakePod("q"));
  std::optional<QueuedPodInfo> p = queue_.Pop();
  // Any move request (even one that moves nothing) marks the cycle.
  queue_.MoveAllToActiveOrBackoffQueue(NodeAddEvent(MakeNode("n")));
  p->unschedulable_plugins = {kNodeAffinity};
  EXPECT_EQ(queue_.AddUnschedulableIfNotPresent(*p, queue_.SchedulingCycle()), QueueName::kBackoff);
  std::optional<QueuedPodInfo> q = queue_.Pop();
  q->unschedulable_plugins = {kNodeAffinity};
  EXPECT_EQ(queue_.AddUnschedulableIfNotPresent(*q, queue_.SchedulingCycle()),
            QueueName::kUnschedulable);
  // Without hints any registered event moves it (NodeAffinity registered Node/Add).
  queue_.MoveAllToActiveOrBackoffQueue(NodeAddEvent(MakeNode("m")));
  EXPECT_EQ(queue_.Where("ns/q"), QueueName::kBackoff);
}

class PopFromBackoffTest : public QueueTest {
 protected:
  PopFromBackoffTest() : QueueTest(QueueOptions{.pop_from_backoff_q = true}) {}
};

TEST_F(PopFromBackoffTest, AnIdleActiveQTakesFromBackoff) {
  queue_.Add(MakePod("p"));
  ASSERT_EQ(PopAndFail(), QueueName::kBackoff);
  std::optional<QueuedPodInfo> info = queue_.Pop();  // activeQ empty: no waiting
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->attempts, 2);
  // Expiry is truncated to whole seconds.
  QueuedPodInfo q = *info;
  q.timestamp = absl::FromUnixMillis(1800000000500);
  q.attempts = 1;
  EXPECT_EQ(queue_.BackoffExpiry(q), absl::FromUnixSeconds(1800000001));
}

}  // namespace
}  // namespace topogang::kubesched
