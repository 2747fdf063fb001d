// topogang.io/runtime-estimate and spec.activeDeadlineSeconds (k8s/runtime_estimate.h).
#include "k8s/runtime_estimate.h"

#include <gtest/gtest.h>

#include "common/json_util.h"
#include "k8s/pod_info.h"

namespace topogang {
namespace {

using Map = std::map<std::string, std::string>;

absl::StatusOr<absl::Duration> Parse(const Map& labels, const Map& annotations,
                                     int64_t deadline = 0) {
  return ParseRuntimeEstimate(labels, annotations, deadline);
}

TEST(RuntimeEstimate, NoneWhenNothingIsSaid) {
  auto d = Parse({}, {});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, absl::ZeroDuration());
}

TEST(RuntimeEstimate, GoDurationsInALabelOrAnAnnotation) {
  EXPECT_EQ(*Parse({}, {{kRuntimeEstimateKey, "45m"}}), absl::Minutes(45));
  EXPECT_EQ(*Parse({{kRuntimeEstimateKey, "4h"}}, {}), absl::Hours(4));
  EXPECT_EQ(*Parse({}, {{kRuntimeEstimateKey, " 1h30m "}}), absl::Minutes(90));
  EXPECT_EQ(*Parse({}, {{kRuntimeEstimateKey, "1.5h"}}), absl::Minutes(90));
  // Both set and equal is fine.
  EXPECT_EQ(*Parse({{kRuntimeEstimateKey, "2h"}}, {{kRuntimeEstimateKey, "2h"}}), absl::Hours(2));
}

TEST(RuntimeEstimate, MalformedOrAbsurdValuesAreClearErrors) {
  for (const char* bad : {"", "soon", "3600", "-1h", "0s", "9000h", "inf", "1h-"}) {
    auto d = Parse({}, {{kRuntimeEstimateKey, bad}});
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(d.status().message().find(kRuntimeEstimateKey), std::string::npos) << bad;
  }
  auto d = Parse({}, {{kRuntimeEstimateKey, "3600"}});
  EXPECT_NE(d.status().message().find("such as 45m"), std::string::npos) << d.status();
  d = Parse({}, {{kRuntimeEstimateKey, "9000h"}});
  EXPECT_NE(d.status().message().find("more than 0 and at most 366 days"), std::string::npos)
      << d.status();
  auto both = Parse({{kRuntimeEstimateKey, "2h"}}, {{kRuntimeEstimateKey, "3h"}});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("disagree"), std::string::npos) << both.status();
}

TEST(RuntimeEstimate, ActiveDeadlineIsALimitTheEstimateCannotExceed) {
  EXPECT_EQ(*Parse({}, {}, 7200), absl::Hours(2));
  EXPECT_EQ(*Parse({}, {{kRuntimeEstimateKey, "1h"}}, 7200), absl::Hours(1));
  EXPECT_EQ(*Parse({}, {{kRuntimeEstimateKey, "5h"}}, 7200), absl::Hours(2));
  // A deadline longer than the sanity bound is capped, not refused (the API server allows it).
  EXPECT_EQ(*Parse({}, {}, int64_t{1} << 40), kMaxRuntimeEstimate);
}

TEST(RuntimeEstimate, ParsePodReadsActiveDeadlineSeconds) {
  Json pod = Json::parse(R"({"metadata":{"name":"p","namespace":"ns"},
      "spec":{"activeDeadlineSeconds":5400,"containers":[{"name":"c",
      "resources":{"limits":{"nvidia.com/gpu":"2"}}}]},"status":{}})");
  auto p = ParsePod(pod, "nvidia.com/gpu");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->active_deadline_seconds, 5400);
  EXPECT_EQ(*ParseRuntimeEstimate(p->labels, p->annotations, p->active_deadline_seconds),
            absl::Minutes(90));
  // Absent, null or non-positive: no limit, and the pod still parses (it may be running).
  pod["spec"]["activeDeadlineSeconds"] = nullptr;
  EXPECT_EQ(ParsePod(pod, "nvidia.com/gpu")->active_deadline_seconds, 0);
  pod["spec"]["activeDeadlineSeconds"] = -5;
  EXPECT_EQ(ParsePod(pod, "nvidia.com/gpu")->active_deadline_seconds, 0);
  pod["spec"].erase("activeDeadlineSeconds");
  EXPECT_EQ(ParsePod(pod, "nvidia.com/gpu")->active_deadline_seconds, 0);
  // A wrong type is a clear error, like any malformed field.
  pod["spec"]["activeDeadlineSeconds"] = "soon";
  auto bad = ParsePod(pod, "nvidia.com/gpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("activeDeadlineSeconds"), std::string::npos);
}

}  // namespace
}  // namespace topogang
