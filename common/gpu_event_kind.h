// Kinds of GPU health events, shared by the agent (which raises them) and the daemon's health
// policy (which judges them). Mirrors topogang.v1.GpuEvent.Kind but stays proto-free so both
// sides are testable without gRPC.
#pragma once

namespace topogang {

enum class GpuEventKind {
  kXid = 1,
  kEccUncorrectable = 2,
  kGpuLost = 3,
  kThermal = 4,
  kRecovered = 5,
  // Slowness signals: the GPU works but makes collective jobs slow (scheduler/node_slowness.h).
  kEccCorrectableBurst = 6,
  kLinkReplay = 7,
  kClockThrottle = 8,
  kSlowNcclTest = 9,
};

}  // namespace topogang
