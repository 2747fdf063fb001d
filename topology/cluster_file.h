// Cluster files (YAML). Two forms, documented in docs/cluster-files.md:
//   nodes:    an explicit list of {name, gpus, sku, labels}
//   generate: zones x spines x leaves x nodes x GPUs, optional NVLink domains and mixed SKUs
// Either may carry a `topology:` section (see topology_config.h); without one the tiers are
// detected from whichever label family the nodes carry (label_family.h, resolved by the loader).
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/cluster_spec.h"

namespace topogang {

// Parses and validates a cluster file's text. Errors read "source:line:col: what is wrong".
absl::StatusOr<ClusterSpec> ParseClusterFile(absl::string_view text, absl::string_view source);

}  // namespace topogang
