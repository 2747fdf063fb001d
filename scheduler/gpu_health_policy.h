// Which GPU events make a GPU unusable for new gangs. The list and the reasons per code are in
// docs/grpc.md; the daemon config may replace the XID set.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "common/gpu_event_kind.h"

namespace topogang {

// XIDs after which the GPU needs a reset (or replacement) before it can be trusted again.
std::set<uint32_t> DefaultFatalXids();
// Short human name of an XID code ("GPU has fallen off the bus"), "" when not known.
const char* XidName(uint32_t xid);

enum class GpuVerdict {
  kFatal,    // mark the GPU unhealthy
  kRecord,   // publish an event, health unchanged
  kRecover,  // mark the GPU healthy again
};

struct GpuEventDecision {
  GpuVerdict verdict = GpuVerdict::kRecord;
  std::string reason;  // "XID 79 (GPU has fallen off the bus)"
};

GpuEventDecision DecideGpuEvent(GpuEventKind kind, uint32_t xid,
                                const std::set<uint32_t>& fatal_xids);

}  // namespace topogang
