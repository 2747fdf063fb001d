// A fake GPU set (--fake-gpus N --fake-model M) whose events are injected by tests or read from
// a control file, so the whole agent path runs without NVIDIA hardware.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>

#include "absl/strings/string_view.h"
#include "agent/gpu_source.h"

namespace topogang::agent {

class FakeGpuSource : public GpuSource {
 public:
  FakeGpuSource(int count, std::string model, std::string node_seed);
  absl::StatusOr<std::vector<GpuInfo>> Discover() override;
  std::string DriverVersion() override { return "fake"; }
  std::optional<GpuEventInfo> WaitEvent(absl::Duration timeout) override;
  void Inject(GpuEventInfo ev);

 private:
  std::vector<GpuInfo> gpus_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<GpuEventInfo> events_;
};

// One control line: "xid GPU CODE", "ecc GPU", "lost GPU", "thermal GPU", "recover GPU"
// (optional trailing detail text). '#' lines and blank lines give nullopt without error.
absl::StatusOr<std::optional<GpuEventInfo>> ParseControlLine(absl::string_view line);

}  // namespace topogang::agent
