// Planner speed and model memory on the 100,000-GPU example (examples/clusters/hyperscale-100k).
//   ./build/bin/planner_bench
// Occupancy is random with a fixed seed: "nodes" fills whole nodes (what 8-GPU jobs leave
// behind), "gpus" fills single GPUs (fragmentation by small jobs; members of 1 GPU).
#include <benchmark/benchmark.h>

#include <fstream>
#include <random>
#include <string>

#include "config/loader.h"
#include "scheduler/gang_scheduler.h"
#include "scheduler/planner.h"

namespace topogang {
namespace {

const std::string kCluster =
    std::string(TOPOGANG_SOURCE_DIR) + "/examples/clusters/hyperscale-100k.yaml";

Cluster Load() {
  auto loaded = LoadClusterFiles(kCluster, "");
  if (!loaded.ok()) std::abort();
  auto c = BuildCluster(*loaded);
  if (!c.ok()) std::abort();
  return *std::move(c);
}

// Marks `percent`% of the cluster used: whole nodes or single GPUs.
void Occupy(Cluster& c, int percent, bool whole_nodes) {
  std::mt19937 rng(42);
  std::vector<int> gpus;
  if (whole_nodes) {
    for (int n = 0; n < c.num_nodes(); ++n) {
      if (static_cast<int>(rng() % 100) < percent) {
        for (int g = 0; g < c.node(n).gpus; ++g) gpus.push_back(c.node(n).gpu_begin + g);
      }
    }
  } else {
    for (int g = 0; g < c.num_gpus(); ++g) {
      if (static_cast<int>(rng() % 100) < percent) gpus.push_back(g);
    }
  }
  if (!c.Allocate(gpus).ok()) std::abort();
}

void BM_Plan(benchmark::State& state, int members, int gpus_per_member, bool whole_nodes) {
  static Cluster base = Load();
  Cluster c = base;
  Occupy(c, static_cast<int>(state.range(0)), whole_nodes);
  GangSpec g;
  g.name = "bench";
  g.members = members;
  g.gpus_per_member = gpus_per_member;
  Planner planner(c);
  bool placed = false;
  int level = -1;
  for (auto _ : state) {
    auto p = planner.Plan(g);
    placed = p.ok();
    if (placed) level = p->level;
    benchmark::DoNotOptimize(p);
  }
  state.counters["placed"] = placed;
  state.counters["level"] = level;
  state.SetLabel(placed ? "spans " + c.LevelName(level) : "no fit");
}

void BM_ReserveRelease(benchmark::State& state) {
  static Cluster base = Load();
  Cluster c = base;
  Occupy(c, static_cast<int>(state.range(0)), true);
  GangScheduler s(std::move(c));
  GangSpec g;
  g.name = "bench";
  g.members = 128;
  g.gpus_per_member = 8;
  for (auto _ : state) {
    if (!s.Reserve(g, absl::UnixEpoch()).ok()) {
      state.SkipWithError("no fit");
      break;
    }
    if (!s.Release("bench").ok()) std::abort();
  }
}

long RssKiB() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      long kib;
      in >> kib;
      return kib;
    }
  }
  return -1;
}

void BM_BuildModel100k(benchmark::State& state) {
  auto loaded = LoadClusterFiles(kCluster, "");
  if (!loaded.ok()) std::abort();
  size_t bytes = 0;
  long rss_delta = 0;
  for (auto _ : state) {
    long before = RssKiB();
    auto c = Cluster::Build(loaded->spec, loaded->topology);
    rss_delta = RssKiB() - before;
    bytes = c->MemoryBytes();
    benchmark::DoNotOptimize(c);
  }
  state.counters["model_MiB"] = static_cast<double>(bytes) / (1 << 20);
  state.counters["rss_delta_MiB"] = static_cast<double>(rss_delta) / 1024;
}

BENCHMARK_CAPTURE(BM_Plan, gang8_nodes, 1, 8, true)
    ->Arg(0)
    ->Arg(50)
    ->Arg(90)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Plan, gang256_nodes, 32, 8, true)
    ->Arg(0)
    ->Arg(50)
    ->Arg(90)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Plan, gang1024_nodes, 128, 8, true)
    ->Arg(0)
    ->Arg(50)
    ->Arg(90)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Plan, gang8_gpus, 8, 1, false)
    ->Arg(0)
    ->Arg(50)
    ->Arg(90)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Plan, gang256_gpus, 256, 1, false)
    ->Arg(0)
    ->Arg(50)
    ->Arg(90)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Plan, gang1024_gpus, 1024, 1, false)
    ->Arg(0)
    ->Arg(50)
    ->Arg(90)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReserveRelease)->Arg(0)->Arg(50)->Arg(90)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BuildModel100k)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace topogang

BENCHMARK_MAIN();
