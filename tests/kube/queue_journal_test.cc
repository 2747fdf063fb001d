// The queue journal: its text (kube/queue_arrivals.h) on good and hostile input, and the
// ConfigMap it keeps, against the fake API server (create, update, unchanged, a conflicting
// writer, a record that is not ours, an outage).
#include "kube/queue_journal.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/json_util.h"
#include "tests/support/fake_apiserver.h"

namespace topogang {
namespace {

using testing::FakeApiServer;
using Arrivals = std::map<std::string, QueueSeniority>;

const absl::Time kT0 = absl::FromUnixMillis(1764253800123);

// The arrivals alone, as most tests here look at them.
std::string EncodeArrivals(const Arrivals& a, size_t max_entries = kMaxJournalArrivals) {
  return EncodeQueueJournal(QueueMemory{a}, max_entries);
}
absl::StatusOr<Arrivals> ParseArrivals(absl::string_view text, std::vector<std::string>* warnings,
                                       size_t max_entries = kMaxJournalArrivals) {
  auto memory = ParseQueueJournal(text, warnings, max_entries);
  if (!memory.ok()) return memory.status();
  return memory->arrivals;
}

TEST(QueueArrivals, RoundTripsToTheMillisecond) {
  const Arrivals a = {{"team-a/llm", {kT0}}, {"b/x\"y", {kT0 + absl::Milliseconds(1)}}};
  const std::string text = EncodeArrivals(a);
  EXPECT_EQ(text,
            R"({"version":1,"arrivals":{"b/x\"y":1764253800124,"team-a/llm":1764253800123}})");
  std::vector<std::string> warnings;
  auto back = ParseArrivals(text, &warnings);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, a);
  EXPECT_TRUE(warnings.empty());
}

TEST(QueueArrivals, PatienceStartsRoundTripAndABareArrivalStaysANumber) {
  const Arrivals a = {{"ns/both", {kT0, kT0 + absl::Minutes(1), kT0 + absl::Minutes(2)}},
                      {"ns/plain", {kT0}},
                      {"ns/thin", {kT0, absl::InfiniteFuture(), kT0 + absl::Seconds(3)}}};
  const std::string text = EncodeArrivals(a);
  EXPECT_EQ(text, R"({"version":1,"arrivals":{"ns/both":{"at":1764253800123,)"
                  R"("could_start":1764253860123,"thin_since":1764253920123},)"
                  R"("ns/plain":1764253800123,"ns/thin":{"at":1764253800123,)"
                  R"("thin_since":1764253803123}}})");
  std::vector<std::string> warnings;
  auto back = ParseArrivals(text, &warnings);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, a);
  EXPECT_TRUE(warnings.empty());
  // Objects without a valid "at", or with a patience start that is not a time, are skipped.
  back = ParseArrivals(
      R"({"version":1,"arrivals":{"ok":{"at":1764253800123},"noat":{"could_start":1764253800123},)"
      R"("bad":{"at":1764253800123,"thin_since":"soon"},"arr":[1764253800123],"nested":{"at":{}}}})",
      &warnings);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, (Arrivals{{"ok", {kT0}}}));
  EXPECT_EQ(warnings.size(), 4u);
}

// A ConfigMap holds at most 1 MiB: long names and patience starts must not push the record past
// it (the API server would refuse every write, and seniority would be lost for all).
TEST(QueueArrivals, TheTextStaysUnderTheConfigMapLimitKeepingTheOldest) {
  Arrivals a;
  for (int i = 0; i < 5000; ++i) {
    a[absl::StrCat(std::string(400, 'n'), "/", i)] = {kT0 + absl::Seconds(i), kT0, kT0};
  }
  const std::string text = EncodeArrivals(a);
  EXPECT_LE(text.size(), kMaxJournalBytes);
  auto back = ParseArrivals(text, nullptr);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_GT(back->size(), 1000u);
  ASSERT_LT(back->size(), a.size());
  absl::Time newest_kept = absl::InfinitePast();
  for (const auto& [name, s] : *back) newest_kept = std::max(newest_kept, s.arrival);
  for (const auto& [name, s] : a) {
    EXPECT_EQ(back->contains(name), s.arrival <= newest_kept) << "not the oldest: " << name;
  }
}

TEST(QueueArrivals, KeepsTheOldestWhenThereAreTooMany) {
  const Arrivals a = {
      {"new", {kT0 + absl::Hours(1)}}, {"old", {kT0}}, {"mid", {kT0 + absl::Minutes(1)}}};
  auto back = ParseArrivals(EncodeArrivals(a, 2), nullptr);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, (Arrivals{{"old", {kT0}}, {"mid", {kT0 + absl::Minutes(1)}}}));
  std::vector<std::string> warnings;
  back = ParseArrivals(EncodeArrivals(a), &warnings, 1);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, (Arrivals{{"old", {kT0}}}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(absl::StrContains(warnings[0], "kept the oldest 1")) << warnings[0];
}

TEST(QueueArrivals, HostileTextIsAnErrorOrASkippedEntryNeverACrash) {
  for (const char* bad :
       {"", "not json", "[]", "{\"version\":2,\"arrivals\":{}}", "{\"arrivals\":{}}",
        "{\"version\":\"1\"}", "{\"version\":1,\"arrivals\":[1,2]}", "{\"version\":1e400}"}) {
    EXPECT_FALSE(ParseArrivals(bad, nullptr).ok()) << bad;
  }
  std::vector<std::string> warnings;
  const std::string long_name(600, 'x');
  auto a = ParseArrivals(
      absl::StrCat(R"({"version":1,"arrivals":{"ok":1764253800123,"":1764253800123,")", long_name,
                   R"(":1764253800123,"float":1764253800123.5,"neg":-5,"str":"1764253800123",)",
                   R"("huge":18446744073709551615,"far":99999999999999,"null":null}})"),
      &warnings);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, (Arrivals{{"ok", {kT0}}}));
  EXPECT_EQ(warnings.size(), 8u);
  EXPECT_TRUE(ParseArrivals(R"({"version":1})", nullptr)->empty()) << "no arrivals: none kept";
}

// The large gangs' last overload (QueueMemory::large_overload_seen) travels to the minute, so an
// overload that lasts does not change the record at every pass; bad values are dropped, never
// the arrivals with them.
TEST(QueueArrivals, TheLargeOverloadTravelsToTheMinuteAndABadOneIsDropped) {
  const absl::Time minute = absl::FromUnixSeconds(1764253800);  // 14:30:00 UTC
  QueueMemory m{{{"ns/a", {kT0}}}, minute + absl::Seconds(59)};
  const std::string text = EncodeQueueJournal(m);
  EXPECT_EQ(text, R"({"version":1,"large_overload_seen":1764253800000,"arrivals":{"ns/a":)"
                  R"(1764253800123}})");
  std::vector<std::string> warnings;
  auto back = ParseQueueJournal(text, &warnings);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->large_overload_seen, minute);
  EXPECT_EQ(back->arrivals, m.arrivals);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(EncodeQueueJournal(QueueMemory{m.arrivals}),
            R"({"version":1,"arrivals":{"ns/a":1764253800123}})")
      << "none remembered: no key, the text an older topogangd wrote";
  for (const char* bad : {"\"soon\"", "-5", "946684799999", "99999999999999", "1764253800000.5",
                          "null", "{}", "true"}) {
    warnings.clear();
    back = ParseQueueJournal(absl::StrCat(R"({"version":1,"large_overload_seen":)", bad,
                                          R"(,"arrivals":{"ns/a":1764253800123}})"),
                             &warnings);
    ASSERT_TRUE(back.ok()) << bad << ": " << back.status();
    EXPECT_EQ(back->large_overload_seen, absl::InfinitePast()) << bad;
    EXPECT_EQ(back->arrivals, m.arrivals) << bad;
    ASSERT_EQ(warnings.size(), 1u) << bad;
    EXPECT_TRUE(absl::StrContains(warnings[0], "large_overload_seen")) << warnings[0];
  }
}

KubeConfig Config(const FakeApiServer& api) {
  KubeConfig kc;
  kc.server = api.url();
  kc.token = "journal";
  return kc;
}

struct JournalRig {
  FakeApiServer api;
  Arrivals queue;  // what the ledger would report
  absl::Time overload_seen = absl::InfinitePast();
  QueueJournal journal{std::make_shared<KubeClient>(Config(api), absl::Seconds(5)),
                       QueueJournalOptions{.name_space = "topogang-system"}, [this] {
                         return QueueMemory{queue, overload_seen};
                       }};
  std::string Stored() {
    Json cm = api.GetConfigMap("topogang-system", "topogangd-queue");
    return cm.is_object() ? cm["data"].value("arrivals", "") : "";
  }
};

TEST(QueueJournalTest, CreatesUpdatesAndSkipsUnchangedWrites) {
  JournalRig rig;
  auto none = rig.journal.Load();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->arrivals.empty()) << "no record yet";
  EXPECT_EQ(none->large_overload_seen, absl::InfinitePast());
  rig.queue = {{"ns/a", {kT0}}};
  ASSERT_TRUE(rig.journal.Flush().ok());
  EXPECT_EQ(rig.api.configmap_requests("POST"), 1);
  EXPECT_EQ(rig.Stored(), EncodeArrivals(rig.queue));
  Json cm = rig.api.GetConfigMap("topogang-system", "topogangd-queue");
  EXPECT_EQ(cm["metadata"]["labels"]["app.kubernetes.io/component"], "queue-journal");
  ASSERT_TRUE(rig.journal.Flush().ok());
  EXPECT_EQ(rig.api.configmap_requests("PUT") + rig.api.configmap_requests("POST"), 1)
      << "an unchanged queue is not written again";
  rig.queue["ns/b"] = {kT0 + absl::Seconds(1)};
  ASSERT_TRUE(rig.journal.Flush().ok());
  EXPECT_EQ(rig.api.configmap_requests("PUT"), 1);
  EXPECT_EQ(rig.Stored(), EncodeArrivals(rig.queue));
  // A new leader reads it back.
  QueueJournal next(std::make_shared<KubeClient>(Config(rig.api), absl::Seconds(5)),
                    QueueJournalOptions{.name_space = "topogang-system"},
                    [] { return QueueMemory{}; });
  auto loaded = next.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->arrivals, rig.queue);
}

TEST(QueueJournalTest, TheLargeOverloadIsWrittenOncePerMinuteAndANewLeaderReadsIt) {
  JournalRig rig;
  rig.queue = {{"ns/a", {kT0}}};
  const absl::Time minute = absl::FromUnixSeconds(1764253800);
  rig.overload_seen = minute + absl::Seconds(5);
  ASSERT_TRUE(rig.journal.Flush().ok());
  rig.overload_seen = minute + absl::Seconds(50);  // the overload goes on, pass after pass
  ASSERT_TRUE(rig.journal.Flush().ok());
  EXPECT_EQ(rig.api.configmap_requests("PUT"), 0) << "the same minute: nothing to write";
  rig.overload_seen = minute + absl::Seconds(65);
  ASSERT_TRUE(rig.journal.Flush().ok());
  EXPECT_EQ(rig.api.configmap_requests("PUT"), 1);
  QueueJournal next(std::make_shared<KubeClient>(Config(rig.api), absl::Seconds(5)),
                    QueueJournalOptions{.name_space = "topogang-system"},
                    [] { return QueueMemory{}; });
  auto loaded = next.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->large_overload_seen, minute + absl::Minutes(1));
  EXPECT_EQ(loaded->arrivals, rig.queue);
}

TEST(QueueJournalTest, AnotherWriterConflictsOnceThenTheLeaderWritesOverIt) {
  JournalRig rig;
  rig.queue = {{"ns/a", {kT0}}};
  ASSERT_TRUE(rig.journal.Flush().ok());
  Json cm = rig.api.GetConfigMap("topogang-system", "topogangd-queue");
  cm["data"]["arrivals"] = EncodeArrivals({{"ns/other", {kT0}}});
  rig.api.SetConfigMap(cm);  // an old leader's last write, or a person's edit
  rig.queue["ns/b"] = {kT0};
  absl::Status s = rig.journal.Flush();
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "409")) << s;
  ASSERT_TRUE(rig.journal.Flush().ok()) << "re-read, then written";
  EXPECT_EQ(rig.Stored(), EncodeArrivals(rig.queue));
}

TEST(QueueJournalTest, ARecordThatIsNotOursIsAnErrorOnLoadAndIsReplaced) {
  JournalRig rig;
  for (Json data : {Json{{"arrivals", "{not json"}}, Json{{"arrivals", 42}}, Json(7),
                    Json{{"arrivals", R"({"version":9,"arrivals":{}})"}}}) {
    rig.api.SetConfigMap(
        Json{{"metadata", {{"name", "topogangd-queue"}, {"namespace", "topogang-system"}}},
             {"data", data}});
    EXPECT_FALSE(rig.journal.Load().ok()) << data.dump();
  }
  rig.queue = {{"ns/a", {kT0}}};
  ASSERT_TRUE(rig.journal.Flush().ok());
  EXPECT_EQ(rig.Stored(), EncodeArrivals(rig.queue));
  auto loaded = rig.journal.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->arrivals, rig.queue);
}

TEST(QueueJournalTest, AnOutageIsAnErrorAndTheNextWriteCatchesUp) {
  JournalRig rig;
  rig.api.SetConfigMapOutage(true);
  EXPECT_FALSE(rig.journal.Load().ok());
  rig.queue = {{"ns/a", {kT0}}};
  EXPECT_FALSE(rig.journal.Flush().ok());
  rig.api.SetConfigMapOutage(false);
  ASSERT_TRUE(rig.journal.Flush().ok());
  EXPECT_EQ(rig.Stored(), EncodeArrivals(rig.queue));
}

TEST(QueueJournalTest, StopWritesTheLastArrivalsAbandonDoesNot) {
  {
    JournalRig rig;
    rig.journal.Start();
    rig.queue = {{"ns/a", {kT0}}};  // the period (10 s) has not passed: only Stop writes it
    rig.journal.Stop();
    EXPECT_EQ(rig.Stored(), EncodeArrivals(rig.queue));
  }
  {
    JournalRig rig;
    rig.journal.Start();
    rig.queue = {{"ns/a", {kT0}}};
    rig.journal.Abandon();  // leadership lost: the new leader owns the record
    EXPECT_EQ(rig.api.configmap_requests("POST") + rig.api.configmap_requests("PUT"), 0);
    rig.journal.Stop();
    EXPECT_EQ(rig.Stored(), "") << "Stop after Abandon writes nothing either";
  }
}

}  // namespace
}  // namespace topogang
