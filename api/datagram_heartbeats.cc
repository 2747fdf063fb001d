#include "api/datagram_heartbeats.h"

#include <netdb.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/heartbeat_datagram.h"

namespace topogang {

namespace {

constexpr int kBatch = 64;  // datagrams per recvmmsg

}  // namespace

absl::StatusOr<std::unique_ptr<DatagramHeartbeats>> DatagramHeartbeats::Start(
    HeartbeatMonitor& monitor, const Clock& clock, DatagramHeartbeatOptions o) {
  std::unique_ptr<DatagramHeartbeats> d(new DatagramHeartbeats(monitor, clock, o));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string host = o.host.empty() ? "0.0.0.0" : o.host;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(o.port).c_str(), &hints, &res); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("datagram heartbeats: cannot resolve '", host, "': ", gai_strerror(rc)));
  }
  std::string last_error = "no address";
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0) {
      d->fd_ = fd;
      break;
    }
    last_error = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(res);
  if (d->fd_ < 0) {
    return absl::UnavailableError(
        absl::StrCat("datagram heartbeats: cannot bind UDP ", host, ":", o.port, ": ", last_error));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(d->fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  d->port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  d->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (d->wake_fd_ < 0) return absl::InternalError("datagram heartbeats: eventfd failed");
  RAND_bytes(reinterpret_cast<unsigned char*>(&d->next_epoch_), sizeof(d->next_epoch_));
  d->thread_ = std::thread([p = d.get()] { p->Loop(); });
  return d;
}

DatagramHeartbeats::~DatagramHeartbeats() { Stop(); }

void DatagramHeartbeats::Stop() {
  if (stop_.exchange(true)) return;
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  close(fd_);
  close(wake_fd_);
}

DatagramHeartbeats::Enrollment DatagramHeartbeats::Enroll(const std::string& node,
                                                          absl::Time expires) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, added] = ids_.try_emplace(node, static_cast<uint32_t>(entries_.size()));
  if (added) entries_.emplace_back();
  Entry& e = entries_[it->second];
  e.node = node;
  e.key = NewHeartbeatKey();
  e.epoch = ++next_epoch_;
  e.last_seq = 0;
  e.expires = expires;
  return {it->second, e.epoch, e.key};
}

std::string DatagramHeartbeats::Handle(absl::string_view bytes) {
  ++handled_;
  auto d = PeekHeartbeatDatagram(bytes);
  if (!d) {
    ++malformed_;
    return "";
  }
  std::string node;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (d->agent_id >= entries_.size() || entries_[d->agent_id].epoch != d->epoch) {
      ++stale_;  // an earlier daemon's or an earlier registration's: register again
      return EncodeReregisterDatagram(d->agent_id);
    }
    Entry& e = entries_[d->agent_id];
    if (!VerifyHeartbeatDatagram(bytes, e.key)) {
      ++forged_;
      return "";
    }
    if (clock_.Now() >= e.expires) {
      ++stale_;  // the credentials it registered with expired: register with the current ones
      return EncodeReregisterDatagram(d->agent_id);
    }
    if (d->seq <= e.last_seq) {
      ++replayed_;
      return "";
    }
    first = e.last_seq == 0;
    e.last_seq = d->seq;
    node = e.node;
  }
  ++accepted_;
  monitor_.Seen(node);
  // The registration's first: tell the agent its datagrams get through.
  return first ? EncodeAckDatagram(d->agent_id) : "";
}

void DatagramHeartbeats::Drain(double* reply_budget) {
  char bufs[kBatch][64];
  iovec iov[kBatch];
  mmsghdr msgs[kBatch];
  sockaddr_storage from[kBatch];
  for (;;) {
    for (int i = 0; i < kBatch; ++i) {
      iov[i] = {bufs[i], sizeof(bufs[i])};
      msgs[i] = {};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_name = &from[i];
      msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
    }
    const int n = recvmmsg(fd_, msgs, kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) return;
    for (int i = 0; i < n; ++i) {
      // A datagram longer than the buffer was cut (MSG_TRUNC): malformed, like any wrong size.
      const bool truncated = msgs[i].msg_hdr.msg_flags & MSG_TRUNC;
      const std::string reply =
          Handle(truncated ? absl::string_view() : absl::string_view(bufs[i], msgs[i].msg_len));
      // Acks answer datagrams with a valid MAC only, so they need no limit; "register again"
      // answers anything with the right shape and is limited (a spoofed source gets 8 bytes for
      // 36, at most max_replies_per_second of them).
      const bool limited = absl::StartsWith(reply, "TGR1");
      if (!reply.empty() && (!limited || *reply_budget >= 1)) {
        if (limited) *reply_budget -= 1;
        ++replies_;
        (void)sendto(fd_, reply.data(), reply.size(), MSG_DONTWAIT,
                     reinterpret_cast<sockaddr*>(&from[i]), msgs[i].msg_hdr.msg_namelen);
      }
    }
    { std::lock_guard<std::mutex> lock(wait_mu_); }
    wait_cv_.notify_all();
    if (n < kBatch) return;
  }
}

void DatagramHeartbeats::Loop() {
  double budget = options_.max_replies_per_second;
  absl::Time refilled = absl::Now();
  while (!stop_) {
    pollfd p[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(p, 2, -1) < 0 && errno != EINTR) break;
    if (stop_) break;
    const absl::Time now = absl::Now();
    budget = std::min<double>(
        options_.max_replies_per_second,
        budget + absl::ToDoubleSeconds(now - refilled) * options_.max_replies_per_second);
    refilled = now;
    Drain(&budget);
    // Let the next datagrams accumulate: one wakeup per batch instead of one per datagram.
    pollfd w = {wake_fd_, POLLIN, 0};
    (void)poll(&w, 1, static_cast<int>(absl::ToInt64Milliseconds(options_.batch)));
  }
}

DatagramHeartbeats::Counters DatagramHeartbeats::counters() const {
  return {accepted_.load(), forged_.load(),    replayed_.load(),
          stale_.load(),    malformed_.load(), replies_.load()};
}

bool DatagramHeartbeats::WaitHandled(int64_t n, absl::Duration limit) {
  std::unique_lock<std::mutex> lock(wait_mu_);
  return wait_cv_.wait_for(lock, absl::ToChronoNanoseconds(limit),
                           [&] { return handled_.load() >= n; });
}

}  // namespace topogang
