#include "sim/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/rng.h"

namespace topogang::sim {
namespace {

struct BadCaseLike {
  std::string body;
  std::string want;
};

using ::testing::HasSubstr;

constexpr char kHeader[] =
    "id,arrival_s,members,gpus_per_member,duration_s,comm_fraction,required_tier,preferred_tier\n";

TEST(TraceCsv, ParsesJobsAndEventsSortedByTime) {
  auto t = ParseTraceCsv(absl::StrCat("# a comment\n", kHeader,
                                      "b,20,4,8,3600,0.5,,leaf\n"
                                      "\n"
                                      "a,10,1,1,60,,spine,\n"
                                      "@fail,30,node-1,600\n"
                                      "@drain,5,node-2\n"),
                         "t.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].id, "a");
  EXPECT_EQ(t->jobs[0].comm_fraction, kDefaultCommFraction);
  EXPECT_EQ(t->jobs[0].required_tier, "spine");
  EXPECT_EQ(t->jobs[0].line, 5);
  EXPECT_EQ(t->jobs[1].total_gpus(), 32);
  EXPECT_EQ(t->jobs[1].preferred_tier, "leaf");
  EXPECT_DOUBLE_EQ(t->jobs[1].comm_fraction, 0.5);
  ASSERT_EQ(t->events.size(), 2u);
  EXPECT_EQ(t->events[0].kind, NodeEvent::Kind::kDrain);
  EXPECT_EQ(t->events[0].duration_s, 0);
  EXPECT_EQ(t->events[1].node, "node-1");
  EXPECT_DOUBLE_EQ(t->events[1].duration_s, 600);
}

TEST(TraceCsv, ColumnsInAnyOrderAndOptionalOnesMissing) {
  auto t = ParseTraceCsv("members,id,duration_s,gpus_per_member,arrival_s\n2,x,100,4,7\n", "t");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->jobs[0].id, "x");
  EXPECT_EQ(t->jobs[0].members, 2);
  EXPECT_EQ(t->jobs[0].gpus_per_member, 4);
  EXPECT_EQ(t->jobs[0].arrival_s, 7);
}

TEST(TraceCsv, RoundTrips) {
  Trace t;
  TraceJob j;
  j.id = "j0";
  j.arrival_s = 12.5;
  j.members = 3;
  j.gpus_per_member = 2;
  j.duration_s = 99;
  j.comm_fraction = 0.42;
  j.preferred_tier = "leaf";
  t.jobs.push_back(j);
  NodeEvent e;
  e.time_s = 40;
  e.node = "n1";
  e.duration_s = 10;
  t.events.push_back(e);
  auto back = ParseTraceCsv(WriteTraceCsv(t), "rt");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(WriteTraceCsv(*back), WriteTraceCsv(t));
  EXPECT_DOUBLE_EQ(back->jobs[0].arrival_s, 12.5);
}

TEST(TraceCsv, ModelEstimateAndPriorityColumns) {
  auto t = ParseTraceCsv(
      "id,arrival_s,members,gpus_per_member,duration_s,sku,estimate_s,priority\n"
      "a,0,2,8,3600,A100,7200,5\n"
      "b,1,1,1,60,,,\n",
      "m.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->jobs[0].sku, "A100");
  EXPECT_DOUBLE_EQ(t->jobs[0].estimate_s, 7200);
  EXPECT_EQ(t->jobs[0].priority, 5);
  EXPECT_EQ(t->jobs[1].sku, "");
  EXPECT_DOUBLE_EQ(t->jobs[1].estimate_s, 0) << "empty: no estimate";
  EXPECT_EQ(t->jobs[1].priority, 0);
  auto back = ParseTraceCsv(WriteTraceCsv(*t), "rt");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(WriteTraceCsv(*back), WriteTraceCsv(*t));
  EXPECT_EQ(back->jobs[0].sku, "A100");
  EXPECT_EQ(back->jobs[0].priority, 5);
  const std::vector<BadCaseLike> bad = {
      {"a,0,1,1,10,H 100,,\n", "m.csv:2: sku: invalid GPU model name"},
      {"a,0,1,1,10,,-1,\n", "m.csv:2: estimate_s: -1 out of range"},
      {"a,0,1,1,10,,x,\n", "m.csv:2: estimate_s: expected a number"},
      {"a,0,1,1,10,,,high\n", "m.csv:2: priority: expected an integer"},
  };
  for (const auto& [body, want] : bad) {
    auto r = ParseTraceCsv(
        absl::StrCat("id,arrival_s,members,gpus_per_member,duration_s,sku,estimate_s,priority\n",
                     body),
        "m.csv");
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(want)) << body;
  }
}

TEST(TraceCsv, SlowNodeEvents) {
  auto t = ParseTraceCsv(
      "id,arrival_s,members,gpus_per_member,duration_s\n"
      "a,0,1,8,60\n"
      "@slow,100,n1,50\n"
      "@slow,0,n2\n",
      "s.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->events.size(), 2u);
  EXPECT_EQ(t->events[0].kind, NodeEvent::Kind::kSlow);
  EXPECT_EQ(t->events[0].node, "n2");
  EXPECT_DOUBLE_EQ(t->events[1].duration_s, 50);
  auto back = ParseTraceCsv(WriteTraceCsv(*t), "rt");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(WriteTraceCsv(*back), WriteTraceCsv(*t));
  EXPECT_EQ(back->events[1].kind, NodeEvent::Kind::kSlow);
}

TEST(TraceCsv, MinMembersColumnForElasticGangs) {
  auto t = ParseTraceCsv(
      "id,arrival_s,members,gpus_per_member,duration_s,min_members\n"
      "a,0,8,8,3600,2\n"
      "b,1,4,8,60,\n"
      "c,2,4,8,60,4\n",
      "e.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->jobs[0].min_members, 2);
  EXPECT_TRUE(t->jobs[0].elastic());
  EXPECT_EQ(t->jobs[1].min_members, 0) << "empty: rigid";
  EXPECT_FALSE(t->jobs[1].elastic());
  EXPECT_FALSE(t->jobs[2].elastic()) << "min = max: rigid";
  auto back = ParseTraceCsv(WriteTraceCsv(*t), "rt");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(WriteTraceCsv(*back), WriteTraceCsv(*t));
  EXPECT_EQ(back->jobs[0].min_members, 2);
  EXPECT_EQ(back->jobs[1].min_members, 0);
  for (const auto& [body, want] : std::vector<std::pair<std::string, std::string>>{
           {"a,0,4,8,60,5\n", "e.csv:2: min_members: 5 out of range [1, 4]"},
           {"a,0,4,8,60,0\n", "e.csv:2: min_members: 0 out of range [1, 4]"},
           {"a,0,4,8,60,x\n", "e.csv:2: min_members: expected an integer"},
       }) {
    auto r = ParseTraceCsv(
        absl::StrCat("id,arrival_s,members,gpus_per_member,duration_s,min_members\n", body),
        "e.csv");
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(want)) << body;
  }
}

struct BadCase {
  std::string body;
  std::string want;
};

TEST(TraceCsv, BadRowsNameTheLine) {
  const std::vector<BadCase> cases = {
      {"x,0,1,1,10,0.3,,\ny,abc,1,1,10,0.3,,\n", "t.csv:3: arrival_s: expected a number"},
      {"x,0,0,1,10,0.3,,\n", "t.csv:2: members: 0 out of range"},
      {"x,0,1,999,10,0.3,,\n", "t.csv:2: gpus_per_member: 999 out of range"},
      {"x,0,1,1,0,0.3,,\n", "t.csv:2: duration_s: 0 out of range"},
      {"x,-5,1,1,10,0.3,,\n", "t.csv:2: arrival_s: -5 out of range"},
      {"x,0,1,1,1e300,0.3,,\n", "t.csv:2: duration_s: 1e300 out of range"},
      {"x,0,1,1,nan,0.3,,\n", "t.csv:2: duration_s: expected a number"},
      {"x,0,1,1,10,1.5,,\n", "t.csv:2: comm_fraction: expected a number in [0, 1]"},
      {"x,0,1,1,10,0.3\n", "t.csv:2: expected 8 fields like the header, got 6"},
      {"x,0,1,1,10,0.3,,\nx,1,1,1,10,0.3,,\n", "t.csv:3: id: duplicate job id 'x'"},
      {"x y,0,1,1,10,0.3,,\n", "t.csv:2: id: invalid job id"},
      {"hold/x,0,1,1,10,0.3,,\n", "t.csv:2: id: invalid job id"},
      {"x,0,1,1,10,0.3,le af,\n", "t.csv:2: required_tier: invalid tier name"},
      {"@boom,1,n\n", "t.csv:2: unknown event '@boom'"},
      {"@fail,1\n", "t.csv:2: @fail: expected @fail,TIME_S,NODE[,DURATION_S]"},
      {"@fail,x,n1\n", "t.csv:2: time_s: expected a number"},
      {"x,0,99999999999,1,10,0.3,,\n", "t.csv:2: members: expected an integer"},
  };
  for (const BadCase& c : cases) {
    auto t = ParseTraceCsv(absl::StrCat(kHeader, c.body), "t.csv");
    ASSERT_FALSE(t.ok()) << c.body;
    EXPECT_THAT(std::string(t.status().message()), HasSubstr(c.want)) << c.body;
  }
}

TEST(TraceCsv, BadHeaders) {
  EXPECT_THAT(std::string(ParseTraceCsv("", "e.csv").status().message()),
              HasSubstr("e.csv: empty trace"));
  EXPECT_THAT(std::string(ParseTraceCsv("id,arrival_s,members\n", "h.csv").status().message()),
              HasSubstr("h.csv:1: header: missing column 'gpus_per_member'"));
  EXPECT_THAT(std::string(ParseTraceCsv("id,id\n", "h.csv").status().message()),
              HasSubstr("duplicate column 'id'"));
  EXPECT_THAT(std::string(ParseTraceCsv("id,bogus\n", "h.csv").status().message()),
              HasSubstr("unknown column 'bogus'"));
}

TEST(TraceCsv, GarbageNeverCrashes) {
  Rng rng(5);
  const std::string alphabet = "0123456789,.-e@#\n abcfilx";
  for (int i = 0; i < 2000; ++i) {
    std::string s = kHeader;
    const int len = static_cast<int>(rng.Below(200));
    for (int k = 0; k < len; ++k) s += alphabet[rng.Below(alphabet.size())];
    auto t = ParseTraceCsv(s, "g");
    if (t.ok()) {
      for (const TraceJob& j : t->jobs) {
        EXPECT_GE(j.members, 1);
        EXPECT_GT(j.duration_s, 0);
      }
    }
  }
}

}  // namespace
}  // namespace topogang::sim
