// The text of the queue journal (kube/queue_journal.h): each waiting gang's arrival in the
// admission queue, and its patience starts if any, as one ConfigMap data value. Pure, so the
// parser can be fuzzed and tested on hostile text: the ConfigMap is editable by anyone with write
// access to the namespace.
//
//   {"version":1,"arrivals":{"ns/gang":1764253800123,                       (Unix milliseconds)
//                            "ns/other":{"at":1764253800123,"could_start":1764254000000,
//                                        "thin_since":1764254100000},...}}
//
// A gang with no patience started is written as a bare number, as before patience starts were
// kept (2026-11-28), so an older topogangd still reads those; it skips the others, with a warning.
// The large gangs' last overload (QueueMemory::large_overload_seen), when there was one, is a
// top-level "large_overload_seen" in Unix milliseconds, floored to the minute (GangQueue hands it
// on coarser still, so that a lasting overload does not rewrite up to 900 KiB every period). An
// older topogangd ignores the key.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "scheduler/queue_seniority.h"

namespace topogang {

// A ConfigMap holds at most 1 MiB in all. A queue longer than `max_entries`, or whose text would
// pass kMaxJournalBytes (long names, patience starts), keeps its oldest gangs: they have the most
// seniority to lose.
inline constexpr size_t kMaxJournalArrivals = 20000;
inline constexpr size_t kMaxJournalBytes = 900 * 1024;

std::string EncodeQueueJournal(const QueueMemory& memory, size_t max_entries = kMaxJournalArrivals);

// Text that is not the format above (not JSON, another version, `arrivals` not an object) is an
// error. A single bad entry (a name that is empty or over 512 bytes, an arrival that is not an
// integer from 2000 to 2200, a patience start given but not such an integer) is skipped with a
// line in `warnings`; at most `max_entries` of the oldest are kept. A large_overload_seen that is
// not such an integer is left out, with a line in `warnings`.
absl::StatusOr<QueueMemory> ParseQueueJournal(absl::string_view text,
                                              std::vector<std::string>* warnings,
                                              size_t max_entries = kMaxJournalArrivals);

}  // namespace topogang
