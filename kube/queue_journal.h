// Keeps the admission queue's seniority in a ConfigMap, so a restart or a failover does not send
// every waiting gang to the back of the queue. Without it the queue lives in the leader's memory:
// a gang that waited ten hours would re-enter behind gangs that came an hour ago, and a starved
// gang would wait out the starvation threshold again before anything is held for it.
//
// What is kept: each waiting gang's arrival and patience starts, and the last time the large gangs
// overloaded the cluster (kube/queue_arrivals.h, scheduler/queue_seniority.h), nothing else. Holds
// and reservations are rebuilt from the cluster as before. The leader writes the record every
// `period` when it changed (a PUT with the resourceVersion read; a conflict re-reads it next time),
// and once more when it shuts down, before it releases the lease. A new leader reads it before it
// serves (GangLedger::SeedQueue). Why a ConfigMap in topogangd's namespace and not pod annotations:
// users write their own pods, and could forge seniority there; this object is writable only by
// whoever may write topogangd's namespace (docs/extender.md).
//
// Thread-safe. Failures are logged (once per distinct error) and never stop the daemon: the
// worst case is the old behaviour, seniority from the next filter.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/json_util.h"
#include "kube/kube_client.h"
#include "kube/queue_arrivals.h"

namespace topogang {

struct QueueJournalOptions {
  std::string name_space;  // topogangd's namespace
  std::string name = "topogangd-queue";
  absl::Duration period = absl::Seconds(10);
  size_t max_entries = kMaxJournalArrivals;
};

class QueueJournal {
 public:
  using Snapshot = std::function<QueueMemory()>;
  // `snapshot` gives what to keep (GangLedger::QueueSnapshot).
  QueueJournal(std::shared_ptr<KubeClient> client, QueueJournalOptions options, Snapshot snapshot);
  ~QueueJournal();  // Abandon()
  QueueJournal(const QueueJournal&) = delete;
  QueueJournal& operator=(const QueueJournal&) = delete;

  // The record as stored: empty when there is none yet; an error when it cannot be read or is
  // not a queue journal (it is overwritten by the next write). Bad entries are skipped (logged).
  absl::StatusOr<QueueMemory> Load();
  // Writes the snapshot now unless it equals what was last written. One attempt.
  absl::Status Flush();
  // Writes every period from a background thread. Idempotent.
  void Start();
  // Stops writing, then writes once more (a leader shutting down, before it releases the lease).
  void Stop();
  // Stops writing without a last write (leadership lost: a new leader may own the record now).
  void Abandon();

  const QueueJournalOptions& options() const { return options_; }

 private:
  std::string Path(bool with_name) const;
  // GETs the record and notes whether it exists and its resourceVersion; null when absent.
  absl::StatusOr<Json> ReadLocked();
  std::string ObjectJson(const std::string& text) const;
  void Loop();
  void Log(const absl::Status& s);
  void EndLoop();

  std::shared_ptr<KubeClient> client_;
  QueueJournalOptions options_;
  Snapshot snapshot_;

  std::mutex write_mu_;  // one write at a time; guards the fields below
  bool exists_known_ = false, exists_ = false;
  std::string resource_version_;
  std::string written_;  // the text last written (or read back), to skip unchanged writes
  std::string last_error_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool running_ = false, stop_ = false;
  std::thread thread_;
};

}  // namespace topogang
