// libFuzzer target for every file parser of the offline core (cluster, jobs, config, traces). The
// first byte picks the parser; whatever parses must also build and plan without crashing or
// breaking counters.
//   bash scripts/fuzz.sh            (clang + libFuzzer + ASan/UBSan, see docs/benchmarks.md)
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "config/config_file.h"
#include "scheduler/gang_file.h"
#include "scheduler/planner.h"
#include "sim/trace.h"
#include "topology/cluster.h"
#include "topology/cluster_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace topogang;
  if (size < 1 || size > 64 * 1024) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0: {
      auto spec = ParseClusterFile(text, "fuzz.yaml");
      if (!spec.ok() || spec->nodes.size() > 5000) break;
      TopologyConfig topo = spec->topology ? *spec->topology : *PresetTopology("topograph");
      auto c = Cluster::Build(*spec, topo);
      if (!c.ok()) break;
      if (!c->CheckInvariants().ok()) std::abort();
      GangSpec g;
      g.name = "fuzz";
      g.members = 1 + static_cast<int>(size % 7);
      g.gpus_per_member = 1 + static_cast<int>(size % 3);
      auto p = Planner(*c).Plan(g);
      if (p.ok() && !c->Allocate(p->Gpus()).ok()) std::abort();
      if (!c->CheckInvariants().ok()) std::abort();
      break;
    }
    case 1:
      (void)ParseJobsFile(text, "fuzz.yaml");
      break;
    case 3:
      (void)sim::ParseTraceCsv(text, "fuzz.csv");
      break;
    default:
      (void)ParseConfigFile(text, "fuzz.yaml");
      break;
  }
  return 0;
}
