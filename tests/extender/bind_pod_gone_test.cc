// A gang whose pods the API server no longer has when its barrier opens. kube-scheduler's cache
// lags the API server, so a pod can be filtered after topogang saw it deleted; no deletion event
// will come for it then, and its binding is the first to learn it is gone.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/binder.h"
#include "k8s/pod_info.h"
#include "tests/support/service_fixture.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

using testing::GangPod;
using testing::MakePod;

// The API server no longer has the pods (deleted before their filters reached topogang, as
// kube-scheduler's cache lags the API server, so topogang saw their deletion before it saw them):
// every binding finds them gone, and no deletion event will come for them. Their GPUs must come
// back, not stay with a gang that runs nothing (found by kubesched_churn_test: a cancelled gang
// kept one GPU for good).
class GoneBinder : public Binder {
 public:
  absl::Status Bind(const PodBinding& b) override {
    return absl::NotFoundError("topogang refuses to bind pod " + b.pod_namespace + "/" +
                               b.pod_name + ": the API server has no such pod");
  }
};

// Gang `cancelled` of `size` x 1 GPU: every member filtered and sent to bind.
std::vector<std::future<std::string>> FilterAndBind(testing::ServiceFixture& f, int size) {
  std::vector<std::future<std::string>> binds;
  for (int i = 0; i < size; ++i) {
    const Json pod = MakePod(GangPod("cancelled", size, i, 1));
    binds.push_back(f.Bind(pod, f.FilterOne(pod)));
  }
  return binds;
}

// Every GPU back (the releases may run on the worker: waited for) and no gang left.
void ExpectNothingHeld(testing::ServiceFixture& f) {
  for (int i = 0; i < 500 && f.UsedGpus() > 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(f.UsedGpus(), 0);
  const GangLedger::Stats st = f.ledger.GetStats();
  EXPECT_EQ(st.running_gangs + st.reserved_gangs, 0);
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

TEST(BindPodGoneTest, AGangWhosePodsAreGoneWhenItBindsGivesItsGpusBack) {
  GoneBinder gone;
  testing::ServiceFixture f(16, absl::Seconds(30), {}, &gone);
  std::vector<std::future<std::string>> binds = FilterAndBind(f, 2);
  for (auto& b : binds) {
    ASSERT_EQ(b.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    EXPECT_NE(b.get().find("no such pod"), std::string::npos);
  }
  ExpectNothingHeld(f);
}

// Each binding waits until the test answers it: the order of answers and deletions is the
// test's.
class GatedBinder : public Binder {
 public:
  absl::Status Bind(const PodBinding& b) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.notify_all();
    arrived_.insert(b.pod_name);
    cv_.wait(lock, [&] { return answers_.contains(b.pod_name); });
    return answers_[b.pod_name];
  }
  // Blocks until the pod's binding is at the API server.
  void WaitArrived(const std::string& pod) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return arrived_.contains(pod); });
  }
  // The pod's next binding waits for a new answer.
  void Hold(const std::string& pod) {
    std::lock_guard<std::mutex> lock(mu_);
    answers_.erase(pod);
    arrived_.erase(pod);
  }
  void Answer(const std::string& pod, absl::Status st) {
    std::lock_guard<std::mutex> lock(mu_);
    answers_[pod] = std::move(st);
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> arrived_;
  std::map<std::string, absl::Status> answers_;
};

// A gang cancelled while its bindings are at the API server: some bind, some find their pod
// gone, and the watch reports deletions in between. Found by kubesched_churn_test (a 4-pod gang
// cancelled as it bound: "2 of 4 bindings failed", 2 GPUs kept for good): once one member's
// deletion was seen mid-binding, any later deletion or gone binding of a member not yet bound was
// taken for a regrouped gang's missing member and ignored: its GPUs stayed, and a member whose
// binding then succeeded counted as running with no pod.
TEST(BindPodGoneTest, AGangCancelledWhileItBindsGivesEveryGpuBack) {
  GatedBinder gate;
  testing::ServiceFixture f(16, absl::Seconds(30), {}, &gate);
  std::vector<std::future<std::string>> binds = FilterAndBind(f, 3);
  for (int i = 0; i < 3; ++i) gate.WaitArrived(absl::StrCat("cancelled-", i));
  auto done = [&](int i) {
    return binds[i].wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  };
  // The controller deletes every pod. The watch reports member 2's deletion, then member 0's,
  // whose binding the API server had accepted before, but whose answer comes only now.
  f.ledger.PodDeleted(testing::FinishedPod("cancelled-2"));
  f.ledger.PodDeleted(testing::FinishedPod("cancelled-0"));
  gate.Answer("cancelled-0", absl::OkStatus());
  ASSERT_TRUE(done(0));
  // Member 1's binding finds its pod gone; member 2's too, last.
  gate.Answer("cancelled-1", absl::NotFoundError("pods \"cancelled-1\" not found"));
  ASSERT_TRUE(done(1));
  gate.Answer("cancelled-2", absl::NotFoundError("pods \"cancelled-2\" not found"));
  ASSERT_TRUE(done(2));
  ExpectNothingHeld(f);
}

// The watch's view of `gang`'s members `from`..`to`-1 (x 4 GPUs): pending, or bound to `node`.
std::vector<PodInfo> Watched(const std::string& gang, int size, int from, int to,
                             const std::string& node = "") {
  std::vector<PodInfo> out;
  for (int i = from; i < to; ++i) {
    Json pod = MakePod(GangPod(gang, size, i, 4));
    if (!node.empty()) {
      pod["spec"]["nodeName"] = node;
      pod["status"]["phase"] = "Running";
    }
    auto info = ParsePod(pod, "nvidia.com/gpu");
    EXPECT_TRUE(info.ok()) << info.status();
    if (info.ok()) out.push_back(*info);
  }
  return out;
}

// Gang `gang` of 2 x `gpus` GPUs filtered onto `node` and sent to bind: returns once both
// bindings are at the API server, held there by `gate`; empty if the filter did not steer there.
std::vector<std::future<std::string>> BindingOn(testing::ServiceFixture& f, GatedBinder& gate,
                                                const std::string& gang, int gpus,
                                                const std::string& node) {
  std::vector<std::future<std::string>> binds;
  for (int i = 0; i < 2; ++i) {
    const Json pod = MakePod(GangPod(gang, 2, i, gpus));
    const std::vector<std::string> steered = f.FilterOffered(pod, {node}).node_names;
    if (steered != std::vector<std::string>{node}) {
      ADD_FAILURE() << gang << "-" << i << " was not steered to " << node;
      return {};
    }
    binds.push_back(f.Bind(pod, node));
  }
  for (int i = 0; i < 2; ++i) gate.WaitArrived(absl::StrCat(gang, "-", i));
  return binds;
}

// Waits until a barrier opened after decision `seq` publishes its outcome ("bind" or
// "bind-failed"): its last binding has answered and its callbacks have run.
void WaitForBindOutcome(testing::ServiceFixture& f, int64_t seq) {
  for (int64_t after = seq;;) {
    std::vector<DecisionEvent> got = f.state.WaitEvents(after, absl::Now() + absl::Seconds(20));
    ASSERT_FALSE(got.empty()) << "the bindings never reported";
    for (const DecisionEvent& e : got) {
      if (e.kind == "bind" || e.kind == "bind-failed") return;
    }
    after = got.back().seq;
  }
}

// A gang deleted whole while its bindings are at the API server, and resubmitted under the same
// name before they answer (a JobSet restart: new pods, new UIDs, the same gang label). The old
// bindings' answers belong to the old gang: before 2026-11-28 the last of them marked the new gang
// running, so its members were each bound alone as they came, with no barrier (a review finding).
TEST(BindPodGoneTest, TheOldGangsLastBindingDoesNotMarkItsResubmissionRunning) {
  GatedBinder gate;
  testing::ServiceFixture f(16, absl::Seconds(30), {}, &gate);
  std::vector<std::future<std::string>> binds = FilterAndBind(f, 2);
  for (int i = 0; i < 2; ++i) gate.WaitArrived(absl::StrCat("cancelled-", i));
  f.ledger.PodDeleted(testing::FinishedPod("cancelled-0"));
  f.ledger.PodDeleted(testing::FinishedPod("cancelled-1"));
  ASSERT_EQ(f.ledger.GetStats().reserved_gangs + f.ledger.GetStats().running_gangs, 0);
  // The new gang: one member filters (its reservation is made), the other has yet to come.
  testing::PodOpts again = GangPod("cancelled", 2, 0, 1);
  again.uid = "uid-cancelled-0-again";
  ASSERT_FALSE(f.FilterOne(MakePod(again)).empty());
  const int64_t seq = f.state.LastSeq();
  gate.Answer("cancelled-0", absl::NotFoundError("pods \"cancelled-0\" not found"));
  gate.Answer("cancelled-1", absl::NotFoundError("pods \"cancelled-1\" not found"));
  // The old gang's barrier reports its outcome once its last binding has answered.
  ASSERT_NO_FATAL_FAILURE(WaitForBindOutcome(f, seq));
  const GangLedger::Stats st = f.ledger.GetStats();
  EXPECT_EQ(st.running_gangs, 0) << "the resubmitted gang was marked running";
  EXPECT_EQ(st.reserved_gangs, 1);
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

// The node set changes while a gang's bindings are at the API server (a node joined or left in
// the same second): the gang must not be planned again, onto other GPUs, while its pods are being
// bound where they were. Here its node leaves the model. Before 2026-11-28 the gang was planned
// again on the nodes left, and its bindings' answers marked it running there: GPUs held in the
// model for pods running on a node it no longer has (a review finding).
TEST(BindPodGoneTest, AGangBeingBoundWhenTheNodeSetChangesIsNotPlannedAgain) {
  for (bool node_leaves : {true, false}) {
    SCOPED_TRACE(node_leaves ? "its node leaves" : "another node joins");
    GatedBinder gate;
    testing::ServiceFixture f(16, absl::Seconds(30), {}, &gate);
    const std::string last = f.names.back();
    std::vector<std::future<std::string>> binds = BindingOn(f, gate, "cancelled", 1, last);
    ASSERT_EQ(binds.size(), 2u);
    const int64_t seq = f.state.LastSeq();
    ASSERT_TRUE(f.ledger.Rebuild(testing::TestCluster(node_leaves ? 15 : 17), {}).ok());
    for (int i = 0; i < 2; ++i) gate.Answer(absl::StrCat("cancelled-", i), absl::OkStatus());
    for (auto& b : binds) {
      ASSERT_EQ(b.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    }
    ASSERT_NO_FATAL_FAILURE(WaitForBindOutcome(f, seq));  // the last binding has answered
    // The watch reports both pods bound there: adopted as a running gang where the node is in
    // the model, nothing held where it is not.
    for (int i = 0; i < 2; ++i) {
      Json pod = MakePod(GangPod("cancelled", 2, i, 1));
      pod["spec"]["nodeName"] = last;
      pod["status"]["phase"] = "Running";
      auto info = ParsePod(pod, "nvidia.com/gpu");
      ASSERT_TRUE(info.ok()) << info.status();
      f.ledger.ObservePod(*info);
    }
    EXPECT_EQ(f.UsedGpus(), node_leaves ? 0 : 2);
    const GangLedger::Stats st = f.ledger.GetStats();
    EXPECT_EQ(st.running_gangs, node_leaves ? 0 : 1);
    EXPECT_EQ(st.reserved_gangs, 0);
    EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
  }
}

// A member whose binding failed (the API server was briefly unavailable) is retried alone once
// its gang runs; if its pod is gone by then, that binding is the only sign of it, and its GPU
// must come back (before 2026-11-27 it was held by a running gang until a restart).
TEST(BindPodGoneTest, AMemberRetriedAloneWhosePodIsGoneGivesItsGpuBack) {
  GatedBinder gate;
  testing::ServiceFixture f(16, absl::Seconds(30), {}, &gate);
  std::vector<std::future<std::string>> binds = FilterAndBind(f, 2);
  for (int i = 0; i < 2; ++i) gate.WaitArrived(absl::StrCat("cancelled-", i));
  gate.Answer("cancelled-0", absl::OkStatus());
  gate.Answer("cancelled-1", absl::UnavailableError("the API server is restarting"));
  for (auto& b : binds) ASSERT_EQ(b.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  ASSERT_EQ(f.UsedGpus(), 2);
  // kube-scheduler retries member 1 onto its reserved node; the pod was deleted meanwhile.
  const Json pod = MakePod(GangPod("cancelled", 2, 1, 1));
  const std::string node = f.FilterOne(pod);
  gate.Answer("cancelled-1", absl::NotFoundError("pods \"cancelled-1\" not found"));
  auto retry = f.Bind(pod, node);
  ASSERT_EQ(retry.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_NE(retry.get().find("not found"), std::string::npos);
  for (int i = 0; i < 500 && f.UsedGpus() > 1; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(f.UsedGpus(), 1) << "member 0 runs; member 1's GPU is back";
  EXPECT_EQ(f.ledger.GetStats().running_gangs, 1);
}

// A member deleted (its node failed) while the gang's bindings are still at the API server, and
// its controller's replacement asks at once: it gets an Error (back after its backoff), not a
// refusal kube-scheduler parks for 5 minutes, and once the bindings are done it is placed.
// Found by SparesEndToEnd on a loaded machine (the binding answers came late).
TEST(BindPodGoneTest, AReplacementThatAsksWhileItsGangBindsIsTriedAgain) {
  GatedBinder gate;
  testing::ServiceFixture f(16, absl::Seconds(30), {}, &gate);
  std::vector<std::future<std::string>> binds = FilterAndBind(f, 2);
  for (int i = 0; i < 2; ++i) gate.WaitArrived(absl::StrCat("cancelled-", i));
  f.ledger.PodDeleted(testing::FinishedPod("cancelled-1"));
  Json replacement = MakePod(GangPod("cancelled", 2, 1, 1));
  replacement["metadata"]["name"] = "cancelled-1r";
  replacement["metadata"]["uid"] = "uid-cancelled-1r";
  ExtenderFilterResult r = f.FilterOffered(replacement, f.names);
  EXPECT_TRUE(r.node_names.empty());
  EXPECT_NE(r.error.find("is being bound"), std::string::npos)
      << r.error << (r.failed_unresolvable.empty() ? "" : r.failed_unresolvable[0].second);
  gate.Answer("cancelled-0", absl::OkStatus());
  gate.Answer("cancelled-1", absl::NotFoundError("pods \"cancelled-1\" not found"));
  for (auto& b : binds) ASSERT_EQ(b.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  // The binds have answered; the barrier's completion may still be on its way (a pool thread):
  // until then the replacement is told, as above, to come back after its backoff.
  for (int i = 0; i < 2000; ++i) {
    r = f.FilterOffered(replacement, f.names);
    if (r.error.find("is being bound") == std::string::npos) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(r.node_names.size(), 1u) << "placed next to the survivor: " << r.error;
}

// The node set changes while a gang's bindings are at the API server and before the watch reports
// any of its pods bound (its cache, which the rebuild reads, still shows them pending): their
// GPUs stay taken in the new model, so no other gang is promised them meanwhile; a binding that
// then fails gives its GPUs back, and the gang keeps the member that bound. Before 2026-11-28
// the new model showed those GPUs free until the watch caught up, and a gang that needed that
// node whole was reserved on it (kube-scheduler's own resource check then refused it there).
TEST(BindPodGoneTest, GpusWhoseBindingsAreInFlightStayTakenAcrossANodeSetChange) {
  GatedBinder gate;
  testing::ServiceFixture f(16, absl::Seconds(30), {}, &gate);
  const std::string last = f.names.back();
  std::vector<std::future<std::string>> binds = BindingOn(f, gate, "inflight", 4, last);
  ASSERT_EQ(binds.size(), 2u);
  const std::vector<PodInfo> watched = Watched("inflight", 2, 0, 2);  // the watch: pending
  const int64_t seq = f.state.LastSeq();
  ASSERT_TRUE(f.ledger.Rebuild(testing::TestCluster(17), watched).ok());
  EXPECT_EQ(f.UsedGpus(), 8) << "the node's GPUs look free while its pods are being bound there";
  const Json whole = MakePod(GangPod("whole", 1, 0, 8));
  EXPECT_TRUE(f.FilterOffered(whole, {last}).node_names.empty())
      << "a gang was promised GPUs whose bindings are at the API server";
  // kube-scheduler, whose held bind the rebuild answered, asks again: not "bound" while the
  // binding may still fail (it would then take the pod for bound, for good).
  auto again = f.Bind(MakePod(GangPod("inflight", 2, 1, 4)), last);
  ASSERT_EQ(again.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_NE(again.get().find("in progress"), std::string::npos);
  gate.Answer("inflight-0", absl::OkStatus());
  gate.Answer("inflight-1", absl::UnavailableError("the API server is restarting"));
  for (auto& b : binds) ASSERT_EQ(b.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  ASSERT_NO_FATAL_FAILURE(WaitForBindOutcome(f, seq));
  for (int i = 0; i < 500 && f.UsedGpus() > 4; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(f.UsedGpus(), 4) << "member 0 is bound; member 1's binding failed";
  // The watch reports member 0 bound: already counted, not twice.
  Json bound = MakePod(GangPod("inflight", 2, 0, 4));
  bound["spec"]["nodeName"] = last;
  bound["status"]["phase"] = "Running";
  auto info = ParsePod(bound, "nvidia.com/gpu");
  ASSERT_TRUE(info.ok()) << info.status();
  f.ledger.ObservePod(*info);
  EXPECT_EQ(f.UsedGpus(), 4);
  EXPECT_EQ(f.ledger.GetStats().running_gangs, 1);
  // Member 1, retried by kube-scheduler, is placed next to member 0 again.
  EXPECT_EQ(f.FilterOffered(MakePod(GangPod("inflight", 2, 1, 4)), f.names).node_names,
            std::vector<std::string>{last});
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

// Gang `gang` of 2 x 4 GPUs bound on `node` through the barrier.
void BindGangOn(testing::ServiceFixture& f, GatedBinder& gate, const std::string& gang,
                const std::string& node) {
  std::vector<std::future<std::string>> binds = BindingOn(f, gate, gang, 4, node);
  ASSERT_EQ(binds.size(), 2u);
  for (int i = 0; i < 2; ++i) gate.Answer(absl::StrCat(gang, "-", i), absl::OkStatus());
  for (auto& b : binds) {
    ASSERT_EQ(b.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    EXPECT_EQ(b.get(), "");
  }
  for (int i = 0; i < 500 && f.ledger.GetStats().running_gangs == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_EQ(f.ledger.GetStats().running_gangs, 1);
}

// Members bound moments before a node-set change, whose pods the watch still shows pending, keep
// their GPUs in the new model; once the watch reports them they are one gang, counted once.
TEST(BindPodGoneTest, MembersBoundBeforeTheWatchSawThemKeepTheirGpusAcrossANodeSetChange) {
  GatedBinder gate;
  testing::ServiceFixture f(16, absl::Seconds(30), {}, &gate);
  const std::string last = f.names.back();
  ASSERT_NO_FATAL_FAILURE(BindGangOn(f, gate, "early", last));
  ASSERT_TRUE(f.ledger.Rebuild(testing::TestCluster(17), Watched("early", 2, 0, 2)).ok());
  EXPECT_EQ(f.UsedGpus(), 8);
  EXPECT_TRUE(f.FilterOffered(MakePod(GangPod("whole", 1, 0, 8)), {last}).node_names.empty());
  for (const PodInfo& p : Watched("early", 2, 0, 2, last)) f.ledger.ObservePod(p);
  EXPECT_EQ(f.UsedGpus(), 8);
  EXPECT_EQ(f.ledger.GetStats().running_gangs, 1);
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

// A relist after the watch broke (a 410) sends no deletion for the pods deleted meanwhile: they
// are just not in the list, and their GPUs come back. Pods the watch saw bound are not kept from
// what topogang remembers binding (a review of the change above: they were, for good).
TEST(BindPodGoneTest, PodsMissingFromARelistGiveTheirGpusBack) {
  GatedBinder gate;
  testing::ServiceFixture f(16, absl::Seconds(30), {}, &gate);
  const std::string last = f.names.back();
  ASSERT_NO_FATAL_FAILURE(BindGangOn(f, gate, "gone", last));
  for (const PodInfo& p : Watched("gone", 2, 0, 2, last)) f.ledger.ObservePod(p);
  ASSERT_EQ(f.UsedGpus(), 8);
  ASSERT_TRUE(f.ledger.Rebuild(testing::TestCluster(16), {}).ok());
  EXPECT_EQ(f.UsedGpus(), 0);
  EXPECT_EQ(f.ledger.GetStats().running_gangs, 0);
}

// A binding the watch reported through before the rebuild, whose answer is an error after it (a
// timeout on a POST the server applied): the pod runs, and keeps its GPUs.
TEST(BindPodGoneTest, ABindingTheWatchReportedKeepsItsGpusWhateverItsLateAnswer) {
  GatedBinder gate;
  testing::ServiceFixture f(16, absl::Seconds(30), {}, &gate);
  const std::string last = f.names.back();
  std::vector<std::future<std::string>> binds = BindingOn(f, gate, "late", 4, last);
  ASSERT_EQ(binds.size(), 2u);
  const std::vector<PodInfo> bound = Watched("late", 2, 0, 2, last);
  for (const PodInfo& p : bound) f.ledger.ObservePod(p);
  const int64_t seq = f.state.LastSeq();
  ASSERT_TRUE(f.ledger.Rebuild(testing::TestCluster(17), bound).ok());
  ASSERT_EQ(f.UsedGpus(), 8);
  for (int i = 0; i < 2; ++i) {
    gate.Answer(absl::StrCat("late-", i), absl::DeadlineExceededError("client timeout"));
  }
  for (auto& b : binds) ASSERT_EQ(b.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  // Published once every binding has answered and any slot it gave back is back.
  ASSERT_NO_FATAL_FAILURE(WaitForBindOutcome(f, seq));
  EXPECT_EQ(f.UsedGpus(), 8) << "GPUs of running pods were given back";
  EXPECT_EQ(f.ledger.GetStats().running_gangs, 1);
}

// A pod adopted at a rebuild on the node its binding names, then reported by the watch on
// another node (someone else bound it; ours will fail): its GPUs are counted where it runs.
TEST(BindPodGoneTest, APinnedPodReportedOnAnotherNodeIsCountedThere) {
  GatedBinder gate;
  testing::ServiceFixture f(16, absl::Seconds(30), {}, &gate);
  const std::string last = f.names.back();
  const std::string other = f.names.front();
  std::vector<std::future<std::string>> binds = BindingOn(f, gate, "moved", 4, last);
  ASSERT_EQ(binds.size(), 2u);
  ASSERT_TRUE(f.ledger.Rebuild(testing::TestCluster(17), Watched("moved", 2, 0, 2)).ok());
  ASSERT_EQ(f.UsedGpus(), 8);
  for (const PodInfo& p : Watched("moved", 2, 0, 1, other)) f.ledger.ObservePod(p);
  EXPECT_EQ(f.UsedGpus(), 8);
  EXPECT_TRUE(f.FilterOffered(MakePod(GangPod("whole", 1, 0, 8)), {other}).node_names.empty())
      << "the pod's GPUs are still counted on the node its binding named";
  EXPECT_EQ(f.FilterOffered(MakePod(GangPod("half", 1, 0, 4)), {last}).node_names,
            std::vector<std::string>{last});
  gate.Answer("moved-0", absl::AlreadyExistsError("pod moved-0 is already bound to " + other));
  gate.Answer("moved-1", absl::OkStatus());
  for (auto& b : binds) ASSERT_EQ(b.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_EQ(f.UsedGpus(), 12) << "moved-0 on " << other << ", moved-1 and half on " << last;
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

// kube-scheduler asks again after its httpTimeout while a member's binding, retried alone once its
// gang runs, is still at the API server: it is told to retry, not sent a second binding that
// could only conflict with the first (a review finding, 2026-11-28).
TEST(BindPodGoneTest, AMemberBeingBoundAloneIsNotBoundTwiceAtOnce) {
  GatedBinder gate;
  testing::ServiceFixture f(16, absl::Seconds(30), {}, &gate);
  const std::string last = f.names.back();
  std::vector<std::future<std::string>> binds = BindingOn(f, gate, "twice", 1, last);
  ASSERT_EQ(binds.size(), 2u);
  gate.Answer("twice-0", absl::OkStatus());
  gate.Answer("twice-1", absl::UnavailableError("the API server is restarting"));
  for (auto& b : binds) ASSERT_EQ(b.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  gate.Hold("twice-1");
  const Json pod = MakePod(GangPod("twice", 2, 1, 1));
  auto first = f.Bind(pod, last);
  gate.WaitArrived("twice-1");
  auto second = f.Bind(pod, last);
  ASSERT_EQ(second.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_NE(second.get().find("in progress"), std::string::npos);
  gate.Answer("twice-1", absl::OkStatus());
  ASSERT_EQ(first.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_EQ(first.get(), "");
  EXPECT_EQ(f.UsedGpus(), 2);
}

// The same lag at filter: topogang saw both pods of gang c deleted, then kube-scheduler, its
// cache behind, filters one of them. Reserving for it would hold 16 GPUs a TTL for pods that
// never come (and, renewed by rebuilds, longer: the churn test's stall); the filter is an
// error instead, which kube-scheduler retries after its backoff, by when it has seen the
// deletion. A pod recreated under the same name (a new uid) is scheduled as usual.
TEST(BindPodGoneTest, ADeletedPodFilteredFromALaggingCacheReservesNothing) {
  testing::ServiceFixture f(4);
  for (int i = 0; i < 2; ++i) f.ledger.PodDeleted(testing::FinishedPod(absl::StrCat("c-", i)));
  const ExtenderFilterResult r =
      f.service.Filter(testing::MakeArgs(MakePod(GangPod("c", 2, 0, 8)), f.names));
  EXPECT_TRUE(r.node_names.empty());
  EXPECT_NE(r.error.find("was deleted"), std::string::npos) << r.error;
  EXPECT_EQ(f.UsedGpus(), 0);
  testing::PodOpts again = GangPod("c", 2, 0, 8);
  again.uid = "uid-c-0-recreated";
  EXPECT_FALSE(f.FilterOne(MakePod(again)).empty());
  EXPECT_EQ(f.UsedGpus(), 16);
}

}  // namespace
}  // namespace topogang
