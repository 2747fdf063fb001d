#include "config/loader.h"

#include "common/file_util.h"
#include "topology/cluster_file.h"
#include "topology/label_family.h"

namespace topogang {

absl::StatusOr<LoadedCluster> LoadClusterFiles(const std::string& cluster_path,
                                               const std::string& config_path) {
  LoadedCluster out;
  if (!config_path.empty()) {
    auto text = ReadFileToString(config_path);
    if (!text.ok()) return text.status();
    auto cfg = ParseConfigFile(*text, config_path);
    if (!cfg.ok()) return cfg.status();
    out.config = *std::move(cfg);
  }
  auto text = ReadFileToString(cluster_path);
  if (!text.ok()) return text.status();
  auto spec = ParseClusterFile(*text, cluster_path);
  if (!spec.ok()) return spec.status();
  out.spec = *std::move(spec);
  if (out.config.topology) {
    out.topology = *out.config.topology;
  } else if (out.spec.topology) {
    out.topology = *out.spec.topology;
  } else {
    out.topology = *PresetTopology("auto");
  }
  if (out.topology.detect) {
    TopologyDetection d = DetectTopology(out.spec.nodes, out.topology);
    out.topology = std::move(d.topology);
    out.topology_note = std::move(d.summary);
    for (std::string& r : d.reports) out.warnings.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<Cluster> BuildCluster(LoadedCluster& loaded) {
  return Cluster::Build(loaded.spec, loaded.topology, &loaded.warnings);
}

}  // namespace topogang
