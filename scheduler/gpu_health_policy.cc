#include "scheduler/gpu_health_policy.h"

namespace topogang {

std::set<uint32_t> DefaultFatalXids() {
  // 48 DBE, 61/62 firmware halt, 64 row-remap failure, 74 NVLink, 79 off the bus,
  // 94/95 contained/uncontained ECC (row remap pending reset), 119/120 GSP, 140 unrecovered ECC.
  return {48, 61, 62, 64, 74, 79, 94, 95, 119, 120, 140};
}

const char* XidName(uint32_t xid) {
  switch (xid) {
    case 13:
      return "graphics engine exception";
    case 31:
      return "GPU memory page fault";
    case 43:
      return "GPU stopped processing";
    case 45:
      return "preemptive cleanup";
    case 48:
      return "double bit ECC error";
    case 61:
      return "internal micro-controller breakpoint/warning";
    case 62:
      return "internal micro-controller halt";
    case 63:
      return "ECC page retirement or row remapping recording event";
    case 64:
      return "ECC page retirement or row remapper recording failure";
    case 74:
      return "NVLink error";
    case 79:
      return "GPU has fallen off the bus";
    case 92:
      return "high single-bit ECC error rate";
    case 94:
      return "contained ECC error";
    case 95:
      return "uncontained ECC error";
    case 109:
      return "context switch timeout";
    case 119:
      return "GSP RPC timeout";
    case 120:
      return "GSP error";
    case 140:
      return "unrecovered ECC error";
  }
  return "";
}

GpuEventDecision DecideGpuEvent(GpuEventKind kind, uint32_t xid,
                                const std::set<uint32_t>& fatal_xids) {
  switch (kind) {
    case GpuEventKind::kXid: {
      std::string reason = "XID " + std::to_string(xid);
      if (const char* name = XidName(xid); *name) reason += std::string(" (") + name + ")";
      return {fatal_xids.count(xid) ? GpuVerdict::kFatal : GpuVerdict::kRecord, reason};
    }
    case GpuEventKind::kEccUncorrectable:
      return {GpuVerdict::kFatal, "uncorrectable ECC error"};
    case GpuEventKind::kGpuLost:
      return {GpuVerdict::kFatal, "GPU lost"};
    case GpuEventKind::kThermal:
      return {GpuVerdict::kRecord, "thermal event"};
    case GpuEventKind::kRecovered:
      return {GpuVerdict::kRecover, "recovered"};
    case GpuEventKind::kEccCorrectableBurst:
      return {GpuVerdict::kRecord, "burst of correctable ECC errors"};
    case GpuEventKind::kLinkReplay:
      return {GpuVerdict::kRecord, "NVLink/PCIe replays rising"};
    case GpuEventKind::kClockThrottle:
      return {GpuVerdict::kRecord, "clocks throttled"};
    case GpuEventKind::kSlowNcclTest:
      return {GpuVerdict::kRecord, "slow NCCL self-test"};
  }
  return {GpuVerdict::kRecord, "unknown event"};
}

}  // namespace topogang
