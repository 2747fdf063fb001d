// The agent's slowness sampler: counter rises over a period above a threshold become events, a
// reset counter is no burst, throttling is reported when it starts.
#include "agent/slowness_sampler.h"

#include <gtest/gtest.h>

namespace topogang::agent {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

std::vector<GpuEventKind> Kinds(const std::vector<GpuEventInfo>& v) {
  std::vector<GpuEventKind> out;
  for (const GpuEventInfo& e : v) out.push_back(e.kind);
  return out;
}

TEST(SlownessSampler, BurstsAboveTheThresholdBecomeEvents) {
  SlownessSampler s;  // 60 s period, 10 ECC errors, 100 replays
  EXPECT_TRUE(s.Due(0, kT0));
  EXPECT_TRUE(s.Sample(0, {100, 1000, false}, kT0).empty()) << "the first sample is a baseline";
  EXPECT_FALSE(s.Due(0, kT0 + absl::Seconds(59)));
  EXPECT_TRUE(s.Due(0, kT0 + absl::Seconds(60)));
  // 9 errors and 99 replays: below both thresholds.
  EXPECT_TRUE(s.Sample(0, {109, 1099, false}, kT0 + absl::Seconds(60)).empty());
  auto ev = s.Sample(0, {119, 1199, false}, kT0 + absl::Seconds(120));
  EXPECT_EQ(Kinds(ev), (std::vector<GpuEventKind>{GpuEventKind::kEccCorrectableBurst,
                                                  GpuEventKind::kLinkReplay}));
  EXPECT_EQ(ev[0].gpu_index, 0);
  EXPECT_NE(ev[0].detail.find("10 correctable ECC errors"), std::string::npos) << ev[0].detail;
  // GPUs are independent.
  EXPECT_TRUE(s.Sample(1, {0, 0, false}, kT0 + absl::Seconds(120)).empty());
}

TEST(SlownessSampler, ResetCountersAndUnknownCountersAreNoBurst) {
  SlownessSampler s;
  s.Sample(0, {500, 5000, false}, kT0);
  // A GPU reset zeroes the volatile counters: no rise, and the new value is the baseline.
  EXPECT_TRUE(s.Sample(0, {0, 0, false}, kT0 + absl::Minutes(1)).empty());
  EXPECT_EQ(Kinds(s.Sample(0, {20, 0, false}, kT0 + absl::Minutes(2))),
            std::vector<GpuEventKind>{GpuEventKind::kEccCorrectableBurst});
  // ECC disabled (NVML: not supported) is unknown, never a burst.
  EXPECT_TRUE(s.Sample(0, {std::nullopt, std::nullopt, false}, kT0 + absl::Minutes(3)).empty());
  EXPECT_TRUE(s.Sample(0, {1000, std::nullopt, false}, kT0 + absl::Minutes(4)).empty());
}

TEST(SlownessSampler, ThrottlingIsReportedWhenItStarts) {
  SlownessSampler s;
  EXPECT_EQ(Kinds(s.Sample(0, {{}, {}, true}, kT0)),
            std::vector<GpuEventKind>{GpuEventKind::kClockThrottle});
  EXPECT_TRUE(s.Sample(0, {{}, {}, true}, kT0 + absl::Minutes(1)).empty()) << "still throttled";
  EXPECT_TRUE(s.Sample(0, {{}, {}, false}, kT0 + absl::Minutes(2)).empty());
  EXPECT_EQ(s.Sample(0, {{}, {}, true}, kT0 + absl::Minutes(3)).size(), 1u) << "again";
}

}  // namespace
}  // namespace topogang::agent
