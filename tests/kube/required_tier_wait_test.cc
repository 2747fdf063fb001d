// topogang.io/required-tier-max-wait (k8s/gang_labels.h): how long a gang's required tier binds.
#include <gtest/gtest.h>

#include "k8s/gang_labels.h"

namespace topogang {
namespace {

using Map = std::map<std::string, std::string>;

absl::StatusOr<std::optional<GangMembership>> Parse(Map annotations, bool with_tier = true) {
  annotations["topogang.io/gang"] = "train";
  annotations["topogang.io/gang-size"] = "4";
  if (with_tier) annotations["topogang.io/required-tier"] = "spine";
  return ParseGangMembership("ns", {}, annotations);
}

TEST(RequiredTierMaxWaitKey, AGoDurationReachesTheSpec) {
  auto g = Parse({{kRequiredTierMaxWaitKey, "5m"}});
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(g->has_value());
  const GangSpec spec = (*g)->ToSpec(8);
  EXPECT_EQ(spec.required_tier, "spine");
  EXPECT_EQ(spec.required_tier_max_wait, absl::Minutes(5));
  EXPECT_EQ((*Parse({{kRequiredTierMaxWaitKey, "1h30m"}}))->required_tier_max_wait,
            absl::Minutes(90));
  EXPECT_EQ((*Parse({{kRequiredTierMaxWaitKey, "0s"}}))->required_tier_max_wait,
            absl::ZeroDuration())
      << "zero: the tier is only preferred";
  EXPECT_EQ((*Parse({{kRequiredTierMaxWaitKey, " 90s "}}))->required_tier_max_wait,
            absl::Seconds(90));
}

TEST(RequiredTierMaxWaitKey, UnsetTheRequirementNeverLapses) {
  auto g = Parse({});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->ToSpec(8).required_tier_max_wait, absl::InfiniteDuration());
}

TEST(RequiredTierMaxWaitKey, MistakesAreClearErrors) {
  struct Case {
    Map annotations;
    bool with_tier;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{{kRequiredTierMaxWaitKey, "5m"}}, false, "needs a required tier"},
      {{{kRequiredTierMaxWaitKey, "300"}}, true, "such as 45m"},  // seconds or minutes?
      {{{kRequiredTierMaxWaitKey, "soon"}}, true, "such as 45m"},
      {{{kRequiredTierMaxWaitKey, "inf"}}, true, "such as 45m"},
      {{{kRequiredTierMaxWaitKey, "-5m"}}, true, "at least 0"},
      {{{kRequiredTierMaxWaitKey, "200h"}}, true, "at most 7 days"},
      {{{kRequiredTierMaxWaitKey, "99999999999h"}}, true, "at most 7 days"},
      {{{kRequiredTierMaxWaitKey, "99999999999999999999h"}}, true, "such as 45m"},  // overflows
      {{{kRequiredTierMaxWaitKey, "1e9s"}}, true, "such as 45m"},
      {{{kRequiredTierMaxWaitKey, "5 m"}}, true, "such as 45m"},
  };
  for (const Case& c : cases) {
    auto g = Parse(c.annotations, c.with_tier);
    ASSERT_FALSE(g.ok()) << c.annotations.begin()->second;
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(g.status().message().find(c.says), std::string::npos) << g.status();
    EXPECT_NE(g.status().message().find(kRequiredTierMaxWaitKey), std::string::npos) << g.status();
  }
  // A label and an annotation that disagree.
  auto both = ParseGangMembership("ns", {{kRequiredTierMaxWaitKey, "5m"}},
                                  {{"topogang.io/gang", "train"},
                                   {"topogang.io/gang-size", "4"},
                                   {"topogang.io/required-tier", "spine"},
                                   {kRequiredTierMaxWaitKey, "10m"}});
  EXPECT_FALSE(both.ok());
}

}  // namespace
}  // namespace topogang
