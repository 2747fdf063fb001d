// libFuzzer target for the extender's wire parsers (what kube-scheduler, or anyone reaching the
// port, sends): ExtenderArgs, binding and preemption args, priorities, ExecCredential output, and
// the pod readers, and the queue journal an earlier leader wrote. Whatever parses must also answer:
// the fast filter reply written from per-node verdicts must be valid JSON and say exactly what the
// struct form says, for any node names.
//   bash scripts/fuzz.sh
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "extender/wire_types.h"
#include "k8s/gang_labels.h"
#include "k8s/pod_info.h"
#include "kube/exec_credential.h"
#include "kube/queue_arrivals.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace topogang;
  if (size < 2 || size > 256 * 1024) return 0;
  const uint8_t mode = data[0];
  const uint8_t seed = data[1];
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  switch (mode % 7) {
    case 0: {
      auto a = ParseExtenderArgs(text);
      if (!a.ok()) break;
      auto pod = ParsePod(a->pod, "nvidia.com/gpu");
      if (pod.ok()) (void)ParseGangMembership(pod->namespace_, pod->labels, pod->annotations);
      FilterVerdicts v;
      v.AddReason("fuzz \"reason\"", (seed & 1) != 0);
      v.AddReason("other", (seed & 2) != 0);
      for (size_t i = 0; i < a->names.size(); ++i) v.verdict.push_back((seed + i) % 3);
      const std::string fast = SerializeFilterVerdicts(*a, v);
      Json jf = Json::parse(fast, nullptr, false);
      if (jf.is_discarded()) std::abort();  // the raw writer produced invalid JSON
      Json js = Json::parse(SerializeFilterResult(ToFilterResult(*a, v)), nullptr, false);
      if (jf != js) std::abort();
      break;
    }
    case 1:
      (void)ParseBindingArgs(text);
      break;
    case 2:
      (void)ParsePreemptionArgs(text);
      break;
    case 3:
      (void)ParseHostPriorityList(text);
      break;
    case 4:
      (void)ParseExecCredential(text, "client.authentication.k8s.io/v1");
      break;
    case 6: {
      // What parses must survive its own round trip: exactly, but for the overload time, which
      // is written to the minute.
      auto a = ParseQueueJournal(text, nullptr, 1 + seed);
      if (!a.ok()) break;
      auto back = ParseQueueJournal(EncodeQueueJournal(*a, 1 + seed), nullptr, 1 + seed);
      if (!back.ok() || back->arrivals != a->arrivals) std::abort();
      const absl::Time seen = a->large_overload_seen, seen_back = back->large_overload_seen;
      if (seen == absl::InfinitePast() ? seen_back != seen
                                       : seen_back > seen || seen - seen_back >= absl::Minutes(1)) {
        std::abort();
      }
      break;
    }
    default:
      (void)ParseFilterResult(text);
      break;
  }
  return 0;
}
