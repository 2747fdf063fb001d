#include "kube/leader_election.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"

namespace topogang {

namespace {

constexpr int64_t kMaxInt32 = 2147483647;

std::chrono::milliseconds ToChrono(absl::Duration d) {
  return std::chrono::milliseconds(std::max<int64_t>(0, absl::ToInt64Milliseconds(d)));
}

// The API's unit is whole seconds; sub-second durations (tests) round up, never down.
int64_t CeilSeconds(absl::Duration d) {
  return std::max<int64_t>(1, absl::ToInt64Milliseconds(d + absl::Milliseconds(999)) / 1000);
}

// Status JSON's message, else the start of the body.
std::string ApiMessage(const HttpResult& r) {
  if (auto j = ParseJson(r.body); j.ok()) {
    if (const Json* m = GoField(*j, "message"); m && m->is_string()) return m->get<std::string>();
  }
  return r.body.substr(0, 200);
}

bool IsDnsLabel(absl::string_view s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  for (char c : s) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '-') return false;
  }
  return true;
}

// One write per line: several threads (and electors, in tests) log at once.
void Log(absl::string_view msg) {
  std::cerr << absl::StrCat("topogangd: leader election: ", msg, "\n") << std::flush;
}

// What client-go compares to decide whether the holder made progress: the whole spec.
std::string SpecKey(const LeaseRecord& r) {
  return absl::StrCat(r.holder, "\n", r.lease_duration_seconds, "\n", r.acquire_time, "\n",
                      r.renew_time, "\n", r.transitions);
}

}  // namespace

std::string FormatMicroTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

absl::StatusOr<LeaseRecord> ParseLease(absl::string_view json) {
  auto j = ParseJson(json);
  if (!j.ok()) return j.status();
  if (!j->is_object()) return absl::InvalidArgumentError("Lease: expected a JSON object");
  if (const Json* kind = GoField(*j, "kind"); kind && (!kind->is_string() || *kind != "Lease")) {
    return absl::InvalidArgumentError("Lease: kind is not \"Lease\"");
  }
  auto meta = JsonObject(*j, "metadata", "Lease.metadata");
  if (!meta.ok()) return meta.status();
  if (!*meta || !(*meta)->is_object()) {
    return absl::InvalidArgumentError("Lease.metadata: expected an object");
  }
  LeaseRecord r;
  auto rv = JsonString(**meta, "resourceVersion", "Lease.metadata.resourceVersion");
  if (!rv.ok()) return rv.status();
  if (rv->empty()) {
    return absl::InvalidArgumentError("Lease.metadata.resourceVersion: missing");
  }
  r.resource_version = *rv;
  auto spec = JsonObject(*j, "spec", "Lease.spec");
  if (!spec.ok()) return spec.status();
  if (!*spec) return r;  // no spec: nobody holds it
  if (!(*spec)->is_object()) return absl::InvalidArgumentError("Lease.spec: expected an object");
  const Json& s = **spec;
  auto holder = JsonString(s, "holderIdentity", "Lease.spec.holderIdentity");
  if (!holder.ok()) return holder.status();
  auto duration = JsonInt(s, "leaseDurationSeconds", "Lease.spec.leaseDurationSeconds");
  if (!duration.ok()) return duration.status();
  auto transitions = JsonInt(s, "leaseTransitions", "Lease.spec.leaseTransitions");
  if (!transitions.ok()) return transitions.status();
  auto acquire = JsonString(s, "acquireTime", "Lease.spec.acquireTime");
  if (!acquire.ok()) return acquire.status();
  auto renew = JsonString(s, "renewTime", "Lease.spec.renewTime");
  if (!renew.ok()) return renew.status();
  if (*duration < 0 || *duration > kMaxInt32 || *transitions < 0 || *transitions > kMaxInt32) {
    return absl::InvalidArgumentError(
        "Lease.spec: leaseDurationSeconds/leaseTransitions out of range");
  }
  r.holder = *holder;
  r.lease_duration_seconds = *duration;
  r.transitions = *transitions;
  r.acquire_time = *acquire;
  r.renew_time = *renew;
  return r;
}

std::string MakeLeaderIdentity() {
  std::string base;
  if (const char* pod = std::getenv("POD_NAME"); pod && *pod) base = pod;
  if (base.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) == 0) base = host;
  }
  if (base.empty()) base = "topogangd";
  if (base.size() > 200) base.resize(200);
  std::random_device rd;
  return absl::StrCat(base, "_", absl::Hex(rd(), absl::kZeroPad8), absl::Hex(rd() & 0xffff));
}

std::string DefaultLeaseNamespace(const std::string& service_account_dir) {
  auto ns = ReadFileToString(service_account_dir + "/namespace", 1024);
  if (ns.ok()) {
    std::string s(absl::StripAsciiWhitespace(*ns));
    if (IsDnsLabel(s)) return s;
  }
  return "kube-system";
}

LeaderElector::LeaderElector(std::shared_ptr<KubeClient> client, LeaderElectorOptions options,
                             LeaderCallbacks callbacks, const Clock& clock)
    : client_(std::move(client)),
      options_(std::move(options)),
      callbacks_(std::move(callbacks)),
      clock_(clock) {
  if (options_.identity.empty()) options_.identity = MakeLeaderIdentity();
}

LeaderElector::~LeaderElector() { Stop(); }

std::string LeaderElector::LeasePath() const {
  return absl::StrCat("/apis/coordination.k8s.io/v1/namespaces/",
                      PathEscape(options_.lease_namespace), "/leases/",
                      PathEscape(options_.lease_name));
}

std::string LeaderElector::LeaseJson(const LeaseRecord& r, bool with_rv) const {
  Json meta = {{"name", options_.lease_name}, {"namespace", options_.lease_namespace}};
  if (with_rv) meta["resourceVersion"] = r.resource_version;
  Json j = {{"apiVersion", "coordination.k8s.io/v1"},
            {"kind", "Lease"},
            {"metadata", meta},
            {"spec",
             {{"holderIdentity", r.holder},
              {"leaseDurationSeconds", r.lease_duration_seconds},
              {"acquireTime", r.acquire_time},
              {"renewTime", r.renew_time},
              {"leaseTransitions", r.transitions}}}};
  return DumpJson(j);
}

void LeaderElector::LogError(const std::string& msg) {
  // An outage repeats the same error every retry period: say it once.
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (msg == last_error_) return;
    last_error_ = msg;
  }
  Log(msg);
}

bool LeaderElector::TryAcquireOrRenew() {
  std::lock_guard<std::mutex> attempt(attempt_mu_);
  const absl::Time now = clock_.Now();
  const std::string now_str = FormatMicroTime(now);
  LeaseRecord mine;
  mine.holder = options_.identity;
  mine.lease_duration_seconds = CeilSeconds(options_.lease_duration);
  mine.acquire_time = now_str;
  mine.renew_time = now_str;

  auto got = client_->Get(LeasePath());
  if (!got.ok()) {
    LogError(std::string(got.status().message()));
    return false;
  }
  if (got->status == 404) {
    auto created = client_->Post(absl::StrCat("/apis/coordination.k8s.io/v1/namespaces/",
                                              PathEscape(options_.lease_namespace), "/leases"),
                                 LeaseJson(mine, false));
    if (!created.ok()) {
      LogError(std::string(created.status().message()));
      return false;
    }
    if (created->status != 201 && created->status != 200) {
      // 409 AlreadyExists: another replica created it first; read it next time.
      LogError(absl::StrCat("creating lease ", options_.lease_namespace, "/", options_.lease_name,
                            ": HTTP ", created->status, ": ", ApiMessage(*created)));
      return false;
    }
    observed_ = mine;
    observed_key_ = SpecKey(mine);
    observed_time_ = now;
    ClearError();
    if (callbacks_.on_new_leader) callbacks_.on_new_leader(mine.holder);
    return true;
  }
  if (got->status != 200) {
    LogError(absl::StrCat("reading lease ", options_.lease_namespace, "/", options_.lease_name,
                          ": HTTP ", got->status, ": ", ApiMessage(*got)));
    return false;
  }
  auto old = ParseLease(got->body);
  if (!old.ok()) {
    // Never act on a record we cannot read: we could not tell who holds it.
    LogError(absl::StrCat("lease ", options_.lease_namespace, "/", options_.lease_name,
                          " is unparseable (", old.status().message(), "); not taking it"));
    return false;
  }
  const std::string key = SpecKey(*old);
  if (!observed_ || key != observed_key_) {
    const bool new_holder = !observed_ || observed_->holder != old->holder;
    observed_ = *old;
    observed_key_ = key;
    observed_time_ = now;
    if (new_holder && callbacks_.on_new_leader) callbacks_.on_new_leader(old->holder);
  }
  observed_->resource_version = old->resource_version;
  const bool ours = old->holder == options_.identity;
  if (!old->holder.empty() && !ours) {
    const absl::Duration held = old->lease_duration_seconds > 0
                                    ? absl::Seconds(old->lease_duration_seconds)
                                    : options_.lease_duration;
    if (observed_time_ + held > now) return false;  // held by a live leader
  }
  if (ours) {
    mine.acquire_time = old->acquire_time;
    mine.transitions = old->transitions;
  } else {
    mine.transitions = old->transitions + 1;
  }
  mine.resource_version = old->resource_version;
  auto put = client_->Put(LeasePath(), LeaseJson(mine, true));
  if (!put.ok()) {
    LogError(std::string(put.status().message()));
    return false;
  }
  if (put->status != 200) {
    // 409 Conflict: the record changed since we read it (someone else renewed or took it).
    LogError(absl::StrCat("updating lease ", options_.lease_namespace, "/", options_.lease_name,
                          ": HTTP ", put->status, ": ", ApiMessage(*put)));
    return false;
  }
  if (auto written = ParseLease(put->body); written.ok()) {
    mine.resource_version = written->resource_version;
  }
  if (!ours && callbacks_.on_new_leader) callbacks_.on_new_leader(mine.holder);
  observed_ = mine;
  observed_key_ = SpecKey(mine);
  observed_time_ = now;
  ClearError();
  return true;
}

void LeaderElector::ClearError() {
  std::lock_guard<std::mutex> lock(mu_);
  last_error_.clear();
}

void LeaderElector::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stop_) return;
  started_ = true;
  Log(absl::StrCat("candidate ", options_.identity, " for lease ", options_.lease_namespace, "/",
                   options_.lease_name));
  loop_ = std::thread([this] { Loop(); });
  watchdog_ = std::thread([this] { Watchdog(); });
}

bool LeaderElector::IsLeader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leading_;
}

bool LeaderElector::Lost() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_;
}

bool LeaderElector::WaitLocked(std::unique_lock<std::mutex>& lock, absl::Duration d) {
  cv_.wait_for(lock, ToChrono(d), [this] { return stop_ || lost_; });
  return !stop_ && !lost_;
}

void LeaderElector::LoseLocked() {
  if (!leading_) return;
  leading_ = false;
  lost_ = true;
  cv_.notify_all();
}

void LeaderElector::AnnounceStarted() {
  std::lock_guard<std::mutex> cb(callback_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!leading_ || announced_) return;
    announced_ = true;
  }
  Log(absl::StrCat(options_.identity, " is now the leader"));
  if (callbacks_.on_started_leading) callbacks_.on_started_leading();
}

void LeaderElector::AnnounceStopped(const absl::Status& why) {
  std::lock_guard<std::mutex> cb(callback_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!announced_) return;
    announced_ = false;
  }
  Log(absl::StrCat(options_.identity,
                   " stopped leading: ", why.ok() ? "lease released" : why.message()));
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading(why);
}

absl::Status LeaderElector::LostStatus() {
  std::string last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last = last_error_;
  }
  return absl::UnavailableError(
      absl::StrCat("could not renew lease ", options_.lease_namespace, "/", options_.lease_name,
                   " within ", absl::FormatDuration(options_.renew_deadline),
                   last.empty() ? "" : " (last error: ", last, last.empty() ? "" : ")"));
}

void LeaderElector::Loop() {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> jitter(0.0, 1.2);  // client-go's JitterFactor
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_ && !lost_) {
    lock.unlock();
    const absl::Time start = clock_.Now();
    const bool ok = TryAcquireOrRenew();
    lock.lock();
    if (stop_ || lost_) break;
    bool started = false;
    if (ok) {
      last_renew_ = std::max(last_renew_, start);
      if (!leading_) {
        leading_ = true;
        started = true;
        cv_.notify_all();  // wakes the watchdog
      }
    } else if (leading_ && clock_.Now() - last_renew_ >= options_.renew_deadline) {
      LoseLocked();
      lock.unlock();
      AnnounceStopped(LostStatus());
      return;
    }
    if (started) {
      lock.unlock();
      AnnounceStarted();
      lock.lock();
      if (stop_ || lost_) break;
    }
    // A leader renews on the period; candidates spread their attempts like client-go.
    const absl::Duration wait =
        leading_ ? options_.retry_period : options_.retry_period * (1.0 + jitter(rng));
    if (!WaitLocked(lock, wait)) break;
  }
}

void LeaderElector::Watchdog() {
  // Declares the loss at the deadline even while an attempt hangs in a request.
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_ && !lost_) {
    if (!leading_) {
      cv_.wait(lock);
      continue;
    }
    const absl::Duration left = last_renew_ + options_.renew_deadline - clock_.Now();
    if (left <= absl::ZeroDuration()) {
      LoseLocked();
      lock.unlock();
      AnnounceStopped(LostStatus());
      return;
    }
    cv_.wait_for(lock, ToChrono(std::min(left, options_.retry_period) + absl::Milliseconds(1)));
  }
}

void LeaderElector::Release() {
  std::lock_guard<std::mutex> attempt(attempt_mu_);
  auto got = client_->Get(LeasePath());
  if (!got.ok() || got->status != 200) return;
  auto cur = ParseLease(got->body);
  if (!cur.ok() || cur->holder != options_.identity) return;  // not ours any more
  const std::string now = FormatMicroTime(clock_.Now());
  LeaseRecord released;
  released.holder = "";
  released.lease_duration_seconds = 1;
  released.acquire_time = now;
  released.renew_time = now;
  released.transitions = cur->transitions;
  released.resource_version = cur->resource_version;
  auto put = client_->Put(LeasePath(), LeaseJson(released, true));
  if (!put.ok() || put->status != 200) {
    Log(absl::StrCat("releasing the lease failed (",
                     put.ok() ? ApiMessage(*put) : std::string(put.status().message()),
                     "); a standby takes over when it expires"));
  }
}

void LeaderElector::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
    cv_.notify_all();
  }
  if (loop_.joinable()) loop_.join();
  if (watchdog_.joinable()) watchdog_.join();
  bool was_leader = false, lost = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    was_leader = leading_;
    lost = lost_;
  }
  // Release while still counted as leader: the caller stopped serving before calling Stop().
  // Also when an attempt won the lease just as we were stopping (it is ours on the server).
  bool holds = false;
  {
    std::lock_guard<std::mutex> attempt(attempt_mu_);
    holds = observed_ && observed_->holder == options_.identity;
  }
  if (!lost && (was_leader || holds)) Release();
  {
    std::lock_guard<std::mutex> lock(mu_);
    leading_ = false;
  }
  if (was_leader) AnnounceStopped(absl::OkStatus());
}

}  // namespace topogang
