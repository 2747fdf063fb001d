#include "agent/heartbeat_sender.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/heartbeat_datagram.h"

namespace topogang::agent {

namespace {

// "dns:///host:port" / "host:port" / "[v6]:port" -> host.
std::string HostOf(absl::string_view target) {
  absl::ConsumePrefix(&target, "dns:///");
  absl::ConsumePrefix(&target, "ipv4:");
  absl::ConsumePrefix(&target, "ipv6:");
  const size_t colon = target.rfind(':');
  absl::string_view host = colon == absl::string_view::npos ? target : target.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::string(host);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HeartbeatSender>> HeartbeatSender::Open(
    const std::string& server, int udp_port, uint32_t agent_id, uint32_t epoch, std::string key) {
  if (udp_port <= 0 || udp_port > 65535 || key.size() != kHeartbeatKeySize) {
    return absl::InvalidArgumentError(
        "daemon offered datagram heartbeats without a usable port "
        "or key");
  }
  const std::string host = HostOf(server);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(udp_port).c_str(), &hints, &res); rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", gai_strerror(rc)));
  }
  int fd = -1;
  std::string error = "no address";
  for (addrinfo* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      error = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("datagram heartbeats to ", host, ":", udp_port, ": ", error));
  }
  return std::unique_ptr<HeartbeatSender>(new HeartbeatSender(fd, agent_id, epoch, std::move(key)));
}

HeartbeatSender::~HeartbeatSender() { close(fd_); }

absl::Status HeartbeatSender::CheckAnswers() {
  char buf[64];
  for (;;) {
    const ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return absl::OkStatus();
      // ECONNREFUSED: an ICMP port unreachable for an earlier datagram, nothing listens there.
      return absl::UnavailableError(
          absl::StrCat("heartbeat datagrams refused (", std::strerror(errno), ")"));
    }
    const absl::string_view answer(buf, static_cast<size_t>(n));
    if (auto ack = DecodeAckDatagram(answer); ack && *ack == agent_id_) confirmed_ = true;
    auto id = DecodeReregisterDatagram(answer);
    if (id && *id == agent_id_) {
      reregister_asked_ = true;
      return absl::UnavailableError(
          "the daemon does not know this registration; registering again");
    }
  }
}

absl::Status HeartbeatSender::Send() {
  if (absl::Status s = CheckAnswers(); !s.ok()) return s;
  const std::string d = EncodeHeartbeatDatagram({agent_id_, epoch_, ++seq_}, key_);
  if (send(fd_, d.data(), d.size(), MSG_DONTWAIT) < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
    return absl::UnavailableError(
        absl::StrCat("heartbeat datagram not sent (", std::strerror(errno), ")"));
  }
  return absl::OkStatus();
}

}  // namespace topogang::agent
