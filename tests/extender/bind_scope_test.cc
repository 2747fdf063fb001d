// "Bind only what was asked" at the verbs: a pod of a scheduler topogang does not serve is refused
// at filter, a bind for a pod topogang never filtered is refused, and every binding carries the
// scheduler name seen at filter (the cluster binder checks it against the API server:
// tests/kube/kube_test.cc, KubeBinderTest).
#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "tests/support/service_fixture.h"

namespace topogang::testing {
namespace {

// Records what it is asked to bind.
class RecordingBinder : public Binder {
 public:
  absl::Status Bind(const PodBinding& b) override {
    std::lock_guard<std::mutex> lock(mu_);
    seen_.push_back(b);
    return absl::OkStatus();
  }
  std::vector<PodBinding> Seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  std::mutex mu_;
  std::vector<PodBinding> seen_;
};

Json WithScheduler(Json pod, const std::string& name) {
  pod["spec"]["schedulerName"] = name;
  return pod;
}

TEST(BindScope, PodOfAnotherSchedulerIsRefusedAtFilter) {
  ServiceFixture f(16);
  GangLedgerOptions o = ServiceFixture::Options(absl::Seconds(10), {});
  o.scheduler_names = {"topogang-scheduler"};
  GangLedger ledger(f.state, f.binder, o);
  ExtenderService service(ledger);
  Json theirs = WithScheduler(MakePod(GangPod("t", 2, 0, 8)), "default-scheduler");
  ExtenderFilterResult r = service.Filter(MakeArgs(theirs, f.names));
  EXPECT_NE(r.error.find("names scheduler \"default-scheduler\""), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("topogang-scheduler"), std::string::npos) << r.error;
  EXPECT_EQ(UsedGpus(f.state), 0) << "nothing reserved for it";
  Json mine = WithScheduler(MakePod(GangPod("m", 2, 0, 8)), "topogang-scheduler");
  ExtenderFilterResult ok = service.Filter(MakeArgs(mine, f.names));
  EXPECT_EQ(ok.error, "");
  EXPECT_EQ(ok.node_names.size(), 1u);
}

TEST(BindScope, BindForAPodNeverFilteredIsRefused) {
  RecordingBinder rec;
  ServiceFixture f(16, absl::Seconds(10), {}, &rec);
  Json pod = MakePod(GangPod("never", 1, 0, 8));
  auto b = f.Bind(pod, "node-0");
  ASSERT_EQ(b.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_NE(b.get().find("holds no reservation"), std::string::npos);
  EXPECT_TRUE(rec.Seen().empty());
}

TEST(BindScope, BindingsCarryTheSchedulerNameSeenAtFilter) {
  RecordingBinder rec;
  ServiceFixture f(16, absl::Seconds(10), {}, &rec);
  // A gang of two, and a pod without GPUs (passed through: topogang has no opinion on it).
  std::vector<Json> gang = {WithScheduler(MakePod(GangPod("g", 2, 0, 8)), "topogang-scheduler"),
                            WithScheduler(MakePod(GangPod("g", 2, 1, 8)), "topogang-scheduler")};
  PodOpts cpu;
  cpu.name = "cpu";
  cpu.gpus = 0;
  Json plain = WithScheduler(MakePod(cpu), "batch");
  std::vector<std::future<std::string>> binds;
  for (const Json& p : gang) binds.push_back(f.Bind(p, f.FilterOne(p)));
  ExtenderFilterResult r = f.service.Filter(MakeArgs(plain, f.names));
  ASSERT_EQ(r.error, "");
  binds.push_back(f.Bind(plain, f.names[3]));
  for (auto& b : binds) {
    ASSERT_EQ(b.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    EXPECT_EQ(b.get(), "");
  }
  std::vector<PodBinding> seen = rec.Seen();
  ASSERT_EQ(seen.size(), 3u);
  for (const PodBinding& b : seen) {
    EXPECT_EQ(b.scheduler_name, b.pod_name == "cpu" ? "batch" : "topogang-scheduler") << b.pod_name;
  }
}

}  // namespace
}  // namespace topogang::testing
