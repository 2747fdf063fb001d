// Runs the real `topogang simulate` and checks its output files and exit status.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/test_util.h"

namespace topogang {
namespace {

using ::testing::HasSubstr;

using testing::CliResult;
using testing::TempFile;

CliResult Topogang(const std::string& args) { return testing::RunTopogang(args); }

std::string Lab() { return testing::SourceDir() + "/examples/clusters/lab-64.yaml"; }

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(SimulateCli, GeneratedTraceEveryPolicyFilesAndSameOutputTwice) {
  const std::string dir = ::testing::TempDir() + "/simcli";
  std::filesystem::remove_all(dir);
  const std::string args =
      "simulate --cluster " + Lab() + " --generate 300 --seed 4 --failure-rate 0.5 --out " + dir;
  CliResult a = Topogang(args + "/a");
  ASSERT_EQ(a.code, 0) << a.out;
  for (const char* p :
       {"default", "gang-firstfit", "kueue-tas", "slurm-tree", "volcano-hypernode", "topogang"}) {
    EXPECT_THAT(a.out, HasSubstr(std::string("\n") + p + " ")) << p;
    EXPECT_TRUE(std::filesystem::exists(dir + "/a/jobs-" + p + ".csv")) << p;
  }
  for (const char* f : {"summary.csv", "jct-cdf.svg", "occupancy.svg"}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/a/" + f)) << f;
  }
  EXPECT_THAT(Slurp(dir + "/a/jct-cdf.svg"), HasSubstr("<polyline"));
  CliResult b = Topogang(args + "/b");
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_EQ(Slurp(dir + "/a/summary.csv"), Slurp(dir + "/b/summary.csv"));
  EXPECT_EQ(Slurp(dir + "/a/jobs-topogang.csv"), Slurp(dir + "/b/jobs-topogang.csv"));
  EXPECT_EQ(Slurp(dir + "/a/jobs-default.csv"), Slurp(dir + "/b/jobs-default.csv"));
}

TEST(SimulateCli, CommModelNetworkChangesDurationsAndPrintsClasses) {
  const std::string dir = ::testing::TempDir() + "/simcli-net";
  std::filesystem::remove_all(dir);
  const std::string base = "simulate --cluster " + Lab() + " --generate 200 --seed 6 --policy " +
                           "gang-firstfit --out " + dir;
  CliResult proxy = Topogang(base + "/proxy --comm-model proxy");
  CliResult net = Topogang(base + "/net --comm-model network");
  ASSERT_EQ(proxy.code, 0) << proxy.out;
  ASSERT_EQ(net.code, 0) << net.out;
  EXPECT_THAT(net.out, HasSubstr("by job class"));
  EXPECT_THAT(net.out, HasSubstr("multi-pod, fits a node"));
  // Same trace and seed, priced by another model: stretches and ends differ.
  EXPECT_NE(Slurp(dir + "/proxy/jobs-gang-firstfit.csv"),
            Slurp(dir + "/net/jobs-gang-firstfit.csv"));
  CliResult bad = Topogang(base + "/bad --comm-model fancy");
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.out, HasSubstr("--comm-model must be proxy or network"));
}

// --lower-bound-max-wait-256 best: the bounds are printed, each policy over them, and bound.csv
// holds both rows, the promise being the shortest longest-256+ wait of the baselines run. On this
// hand-made trace the bounds are known: two 256-GPU gangs of 100 s at 0 on 256 GPUs end at 100
// and 200 (mean 150, less at most one 10 s step per job), the second waiting 100 s under any
// policy; p95 of the durations is 100.
TEST(SimulateCli, LowerBoundsAreWrittenWithTheBestBaselinesPromise) {
  const std::string dir = ::testing::TempDir() + "/simcli-bound";
  std::filesystem::remove_all(dir);
  const std::string trace = TempFile("bound-trace.csv",
                                     "id,arrival_s,members,gpus_per_member,duration_s\n"
                                     "a,0,32,8,100\n"
                                     "b,0,32,8,100\n");
  const std::string cluster =
      TempFile("bound-cluster.yaml",
               "generate: {zones: 1, spines_per_zone: 1, leaves_per_spine: 4, nodes_per_leaf: 8, "
               "gpus_per_node: 8}\n");
  CliResult r =
      Topogang("simulate --cluster " + cluster + " --trace " + trace +
               " --policy topogang,slurm-tree --lower-bound-max-wait-256 best --out " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("p95 JCT (the durations' p95): "));
  EXPECT_THAT(r.out, HasSubstr("mean JCT, no promise: "));
  EXPECT_THAT(r.out, HasSubstr("; topogang 1."));
  const std::string csv = Slurp(dir + "/bound.csv");
  ASSERT_THAT(csv, HasSubstr("max_wait_256_s,mean_jct_lower_bound_s,p95_jct_lower_bound_s\n"));
  double w = 0, mean = 0, p95 = 0, free_mean = 0, free_p95 = 0;
  ASSERT_EQ(std::sscanf(csv.c_str(), "%*[^\n]\ninf,%lf,%lf\n%lf,%lf,%lf", &free_mean, &free_p95, &w,
                        &mean, &p95),
            5)
      << csv;
  EXPECT_DOUBLE_EQ(w, 100);  // slurm-tree's second gang waits 100 s
  EXPECT_GE(free_mean, 150 - 10);
  EXPECT_LE(free_mean, 150);
  EXPECT_DOUBLE_EQ(free_p95, 100);
  EXPECT_DOUBLE_EQ(mean, free_mean);  // a 100 s promise costs nothing here
  CliResult bad = Topogang("simulate --cluster " + Lab() + " --trace " + trace +
                           " --policy topogang --lower-bound-max-wait-256 soon");
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.out, HasSubstr("--lower-bound-max-wait-256 must be a number"));
}

// Every queue flag is checked before the run: a bad value is exit 2 with the flag's name, never
// an abort (--queue-hold-horizon-minutes once threw out of std::stod) nor a silent default
// (--queue-order and --queue-backfill-into-holds once read anything unknown as "off").
TEST(SimulateCli, BadQueueFlagValuesAreErrorsNotAbortsOrDefaults) {
  const std::string base =
      "simulate --cluster " + Lab() + " --generate 50 --seed 2 --policy topogang ";
  const std::pair<const char*, const char*> bad[] = {
      {"--queue-hold-horizon-minutes abc", "--queue-hold-horizon-minutes must be a number"},
      {"--queue-hold-horizon-minutes -5", "--queue-hold-horizon-minutes must be a number"},
      {"--queue-order biggest", "--queue-order must be arrival or smallest, got 'biggest'"},
      {"--queue-backfill-into-holds yes", "--queue-backfill-into-holds must be a number"},
      {"--queue-backfill-into-holds 2", "--queue-backfill-into-holds must be a number"},
      {"--queue-large-in-order-min-share 1.5",
       "--queue-large-in-order-min-share must be a number in [0, 1]"},
      {"--queue-large-in-order-min-share -0.1",
       "--queue-large-in-order-min-share must be a number in [0, 1]"},
      {"--queue-large-in-order-overload-backlog -1",
       "--queue-large-in-order-overload-backlog must be a number in [0, 100]"},
      {"--queue-large-in-order-overload-memory-hours 1000",
       "--queue-large-in-order-overload-memory-hours must be a number in [0, 720]"},
      {"--queue-large-in-order 1 --queue-large-in-order-overload-backlog 0.7",
       "--queue-large-in-order-overload-backlog needs --queue-large-in-order-min-share above 0"},
  };
  for (const auto& [flag, message] : bad) {
    CliResult r = Topogang(base + flag);
    EXPECT_EQ(r.code, 2) << flag << ": " << r.out;
    EXPECT_THAT(r.out, HasSubstr(message)) << flag;
  }
  for (const char* flag : {"--queue-order smallest", "--queue-order arrival",
                           "--queue-backfill-into-holds 0", "--queue-hold-horizon-minutes 30",
                           "--queue-large-in-order 1 --queue-large-in-order-min-share 0.125",
                           "--queue-large-in-order 1 --queue-large-in-order-overload-backlog 0.7 "
                           "--queue-large-in-order-min-share 0.125 "
                           "--queue-large-in-order-overload-memory-hours 24"}) {
    CliResult r = Topogang(base + flag);
    EXPECT_EQ(r.code, 0) << flag << ": " << r.out;
  }
}

TEST(SimulateCli, BindTimeIsCheckedAndDelaysEveryStart) {
  const std::string base =
      "simulate --cluster " + Lab() + " --generate 50 --seed 2 --policy topogang ";
  const std::pair<const char*, const char*> bad[] = {
      {"--bind-pods-per-s -1", "--bind-pods-per-s must be a number"},
      {"--bind-pods-per-s fast", "--bind-pods-per-s must be a number"},
      {"--bind-pods-per-s 62 --bind-retry-s 4000", "--bind-retry-s must be a number"},
      {"--bind-pods-per-s 62 --bind-retry-s -2", "--bind-retry-s must be a number"},
      {"--pods-created-per-s -20", "--pods-created-per-s must be a number"},
      {"--bind-retry-s 5", "--bind-retry-s needs --bind-pods-per-s above 0"},
  };
  for (const auto& [flag, message] : bad) {
    CliResult r = Topogang(base + flag);
    EXPECT_EQ(r.code, 2) << flag << ": " << r.out;
    EXPECT_THAT(r.out, HasSubstr(message)) << flag;
  }
  // 1 pod/s: no job starts sooner than one second per pod after it arrived.
  const std::string dir = TempFile("bind-out", "");  // removed (with what is in it) at exit
  std::filesystem::remove(dir);
  CliResult r = Topogang(base + "--bind-pods-per-s 1 --bind-retry-s 10 --out " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  std::istringstream jobs(Slurp(dir + "/jobs-topogang.csv"));
  std::string line;
  std::getline(jobs, line);
  ASSERT_THAT(line, HasSubstr("id,arrival_s,start_s,"));
  int started = 0;
  while (std::getline(jobs, line)) {
    std::istringstream f(line);
    std::string id, arrival, start, end, gpus, members;
    for (std::string* field : {&id, &arrival, &start, &end, &gpus, &members}) {
      std::getline(f, *field, ',');
    }
    if (start.empty()) continue;
    ++started;
    EXPECT_GE(std::stod(start) - std::stod(arrival), std::stod(members) - 1e-9) << line;
  }
  EXPECT_GT(started, 0);
}

TEST(SimulateCli, WrittenTraceReadsBackToTheSameResults) {
  const std::string trace = ::testing::TempDir() + "/gen.csv";
  CliResult w =
      Topogang("simulate --cluster " + Lab() + " --generate 200 --seed 9 --write-trace " + trace);
  ASSERT_EQ(w.code, 0) << w.out;
  CliResult direct = Topogang("simulate --cluster " + Lab() +
                              " --generate 200 --seed 9 --policy topogang,kueue-tas");
  CliResult read = Topogang("simulate --cluster " + Lab() + " --trace " + trace +
                            " --policy topogang,kueue-tas");
  ASSERT_EQ(direct.code, 0) << direct.out;
  ASSERT_EQ(read.code, 0) << read.out;
  // Same numbers; only the trace's name and the wall times differ.
  auto rows = [](const std::string& out) {
    std::string kept;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("topogang ", 0) == 0 || line.rfind("kueue-tas ", 0) == 0) {
        kept += line.substr(0, line.rfind("  ")) + "\n";  // drop WALL
      }
    }
    return kept;
  };
  EXPECT_FALSE(rows(read.out).empty());
  EXPECT_EQ(rows(direct.out), rows(read.out));
}

std::string ClusterFile(const std::string& name) {
  return testing::SourceDir() + "/examples/clusters/" + name + ".yaml";
}

TEST(SimulateCli, ADeadlineJustAfterNowDoesNotStallTheRun) {
  // In this run a waiting gang's locality patience ran out less than a double's step after an
  // event at t = 3,024,471.6 s: the deadline (absl::Time) converted back to that same double,
  // so topogang asked to be woken "now" again and again and the run never ended. It must end,
  // in a fraction of a second; the engine would report a policy stuck at one instant instead.
  const std::string dir = ::testing::TempDir() + "/simcli-stall";
  std::filesystem::remove_all(dir);
  CliResult r = Topogang("simulate --cluster " + ClusterFile("gb200-nvl72") +
                         " --generate 3000 --profile nvl72 --trace-failures 0.02"
                         " --correlated-failures 0.3 --seed 7 --load 0.5 --policy topogang --out " +
                         dir);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(Slurp(dir + "/summary.csv"), HasSubstr("\ntopogang,3000,"));
}

TEST(SimulateCli, GeneratorProfilesModelsEstimatesAndCorrelatedFailures) {
  const std::string nvl = ::testing::TempDir() + "/nvl.csv";
  CliResult w = Topogang("simulate --cluster " + ClusterFile("gb200-nvl72") +
                         " --generate 300 --profile nvl72 --seed 2 --trace-failures 0.2"
                         " --correlated-failures 1 --write-trace " +
                         nvl);
  ASSERT_EQ(w.code, 0) << w.out;
  const std::string text = Slurp(nvl);
  EXPECT_THAT(text, HasSubstr(",4,"));       // trays of 4 GPUs
  EXPECT_THAT(text, HasSubstr(",nvlink,"));  // gangs ask for their NVLink domain
  EXPECT_THAT(text, HasSubstr("--correlated-failures 1"));
  // A correlated failure takes a whole rack (18 trays) down at once.
  std::map<std::string, int> per_time;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("@fail,", 0) == 0) ++per_time[line.substr(6, line.find(',', 6) - 6)];
  }
  ASSERT_FALSE(per_time.empty());
  for (const auto& [t, n] : per_time) EXPECT_EQ(n % 18, 0) << t;
  // Mixed models: every job names one.
  const std::string mixed = ::testing::TempDir() + "/mixed.csv";
  w = Topogang("simulate --cluster " + ClusterFile("mixed-h100-a100") +
               " --generate 200 --profile llm --seed 3 --write-trace " + mixed);
  ASSERT_EQ(w.code, 0) << w.out;
  EXPECT_THAT(Slurp(mixed), HasSubstr(",A100,"));
  EXPECT_THAT(Slurp(mixed), HasSubstr(",H100,"));
  // The same trace under exact and no estimates runs; a bad mode or an NVLink profile on a
  // cluster without NVLink domains does not.
  for (const char* e : {"exact", "none", "trace"}) {
    CliResult r = Topogang("simulate --cluster " + ClusterFile("mixed-h100-a100") + " --trace " +
                           mixed + " --policy slurm-tree-best,topogang --estimates " + e);
    EXPECT_EQ(r.code, 0) << e << r.out;
  }
  CliResult r = Topogang("simulate --cluster " + Lab() + " --generate 10 --estimates psychic");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("--estimates must be trace, exact or none"));
  r = Topogang("simulate --cluster " + Lab() + " --generate 10 --profile nvl72");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("needs a cluster with an NVLink tier"));
}

TEST(SimulateCli, SeedChangesAGeneratedTrace) {
  const std::string a = ::testing::TempDir() + "/s1.csv", b = ::testing::TempDir() + "/s2.csv";
  ASSERT_EQ(
      Topogang("simulate --cluster " + Lab() + " --generate 100 --seed 1 --write-trace " + a).code,
      0);
  ASSERT_EQ(
      Topogang("simulate --cluster " + Lab() + " --generate 100 --seed 2 --write-trace " + b).code,
      0);
  EXPECT_NE(Slurp(a), Slurp(b));
}

TEST(SimulateCli, BadInputExitsTwoWithTheLine) {
  const std::string bad = TempFile(
      "bad.csv", "id,arrival_s,members,gpus_per_member,duration_s\nx,0,1,1,10\ny,0,1,1,ten\n");
  CliResult r = Topogang("simulate --cluster " + Lab() + " --trace " + bad);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("bad.csv:3: duration_s: expected a number, got 'ten'"));
  r = Topogang("simulate --cluster " + Lab() + " --trace " + bad + " --policy nope");
  EXPECT_EQ(r.code, 2);
  r = Topogang("simulate --cluster " + Lab() + " --generate 10 --policy bogus");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("unknown policy 'bogus'"));
  r = Topogang("simulate --cluster " + Lab());
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("exactly one of --trace, --generate"));
  r = Topogang("simulate --cluster " + Lab() + " --generate 10 --load -3");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("--load must be a number"));
  r = Topogang("simulate --cluster /nonexistent.yaml --generate 10");
  EXPECT_EQ(r.code, 2);
}

}  // namespace
}  // namespace topogang
