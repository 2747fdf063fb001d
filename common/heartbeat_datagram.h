// An agent's heartbeat as one UDP datagram, shared by the agent (which sends it) and topogangd
// (which checks it). Why not a gRPC message: topogangd's cost per agent was its per-message and
// per-call work (a wakeup and a callback per heartbeat, ~16 KiB of call state per open stream;
// docs/benchmarks.md measures each). A datagram costs neither, and the liveness it proves is the
// agent process itself, not just its kernel or gRPC threads.
//
// Layout, 36 bytes, integers big-endian:
//   0  "TGH1"  magic and version
//   4  u32     agent id    (from RegisterResponse)
//   8  u32     epoch       (from RegisterResponse; a new one at every Register)
//  12  u64     seq         (strictly increasing per registration)
//  20  16 B    HMAC-SHA256(key, bytes 0..19), first 16 bytes (key from RegisterResponse)
// The daemon answers the first valid datagram of a registration with the 8-byte "TGA1" + u32
// agent id (so the agent knows datagrams get through, and falls back to a stream when they do
// not), and one it cannot match to a live registration (unknown id, old epoch, expired
// credentials) with "TGR1" + u32 agent id: register again. Nothing else is ever answered.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace topogang {

inline constexpr size_t kHeartbeatDatagramSize = 36;
inline constexpr size_t kHeartbeatKeySize = 32;
inline constexpr size_t kReregisterDatagramSize = 8;

struct HeartbeatDatagram {
  uint32_t agent_id = 0;
  uint32_t epoch = 0;
  uint64_t seq = 0;
};

std::string EncodeHeartbeatDatagram(const HeartbeatDatagram& d, absl::string_view key);

// The fields, without checking the MAC (the receiver needs the id to find the key); nullopt
// unless exactly kHeartbeatDatagramSize bytes with the magic.
std::optional<HeartbeatDatagram> PeekHeartbeatDatagram(absl::string_view bytes);

// True when `bytes` is a datagram with a valid MAC under `key` (constant-time comparison).
bool VerifyHeartbeatDatagram(absl::string_view bytes, absl::string_view key);

std::string EncodeAckDatagram(uint32_t agent_id);
// The agent id of a "datagrams arrive" answer; nullopt for anything else.
std::optional<uint32_t> DecodeAckDatagram(absl::string_view bytes);
std::string EncodeReregisterDatagram(uint32_t agent_id);
// The agent id of a "register again" answer; nullopt for anything else.
std::optional<uint32_t> DecodeReregisterDatagram(absl::string_view bytes);

// kHeartbeatKeySize random bytes (OpenSSL's CSPRNG).
std::string NewHeartbeatKey();

}  // namespace topogang
