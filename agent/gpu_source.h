// Where the agent learns about its GPUs: NVML on a real node (nvml_source.h), or a fake set for
// tests and demos (fake_source.h). Events use the numbering of topogang.v1.GpuEvent.Kind.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/gpu_event_kind.h"

namespace topogang::agent {

struct GpuInfo {
  int index = 0;
  std::string uuid;
  std::string model;
  uint64_t memory_bytes = 0;
  int nvlink_active_links = 0;
  std::string fabric_cluster_uuid;  // empty when the GPU is not on an NVLink fabric
  uint32_t fabric_clique_id = 0;
};

using ::topogang::GpuEventKind;

struct GpuEventInfo {
  int gpu_index = 0;
  GpuEventKind kind = GpuEventKind::kXid;
  uint32_t xid = 0;
  std::string detail;
};

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  virtual absl::StatusOr<std::vector<GpuInfo>> Discover() = 0;
  virtual std::string DriverVersion() = 0;
  // The next GPU event, or nullopt after `timeout` (or when the source is closed).
  virtual std::optional<GpuEventInfo> WaitEvent(absl::Duration timeout) = 0;
};

}  // namespace topogang::agent
