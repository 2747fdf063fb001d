// GPUs through NVML, loaded at run time with dlopen("libnvidia-ml.so.1"): the agent builds
// without CUDA or NVML headers and runs on any node; where the library or the GPUs are missing,
// Open() says so and the agent exits (unless --fake-gpus).
#pragma once

#include <deque>
#include <memory>
#include <set>

#include "agent/gpu_source.h"
#include "agent/slowness_sampler.h"

namespace topogang::agent {

class NvmlGpuSource : public GpuSource {
 public:
  // Loads the library, initializes NVML, finds at least one GPU and subscribes to XID and ECC
  // events. FailedPrecondition with a clear message when any of that is not possible.
  static absl::StatusOr<std::unique_ptr<NvmlGpuSource>> Open(
      const char* library = "libnvidia-ml.so.1");
  ~NvmlGpuSource() override;

  absl::StatusOr<std::vector<GpuInfo>> Discover() override;
  std::string DriverVersion() override;
  // XID/ECC events from the NVML event set; between them, a poll for lost GPUs and thermal
  // slowdown (NVML has no event for those), and once a minute per GPU the counters that make a
  // node slow without breaking it (slowness_sampler.h).
  std::optional<GpuEventInfo> WaitEvent(absl::Duration timeout) override;

  const std::string& events_note() const { return events_note_; }

  struct Api;  // the resolved function pointers (nvml_source.cc)

 private:
  NvmlGpuSource() = default;
  std::optional<GpuEventInfo> PollHealth();

  void* lib_ = nullptr;
  std::unique_ptr<Api> api_;
  std::vector<void*> devices_;  // nvmlDevice_t by index
  void* event_set_ = nullptr;   // nvmlEventSet_t, null when events are not supported
  // Reads the slowness counters of the GPUs due for a sample; queues what they show.
  void SampleSlowness();

  std::set<int> lost_, hot_;
  std::string events_note_;
  SlownessSampler sampler_;
  std::deque<GpuEventInfo> queued_;
};

}  // namespace topogang::agent
