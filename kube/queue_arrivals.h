// The text of the queue journal (kube/queue_journal.h): each waiting gang's arrival in the
// admission queue, as one ConfigMap data value. Pure, so the parser can be fuzzed and tested
// on hostile text: the ConfigMap is editable by anyone with write access to the namespace.
//
//   {"version":1,"arrivals":{"ns/gang":1764253800123,...}}    (Unix milliseconds)
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace topogang {

// A ConfigMap holds at most 1 MiB; at ~40 bytes an entry this keeps well inside it. A queue
// longer than this keeps its oldest gangs: they have the most seniority to lose.
inline constexpr size_t kMaxJournalArrivals = 20000;

std::string EncodeArrivals(const std::map<std::string, absl::Time>& arrivals,
                           size_t max_entries = kMaxJournalArrivals);

// Text that is not the format above (not JSON, another version, `arrivals` not an object) is an
// error. A single bad entry (a name that is empty or over 512 bytes, a time that is not an
// integer from 2000 to 2200) is skipped with a line in `warnings`; at most `max_entries` of the
// oldest are kept.
absl::StatusOr<std::map<std::string, absl::Time>> ParseArrivals(
    absl::string_view text, std::vector<std::string>* warnings,
    size_t max_entries = kMaxJournalArrivals);

}  // namespace topogang
