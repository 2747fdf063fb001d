// Leader election on a coordination.k8s.io/v1 Lease, with the semantics of client-go's
// tools/leaderelection, so that of several topogangd replicas exactly one serves kube-scheduler
// (each replica has its own in-memory reservation ledger: two serving would double-book GPUs).
//
//  - A candidate takes the lease when it is absent (POST), released (holderIdentity ""), or
//    expired: its record has not changed for leaseDurationSeconds *by our own clock* since we
//    first observed that record (clocks of different machines are never compared).
//  - Writes are PUTs carrying metadata.resourceVersion; a 409 means another replica won the race.
//  - The leader renews every retry_period. If no renewal has succeeded for renew_deadline
//    (measured from the start of the last successful attempt, i.e. before the API server
//    committed it), it stops leading, even while a request still hangs. renew_deadline <
//    lease_duration is what keeps a standby from taking over while the old leader still serves.
//  - Stop() on the leader releases the lease (holderIdentity "", leaseDurationSeconds 1), so a
//    standby takes over within one retry period instead of a lease duration.
//  - Leadership is one-shot, as in client-go: after losing it the elector ends; the daemon exits
//    and restarts clean as a standby.
// A Lease that cannot be parsed (wrong types, no resourceVersion) is never taken: log and retry.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/json_util.h"
#include "kube/kube_client.h"
#include "scheduler/clock.h"

namespace topogang {

struct LeaderElectorOptions {
  std::string lease_namespace = "kube-system";
  std::string lease_name = "topogangd";
  std::string identity;  // unique per process: see MakeLeaderIdentity
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
};

struct LeaderCallbacks {
  std::function<void()> on_started_leading;
  // OK: leadership given up by Stop() (lease released). Otherwise: lost (renewal failed past
  // renew_deadline); the message says why.
  std::function<void(const absl::Status& why)> on_stopped_leading;
  // The holder we observe changed ("" = nobody). Informational (logs).
  std::function<void(const std::string& holder)> on_new_leader;
};

// A Lease's spec as read from the API server.
struct LeaseRecord {
  std::string holder;
  int64_t lease_duration_seconds = 0;
  std::string acquire_time, renew_time;  // MicroTime strings, kept as read
  int64_t transitions = 0;
  std::string resource_version;
};

// Parses a Lease object. Wrong types, a missing metadata.resourceVersion or absurd values are
// errors. Absent spec fields are unset, as in the API (an absent holder is a free lease).
absl::StatusOr<LeaseRecord> ParseLease(absl::string_view json);

// Kubernetes MicroTime: "2006-01-02T15:04:05.000000Z".
std::string FormatMicroTime(absl::Time t);

// POD_NAME (or the hostname) plus "_" and a random suffix, so a restarted pod never mistakes
// the previous incarnation's lease for its own.
std::string MakeLeaderIdentity();

// The namespace of the in-cluster service account (dir/namespace), else "kube-system".
std::string DefaultLeaseNamespace(const std::string& service_account_dir);

class LeaderElector {
 public:
  // `clock` stamps acquire/renew times and measures expiry and the renew deadline (tests drive
  // TryAcquireOrRenew with a FakeClock); waits between attempts are real time.
  LeaderElector(std::shared_ptr<KubeClient> client, LeaderElectorOptions options,
                LeaderCallbacks callbacks, const Clock& clock);
  ~LeaderElector();  // Stop()
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Starts the election loop (acquire, then renew) and the renew-deadline watchdog. Callbacks
  // run on those threads and must not call Stop().
  void Start();
  // Ends the loop; a leader releases the lease and gets on_stopped_leading(OK). Idempotent.
  void Stop();

  bool IsLeader() const;
  // True once leadership was lost (the elector is done).
  bool Lost() const;
  const std::string& identity() const { return options_.identity; }

  // One attempt: read the lease, then create, renew or take it over. True when we hold it
  // afterwards. Exposed for deterministic tests; the loop calls it.
  bool TryAcquireOrRenew();

 private:
  std::string LeasePath() const;
  std::string LeaseJson(const LeaseRecord& r, bool with_rv) const;
  void LogError(const std::string& msg);
  void ClearError();
  void Loop();
  void Watchdog();
  void LoseLocked();
  absl::Status LostStatus();
  // Callbacks run outside mu_, serialized by callback_mu_; started/stopped strictly alternate.
  void AnnounceStarted();
  void AnnounceStopped(const absl::Status& why);
  // Waits up to d (real time) or until Stop(); false when stopping or done.
  bool WaitLocked(std::unique_lock<std::mutex>& lock, absl::Duration d);
  void Release();

  std::shared_ptr<KubeClient> client_;
  LeaderElectorOptions options_;
  LeaderCallbacks callbacks_;
  const Clock& clock_;

  // Observation state (touched by TryAcquireOrRenew only, one caller at a time).
  std::mutex attempt_mu_;
  std::optional<LeaseRecord> observed_;
  std::string observed_key_;  // the spec as last read, to detect changes
  absl::Time observed_time_;  // when (our clock) observed_key_ was first seen

  std::mutex callback_mu_;
  bool announced_ = false;  // on_started_leading ran and on_stopped_leading did not yet

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
  bool stop_ = false;
  bool leading_ = false;
  bool lost_ = false;
  absl::Time last_renew_ = absl::InfinitePast();  // start of the last successful attempt
  std::string last_error_;                        // logged once per distinct error
  std::thread loop_, watchdog_;
};

}  // namespace topogang
