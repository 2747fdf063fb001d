// Randomized properties of the planner and the scheduling state: random clusters, occupancy,
// health and gangs. Seeds are fixed so a failure reproduces.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "scheduler/gang_scheduler.h"
#include "scheduler/planner.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

struct World {
  Cluster cluster;
  std::mt19937 rng;
};

Cluster RandomCluster(std::mt19937& rng) {
  int zones = 1 + rng() % 2, spines = 1 + rng() % 3, leaves = 1 + rng() % 3, nodes = 1 + rng() % 4;
  int gpus = std::vector<int>{1, 2, 4, 8}[rng() % 4];
  int nvl = rng() % 2 ? 0 : 1 + rng() % 2;
  std::string skus = rng() % 3 == 0 ? "[H100, A100]" : "[H100]";
  return testing::MakeCluster(zones, spines, leaves, nodes, gpus, skus, nvl);
}

void RandomizeState(Cluster& c, std::mt19937& rng) {
  double used = (rng() % 100) / 100.0;
  std::vector<int> take;
  for (int g = 0; g < c.num_gpus(); ++g) {
    if ((rng() % 1000) / 1000.0 < used) take.push_back(g);
  }
  ASSERT_TRUE(c.Allocate(take, false).ok());
  for (int g = 0; g < c.num_gpus(); ++g) {
    if (rng() % 20 == 0) c.SetGpuFaulty(g, true);
  }
  for (int n = 0; n < c.num_nodes(); ++n) {
    if (rng() % 15 == 0) c.SetNodeCordoned(n, true);
  }
}

GangSpec RandomGang(const Cluster& c, std::mt19937& rng, int id) {
  GangSpec g;
  g.name = "g" + std::to_string(id);
  g.gpus_per_member = 1 + rng() % c.max_gpus_per_node();
  g.members = 1 + rng() % 8;
  if (rng() % 3 == 0) g.required_tier = c.LevelName(rng() % c.num_levels());
  if (rng() % 4 == 0) {
    int k = 1 + rng() % 3;
    g.members = k * (1 + rng() % 3);
    int lo = g.required_tier.empty() ? 0 : c.LevelByName(g.required_tier);
    g.slice = {k, c.LevelName(lo + rng() % (c.num_levels() - lo))};
  }
  if (c.num_skus() > 1 && rng() % 2) g.sku = c.SkuName(rng() % c.num_skus());
  if (c.num_skus() > 1 && g.sku.empty() && rng() % 3 == 0) g.allow_mixed_sku = true;
  return g;
}

// Checks one placement against the gang's every constraint.
void CheckPlacement(const Cluster& c, const GangSpec& g, const Placement& p) {
  ASSERT_EQ(static_cast<int>(p.members.size()), g.members);
  std::set<int> seen;
  std::set<int> skus;
  for (const MemberPlacement& m : p.members) {
    ASSERT_EQ(static_cast<int>(m.gpus.size()), g.gpus_per_member);
    for (int gpu : m.gpus) {
      ASSERT_TRUE(seen.insert(gpu).second) << "GPU placed twice";
      ASSERT_EQ(c.GpuNode(gpu), m.node) << "member split across nodes";
      ASSERT_TRUE(c.IsFree(gpu)) << "used GPU";
      ASSERT_TRUE(c.IsHealthy(gpu)) << "unhealthy GPU";
    }
    skus.insert(c.node(m.node).sku);
  }
  if (!g.allow_mixed_sku) {
    ASSERT_EQ(skus.size(), 1u) << "SKUs mixed";
  }
  if (!g.sku.empty()) {
    ASSERT_EQ(c.SkuName(*skus.begin()), g.sku);
  }
  if (!g.required_tier.empty()) {
    int l = c.LevelByName(g.required_tier);
    std::set<int> doms;
    for (const auto& m : p.members) doms.insert(c.AncestorAt(c.NodeDomain(m.node), l));
    ASSERT_EQ(doms.size(), 1u) << "required tier violated";
  }
  if (g.slice.members > 0) {
    int l = c.LevelByName(g.slice.tier);
    for (int s = 0; s < g.members / g.slice.members; ++s) {
      std::set<int> doms;
      for (int k = 0; k < g.slice.members; ++k) {
        doms.insert(c.AncestorAt(c.NodeDomain(p.members[s * g.slice.members + k].node), l));
      }
      ASSERT_EQ(doms.size(), 1u) << "slice " << s << " split";
    }
  }
}

TEST(PlannerProperty, PlacementsHonourEveryConstraint) {
  std::mt19937 rng(12345);
  int placed = 0, refused = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    Cluster c = RandomCluster(rng);
    RandomizeState(c, rng);
    Planner planner(c);
    for (int j = 0; j < 5; ++j) {
      GangSpec g = RandomGang(c, rng, j);
      auto p = planner.Plan(g);
      if (!p.ok()) {
        ++refused;
        ASSERT_NE(p.status().message(), "") << "a refusal must say why";
        continue;
      }
      ++placed;
      ASSERT_NO_FATAL_FAILURE(CheckPlacement(c, g, *p)) << "iter " << iter << " gang " << g.name;
    }
  }
  EXPECT_GT(placed, 1000);
  EXPECT_GT(refused, 250);
}

// Completeness: without slices, when some domain of the allowed tier has room, the planner finds
// a placement (it never refuses a gang that fits).
TEST(PlannerProperty, NeverRefusesAGangThatFits) {
  std::mt19937 rng(777);
  for (int iter = 0; iter < 3000; ++iter) {
    Cluster c = RandomCluster(rng);
    RandomizeState(c, rng);
    GangSpec g = RandomGang(c, rng, iter);
    g.slice = {};
    g.allow_mixed_sku = false;
    int level = g.required_tier.empty() ? 0 : c.LevelByName(g.required_tier);
    bool fits = false;
    for (int s = 0; s < c.num_skus(); ++s) {
      if (!g.sku.empty() && c.SkuName(s) != g.sku) continue;
      for (int d = c.LevelBegin(level); d < c.LevelEnd(level); ++d) {
        fits |= c.MemberCapacity(d, s, g.gpus_per_member) >= g.members;
      }
    }
    auto p = Planner(c).Plan(g);
    ASSERT_EQ(p.ok(), fits) << "iter " << iter << ": " << p.status();
  }
}

// Random operation sequences on the scheduling state: counters stay exact, nothing is held
// twice, failed reservations change nothing, release restores the exact bitmaps.
TEST(PlannerProperty, SchedulerStateStaysConsistent) {
  std::mt19937 rng(4242);
  for (int world = 0; world < 200; ++world) {
    GangScheduler s(RandomCluster(rng), SchedulerOptions{absl::Seconds(10), world % 2 == 0});
    absl::Time now = absl::UnixEpoch();
    int next = 0;
    for (int step = 0; step < 120; ++step) {
      now += absl::Seconds(rng() % 4);
      int op = rng() % 10;
      const Cluster& c = s.cluster();
      if (op < 4) {
        BitMask before = c.free_mask();
        GangSpec g = RandomGang(c, rng, next++);
        auto r = s.Reserve(g, now);
        if (!r.ok()) {
          ASSERT_EQ(c.free_mask(), before) << "failed reserve changed state";
        } else if (rng() % 2) {
          ASSERT_TRUE(s.Commit(g.name).ok());
        }
      } else if (op < 6 && !s.gangs().empty()) {
        auto it = s.gangs().begin();
        std::advance(it, rng() % s.gangs().size());
        std::string name = it->first;
        std::vector<int> gpus = it->second.placement.Gpus();
        ASSERT_TRUE(s.Release(name).ok());
        for (int g : gpus) ASSERT_TRUE(c.IsFree(g));
      } else if (op == 6) {
        s.ExpireReservations(now);
        for (const auto& [n, rec] : s.gangs()) {
          if (rec.state == GangState::kReserved) {
            ASSERT_GT(rec.expires_at, now);
          }
        }
      } else if (op == 7) {
        s.SetNodeCordoned(rng() % c.num_nodes(), rng() % 3 != 0, now);
      } else {
        s.SetGpuFaulty(rng() % c.num_gpus(), rng() % 3 != 0, now);
      }
      ASSERT_TRUE(s.CheckInvariants().ok()) << s.CheckInvariants() << " world " << world;
      // Reservations never sit on unhealthy GPUs: they are re-planned or dropped at once.
      for (const auto& [n, rec] : s.gangs()) {
        if (rec.state != GangState::kReserved) continue;
        for (int g : rec.placement.Gpus()) {
          ASSERT_TRUE(c.IsHealthy(g)) << n;
        }
      }
    }
  }
}

}  // namespace
}  // namespace topogang
