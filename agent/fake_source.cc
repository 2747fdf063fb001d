#include "agent/fake_source.h"

#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace topogang::agent {

FakeGpuSource::FakeGpuSource(int count, std::string model, std::string node_seed) {
  for (int i = 0; i < count; ++i) {
    GpuInfo g;
    g.index = i;
    char uuid[64];
    // Stable per node and index so re-registration reports the same UUIDs.
    std::snprintf(uuid, sizeof(uuid), "GPU-fake-%08zx-%04d",
                  std::hash<std::string>{}(node_seed)&0xffffffff, i);
    g.uuid = uuid;
    g.model = model;
    g.memory_bytes = 80ull << 30;
    g.nvlink_active_links = 18;
    gpus_.push_back(g);
  }
}

absl::StatusOr<std::vector<GpuInfo>> FakeGpuSource::Discover() { return gpus_; }

std::optional<GpuEventInfo> FakeGpuSource::WaitEvent(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] { return !events_.empty(); });
  if (events_.empty()) return std::nullopt;
  GpuEventInfo ev = std::move(events_.front());
  events_.pop_front();
  return ev;
}

void FakeGpuSource::Inject(GpuEventInfo ev) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(ev));
  }
  cv_.notify_all();
}

absl::StatusOr<std::optional<GpuEventInfo>> ParseControlLine(absl::string_view line) {
  line = absl::StripAsciiWhitespace(line);
  if (line.empty() || line[0] == '#') return std::optional<GpuEventInfo>();
  std::vector<absl::string_view> w = absl::StrSplit(line, ' ', absl::SkipWhitespace());
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("control line '", line, "': ", why));
  };
  if (w.size() < 2) return bad("expected 'KIND GPU [XID] [detail]'");
  GpuEventInfo ev;
  if (!absl::SimpleAtoi(w[1], &ev.gpu_index) || ev.gpu_index < 0) return bad("bad GPU index");
  size_t rest = 2;
  if (w[0] == "xid") {
    ev.kind = GpuEventKind::kXid;
    if (w.size() < 3 || !absl::SimpleAtoi(w[2], &ev.xid)) return bad("xid needs a code");
    rest = 3;
  } else if (w[0] == "ecc") {
    ev.kind = GpuEventKind::kEccUncorrectable;
  } else if (w[0] == "lost") {
    ev.kind = GpuEventKind::kGpuLost;
  } else if (w[0] == "thermal") {
    ev.kind = GpuEventKind::kThermal;
  } else if (w[0] == "recover") {
    ev.kind = GpuEventKind::kRecovered;
  } else if (w[0] == "ecc-burst") {  // the slowness signals (slowness_sampler.h)
    ev.kind = GpuEventKind::kEccCorrectableBurst;
  } else if (w[0] == "replay") {
    ev.kind = GpuEventKind::kLinkReplay;
  } else if (w[0] == "throttle") {
    ev.kind = GpuEventKind::kClockThrottle;
  } else if (w[0] == "slow-nccl") {
    ev.kind = GpuEventKind::kSlowNcclTest;
  } else {
    return bad(
        "kind must be xid, ecc, lost, thermal, recover, ecc-burst, replay, throttle or slow-nccl");
  }
  if (w.size() > rest) ev.detail = absl::StrJoin(w.begin() + rest, w.end(), " ");
  return std::optional<GpuEventInfo>(ev);
}

}  // namespace topogang::agent
