// The PodScheduled=False condition the emulator writes after a failed attempt, as kube-scheduler
// does (pod_condition.h), and what it does to the queue: with queueing hints, the write is an
// update of the unschedulable pod itself, and a pod that no plugin rejected (only an extender)
// is worth requeuing on any event (pkg/scheduler/backend/queue/scheduling_queue.go
// isPodWorthRequeuing), so a pod refused with a new message each time is retried after every
// backoff, while one refused with the same message is written once and then waits for an event.
// Without queueing hints a status-only update never requeues (isPodUpdated drops the status).
#include "tests/kubesched/pod_condition.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/kubesched/emulator.h"
#include "tests/kubesched/fake_extender.h"
#include "tests/support/fake_apiserver.h"

namespace topogang::kubesched {
namespace {

using testing::ExtenderReply;
using testing::ExtenderRequest;
using testing::FakeExtender;
using topogang::testing::FakeApiServer;

Pod PodWithStatus(const Json& status) {
  Pod p;
  p.ns = "default";
  p.name = "p";
  p.object = {{"metadata", {{"name", "p"}}}, {"status", status}};
  return p;
}

TEST(PodScheduledFalsePatch, WrittenOnlyWhenTheConditionChanges) {
  const absl::Time t0 = absl::FromUnixSeconds(1000), t1 = absl::FromUnixSeconds(2000);
  auto first = PodScheduledFalsePatch(PodWithStatus({{"phase", "Pending"}}), "Unschedulable",
                                      "0/1 nodes are available", t0);
  ASSERT_TRUE(first.has_value());
  const Json cond = (*first)["status"]["conditions"][0];
  EXPECT_EQ(cond["type"], "PodScheduled");
  EXPECT_EQ(cond["status"], "False");
  EXPECT_EQ(cond["reason"], "Unschedulable");
  EXPECT_EQ(cond["lastTransitionTime"], "1970-01-01T00:16:40Z");
  // The pod now carries it: the same refusal writes nothing.
  const Json status = {{"phase", "Pending"}, {"conditions", Json::array({cond})}};
  EXPECT_FALSE(
      PodScheduledFalsePatch(PodWithStatus(status), "Unschedulable", "0/1 nodes are available", t1)
          .has_value());
  // A new message (or reason) is written, keeping the transition time: the status stays False.
  auto changed =
      PodScheduledFalsePatch(PodWithStatus(status), "SchedulerError", "extender timed out", t1);
  ASSERT_TRUE(changed.has_value());
  EXPECT_EQ((*changed)["status"]["conditions"][0]["lastTransitionTime"], "1970-01-01T00:16:40Z");
  EXPECT_EQ((*changed)["status"]["conditions"][0]["message"], "extender timed out");
  // PodScheduled=True before (a pod bound, then its binding undone): the transition is now.
  Json was_true = cond;
  was_true["status"] = "True";
  auto flipped = PodScheduledFalsePatch(PodWithStatus({{"conditions", Json::array({was_true})}}),
                                        "Unschedulable", "0/1 nodes are available", t1);
  ASSERT_TRUE(flipped.has_value());
  EXPECT_EQ((*flipped)["status"]["conditions"][0]["lastTransitionTime"], "1970-01-01T00:33:20Z");
}

constexpr double kScale = 50;  // 50 virtual seconds per real second

// One node; the extender refuses it, with the same message or a new one each time.
class PodConditionEndToEnd : public ::testing::Test {
 protected:
  PodConditionEndToEnd() : ext_([this](const ExtenderRequest& r) { return Answer(r); }, "/ext") {}
  ~PodConditionEndToEnd() override {
    if (emu_) emu_->Stop();
  }
  ExtenderReply Answer(const ExtenderRequest& r) {
    if (r.verb != "filter") return {404, ""};
    const int n = ++refusals_;
    const std::string why = vary_ ? absl::StrCat("no room (refusal ", n, ")") : "no room";
    return {
        200,
        Json{{"NodeNames", Json::array()}, {"FailedNodes", {{"n0", why}}}, {"Error", ""}}.dump()};
  }
  void Start(bool vary, bool write, bool hints) {
    vary_ = vary;
    api_.PutNode(topogang::testing::MakeNode("n0", 8, {}));
    EmulatorOptions o;
    o.api_server_url = api_.url();
    o.scheduler_name = "s";
    ExtenderConfig e;
    e.url_prefix = ext_.url();
    o.extenders = {e};
    o.time_scale = kScale;
    o.write_pod_conditions = write;
    o.queue.queueing_hints = hints;
    emu_ = std::make_unique<Emulator>(o);
    ASSERT_TRUE(emu_->Start().ok());
    Json pod = {{"metadata", {{"name", "p"}, {"namespace", "default"}, {"uid", "uid-p"}}},
                {"spec",
                 {{"schedulerName", "s"},
                  {"containers",
                   {{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}},
                {"status", {{"phase", "Pending"}}}};
    api_.PutPod(pod);
  }
  int Attempts() {
    auto r = emu_->Record("default/p");
    return r ? r->attempts : 0;
  }
  // 40 virtual seconds: backoffs of 1, 2, 4 and 8 s fit, the 5-minute flush does not.
  void RunFortyVirtualSeconds() { absl::SleepFor(absl::Seconds(40) / kScale); }

  FakeApiServer api_;
  FakeExtender ext_;
  std::unique_ptr<Emulator> emu_;
  std::atomic<int> refusals_{0};
  bool vary_ = false;
};

TEST_F(PodConditionEndToEnd, TheSameRefusalIsWrittenOnceAndTheNewOneRetriedOnce) {
  Start(/*vary=*/false, /*write=*/true, /*hints=*/true);
  ASSERT_TRUE(emu_->WaitFor([&] { return Attempts() >= 2; })) << Attempts();
  RunFortyVirtualSeconds();
  // First refusal: written; its own update requeues the pod (no plugin rejected it); the second
  // refusal says the same, so nothing is written and the pod waits for an event.
  EXPECT_EQ(Attempts(), 2);
  EXPECT_EQ(emu_->counters().condition_writes, 1);
  EXPECT_EQ(api_.pod_status_patches(), 1);
  const Json pod = api_.GetPod("default", "p");
  ASSERT_TRUE(pod["status"].contains("conditions")) << pod.dump();
  const Json& c = pod["status"]["conditions"][0];
  EXPECT_EQ(c["type"], "PodScheduled");
  EXPECT_EQ(c["status"], "False");
  EXPECT_EQ(c["reason"], "Unschedulable");
  EXPECT_EQ(c["message"], "0/1 nodes are available: 1 no room.");
  EXPECT_EQ(pod["status"]["phase"], "Pending") << "the patch kept the rest of the status";
}

TEST_F(PodConditionEndToEnd, ANewRefusalEachTimeIsRetriedAfterEveryBackoff) {
  Start(/*vary=*/true, /*write=*/true, /*hints=*/true);
  // Each attempt is counted when popped and its write after it fails: wait for both.
  EXPECT_TRUE(emu_->WaitFor(
      [&] { return Attempts() >= 5 && emu_->counters().condition_writes >= 5; }, absl::Seconds(10)))
      << Attempts() << " attempts, " << emu_->counters().condition_writes << " writes";
}

TEST_F(PodConditionEndToEnd, WithoutTheWriteANewRefusalWaitsForAnEvent) {
  Start(/*vary=*/true, /*write=*/false, /*hints=*/true);
  ASSERT_TRUE(emu_->WaitFor([&] { return Attempts() >= 1; })) << Attempts();
  RunFortyVirtualSeconds();
  EXPECT_EQ(Attempts(), 1);
  EXPECT_EQ(api_.pod_status_patches(), 0);
}

TEST_F(PodConditionEndToEnd, WithoutQueueingHintsTheStatusWriteRequeuesNothing) {
  Start(/*vary=*/true, /*write=*/true, /*hints=*/false);
  ASSERT_TRUE(emu_->WaitFor([&] { return api_.pod_status_patches() >= 1; })) << Attempts();
  RunFortyVirtualSeconds();
  EXPECT_EQ(Attempts(), 1);
}

}  // namespace
}  // namespace topogang::kubesched
