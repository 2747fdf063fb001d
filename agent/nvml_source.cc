#include "agent/nvml_source.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace topogang::agent {

namespace {

// The few NVML types we need, declared here so no NVIDIA header is needed at build time.
// Layouts follow nvml.h (stable ABI).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
using nvmlEventSet_t = void*;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
struct nvmlGpuFabricInfo_t {
  unsigned char clusterUuid[16];
  nvmlReturn_t status;
  unsigned int cliqueId;
  unsigned char state;
  unsigned char pad[64];  // slack in case a newer driver writes more
};

constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kTimeout = 10;
constexpr nvmlReturn_t kGpuIsLost = 15;
constexpr unsigned long long kEventDoubleBitEcc = 0x2;
constexpr unsigned long long kEventXid = 0x8;
constexpr unsigned long long kThrottleSwThermal = 0x20;
constexpr unsigned long long kThrottleHwThermal = 0x40;
// nvmlClocksEventReasonSwPowerCap, HwSlowdown, HwPowerBrakeSlowdown.
constexpr unsigned long long kThrottlePower = 0x4 | 0x8 | 0x80;
constexpr int kMemoryErrorCorrected = 0;  // NVML_MEMORY_ERROR_TYPE_CORRECTED
constexpr int kVolatileEcc = 0;           // NVML_VOLATILE_ECC: since the driver loaded
constexpr int kNvLinkErrorDlReplay = 0;   // NVML_NVLINK_ERROR_DL_REPLAY
constexpr unsigned int kMaxNvLinks = 18;
constexpr unsigned char kFabricStateCompleted = 3;

}  // namespace

struct NvmlGpuSource::Api {
  nvmlReturn_t (*Init)();
  nvmlReturn_t (*Shutdown)();
  const char* (*ErrorString)(nvmlReturn_t);
  nvmlReturn_t (*DeviceGetCount)(unsigned int*);
  nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*DeviceGetNvLinkState)(nvmlDevice_t, unsigned int, int*);      // optional
  nvmlReturn_t (*DeviceGetGpuFabricInfo)(nvmlDevice_t, nvmlGpuFabricInfo_t*);  // optional
  nvmlReturn_t (*SystemGetDriverVersion)(char*, unsigned int);
  nvmlReturn_t (*EventSetCreate)(nvmlEventSet_t*);  // optional, as are the event calls below
  nvmlReturn_t (*DeviceRegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
  nvmlReturn_t (*EventSetWait)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
  nvmlReturn_t (*EventSetFree)(nvmlEventSet_t);
  nvmlReturn_t (*DeviceGetCurrentClocksThrottleReasons)(nvmlDevice_t, unsigned long long*);
  // Optional: the slowness counters.
  nvmlReturn_t (*DeviceGetTotalEccErrors)(nvmlDevice_t, int, int, unsigned long long*);
  nvmlReturn_t (*DeviceGetPcieReplayCounter)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*DeviceGetNvLinkErrorCounter)(nvmlDevice_t, unsigned int, int, unsigned long long*);

  std::string Error(nvmlReturn_t r) const {
    return absl::StrCat(ErrorString ? ErrorString(r) : "NVML error", " (", r, ")");
  }
};

absl::StatusOr<std::unique_ptr<NvmlGpuSource>> NvmlGpuSource::Open(const char* library) {
  void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("no NVIDIA driver here: cannot load ", library, " (", err ? err : "?",
                     "). Run on a node with NVIDIA GPUs and the driver installed, or use "
                     "--fake-gpus N for tests and demos."));
  }
  std::unique_ptr<NvmlGpuSource> s(new NvmlGpuSource());
  s->lib_ = lib;
  s->api_ = std::make_unique<Api>();
  Api& a = *s->api_;
  std::string missing;
  auto sym = [&](auto& fn, std::initializer_list<const char*> names, bool required) {
    for (const char* n : names) {
      if (void* p = dlsym(lib, n)) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
        return;
      }
    }
    fn = nullptr;
    if (required) absl::StrAppend(&missing, missing.empty() ? "" : ", ", *names.begin());
  };
  sym(a.Init, {"nvmlInit_v2", "nvmlInit"}, true);
  sym(a.Shutdown, {"nvmlShutdown"}, true);
  sym(a.ErrorString, {"nvmlErrorString"}, false);
  sym(a.DeviceGetCount, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, true);
  sym(a.DeviceGetHandleByIndex, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"},
      true);
  sym(a.DeviceGetUUID, {"nvmlDeviceGetUUID"}, true);
  sym(a.DeviceGetName, {"nvmlDeviceGetName"}, true);
  sym(a.DeviceGetMemoryInfo, {"nvmlDeviceGetMemoryInfo"}, true);
  sym(a.DeviceGetNvLinkState, {"nvmlDeviceGetNvLinkState"}, false);
  sym(a.DeviceGetGpuFabricInfo, {"nvmlDeviceGetGpuFabricInfo"}, false);
  sym(a.SystemGetDriverVersion, {"nvmlSystemGetDriverVersion"}, false);
  sym(a.EventSetCreate, {"nvmlEventSetCreate"}, false);
  sym(a.DeviceRegisterEvents, {"nvmlDeviceRegisterEvents"}, false);
  sym(a.EventSetWait, {"nvmlEventSetWait_v2", "nvmlEventSetWait"}, false);
  sym(a.EventSetFree, {"nvmlEventSetFree"}, false);
  sym(a.DeviceGetCurrentClocksThrottleReasons,
      {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
      false);
  sym(a.DeviceGetTotalEccErrors, {"nvmlDeviceGetTotalEccErrors"}, false);
  sym(a.DeviceGetPcieReplayCounter, {"nvmlDeviceGetPcieReplayCounter"}, false);
  sym(a.DeviceGetNvLinkErrorCounter, {"nvmlDeviceGetNvLinkErrorCounter"}, false);
  if (!missing.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(library, " lacks required symbols: ", missing, " (driver too old?)"));
  }
  if (nvmlReturn_t r = a.Init(); r != kSuccess) {
    a.Init = nullptr;  // nothing to shut down
    return absl::FailedPreconditionError(
        absl::StrCat("nvmlInit failed: ", a.Error(r), "; is the NVIDIA driver loaded?"));
  }
  unsigned int count = 0;
  if (nvmlReturn_t r = a.DeviceGetCount(&count); r != kSuccess) {
    return absl::FailedPreconditionError(absl::StrCat("nvmlDeviceGetCount: ", a.Error(r)));
  }
  if (count == 0) {
    return absl::FailedPreconditionError("NVML found no NVIDIA GPUs on this machine");
  }
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t d = nullptr;
    if (nvmlReturn_t r = a.DeviceGetHandleByIndex(i, &d); r != kSuccess) {
      return absl::FailedPreconditionError(absl::StrCat("GPU ", i, ": ", a.Error(r)));
    }
    s->devices_.push_back(d);
  }
  if (a.EventSetCreate && a.DeviceRegisterEvents && a.EventSetWait &&
      a.EventSetCreate(&s->event_set_) == kSuccess) {
    int registered = 0;
    for (void* d : s->devices_) {
      // Register per type: a GPU without ECC refuses the ECC bit but still gives XIDs.
      for (unsigned long long t : {kEventXid, kEventDoubleBitEcc}) {
        if (a.DeviceRegisterEvents(d, t, s->event_set_) == kSuccess) ++registered;
      }
    }
    s->events_note_ = absl::StrCat(registered, " event subscriptions (XID, double-bit ECC)");
  } else {
    s->event_set_ = nullptr;
    s->events_note_ = "NVML events not available; polling only";
  }
  return s;
}

NvmlGpuSource::~NvmlGpuSource() {
  if (api_) {
    if (event_set_ && api_->EventSetFree) api_->EventSetFree(event_set_);
    if (api_->Init && api_->Shutdown) api_->Shutdown();
  }
  if (lib_) dlclose(lib_);
}

absl::StatusOr<std::vector<GpuInfo>> NvmlGpuSource::Discover() {
  const Api& a = *api_;
  std::vector<GpuInfo> out;
  for (size_t i = 0; i < devices_.size(); ++i) {
    void* d = devices_[i];
    GpuInfo g;
    g.index = static_cast<int>(i);
    char buf[256] = {};
    if (nvmlReturn_t r = a.DeviceGetUUID(d, buf, sizeof(buf)); r == kSuccess) {
      g.uuid = buf;
    } else if (r == kGpuIsLost) {
      continue;  // reported missing; the daemon marks it lost
    } else {
      return absl::InternalError(absl::StrCat("GPU ", i, " UUID: ", a.Error(r)));
    }
    std::memset(buf, 0, sizeof(buf));
    if (a.DeviceGetName(d, buf, sizeof(buf)) == kSuccess) g.model = buf;
    nvmlMemory_t mem{};
    if (a.DeviceGetMemoryInfo(d, &mem) == kSuccess) g.memory_bytes = mem.total;
    if (a.DeviceGetNvLinkState) {
      for (unsigned int l = 0; l < kMaxNvLinks; ++l) {
        int active = 0;
        if (a.DeviceGetNvLinkState(d, l, &active) != kSuccess) break;  // no such link
        g.nvlink_active_links += active ? 1 : 0;
      }
    }
    if (a.DeviceGetGpuFabricInfo) {
      nvmlGpuFabricInfo_t f{};
      if (a.DeviceGetGpuFabricInfo(d, &f) == kSuccess && f.state == kFabricStateCompleted &&
          f.status == kSuccess) {
        bool zero = true;
        for (unsigned char c : f.clusterUuid) zero = zero && c == 0;
        if (!zero) {
          char u[40];
          std::snprintf(u, sizeof(u),
                        "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                        f.clusterUuid[0], f.clusterUuid[1], f.clusterUuid[2], f.clusterUuid[3],
                        f.clusterUuid[4], f.clusterUuid[5], f.clusterUuid[6], f.clusterUuid[7],
                        f.clusterUuid[8], f.clusterUuid[9], f.clusterUuid[10], f.clusterUuid[11],
                        f.clusterUuid[12], f.clusterUuid[13], f.clusterUuid[14], f.clusterUuid[15]);
          g.fabric_cluster_uuid = u;
          g.fabric_clique_id = f.cliqueId;
        }
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::string NvmlGpuSource::DriverVersion() {
  char buf[96] = {};
  if (api_->SystemGetDriverVersion && api_->SystemGetDriverVersion(buf, sizeof(buf)) == kSuccess) {
    return buf;
  }
  return "unknown";
}

void NvmlGpuSource::SampleSlowness() {
  const Api& a = *api_;
  const absl::Time now = absl::Now();
  for (size_t i = 0; i < devices_.size(); ++i) {
    const int idx = static_cast<int>(i);
    if (lost_.count(idx) || !sampler_.Due(idx, now)) continue;
    void* d = devices_[i];
    GpuCounters c;
    unsigned long long ecc = 0;
    if (a.DeviceGetTotalEccErrors &&
        a.DeviceGetTotalEccErrors(d, kMemoryErrorCorrected, kVolatileEcc, &ecc) == kSuccess) {
      c.ecc_corrected = ecc;  // not supported (ECC off, consumer GPU): stays unknown
    }
    uint64_t replays = 0;
    bool have_replays = false;
    unsigned int pcie = 0;
    if (a.DeviceGetPcieReplayCounter && a.DeviceGetPcieReplayCounter(d, &pcie) == kSuccess) {
      replays += pcie;
      have_replays = true;
    }
    if (a.DeviceGetNvLinkErrorCounter) {
      for (unsigned int l = 0; l < kMaxNvLinks; ++l) {
        unsigned long long n = 0;
        if (a.DeviceGetNvLinkErrorCounter(d, l, kNvLinkErrorDlReplay, &n) != kSuccess) break;
        replays += n;
        have_replays = true;
      }
    }
    if (have_replays) c.replays = replays;
    unsigned long long reasons = 0;
    if (a.DeviceGetCurrentClocksThrottleReasons &&
        a.DeviceGetCurrentClocksThrottleReasons(d, &reasons) == kSuccess) {
      c.power_throttled = (reasons & kThrottlePower) != 0;
    }
    for (GpuEventInfo& e : sampler_.Sample(idx, c, now)) queued_.push_back(std::move(e));
  }
}

std::optional<GpuEventInfo> NvmlGpuSource::PollHealth() {
  const Api& a = *api_;
  SampleSlowness();
  if (!queued_.empty()) {
    GpuEventInfo e = std::move(queued_.front());
    queued_.pop_front();
    return e;
  }
  if (!a.DeviceGetCurrentClocksThrottleReasons) return std::nullopt;
  for (size_t i = 0; i < devices_.size(); ++i) {
    const int idx = static_cast<int>(i);
    unsigned long long reasons = 0;
    nvmlReturn_t r = a.DeviceGetCurrentClocksThrottleReasons(devices_[i], &reasons);
    if (r == kGpuIsLost) {
      if (lost_.insert(idx).second) {
        return GpuEventInfo{idx, GpuEventKind::kGpuLost, 0, "NVML: GPU is lost"};
      }
      continue;
    }
    if (r != kSuccess) continue;
    const bool hot = reasons & (kThrottleSwThermal | kThrottleHwThermal);
    if (hot && hot_.insert(idx).second) {
      return GpuEventInfo{idx, GpuEventKind::kThermal, 0,
                          absl::StrCat("thermal slowdown (reasons 0x", absl::Hex(reasons), ")")};
    }
    if (!hot) hot_.erase(idx);
  }
  return std::nullopt;
}

std::optional<GpuEventInfo> NvmlGpuSource::WaitEvent(absl::Duration timeout) {
  if (auto ev = PollHealth()) return ev;
  if (event_set_ == nullptr) {
    absl::SleepFor(timeout);  // polling only: pace it
    return std::nullopt;
  }
  nvmlEventData_t data{};
  nvmlReturn_t r = api_->EventSetWait(
      event_set_, &data, static_cast<unsigned int>(absl::ToInt64Milliseconds(timeout)));
  if (r == kTimeout || r != kSuccess) return std::nullopt;
  int idx = -1;
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] == data.device) idx = static_cast<int>(i);
  }
  if (idx < 0) return std::nullopt;
  if (data.eventType & kEventXid) {
    return GpuEventInfo{idx, GpuEventKind::kXid, static_cast<uint32_t>(data.eventData),
                        "NVML XID event"};
  }
  if (data.eventType & kEventDoubleBitEcc) {
    return GpuEventInfo{idx, GpuEventKind::kEccUncorrectable, 0, "NVML double-bit ECC event"};
  }
  return std::nullopt;
}

}  // namespace topogang::agent
