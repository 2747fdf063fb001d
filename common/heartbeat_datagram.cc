#include "common/heartbeat_datagram.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdlib>

namespace topogang {

namespace {

constexpr size_t kSigned = 20;  // bytes covered by the MAC
constexpr size_t kMacSize = 16;

void PutU32(std::string* out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out->push_back(static_cast<char>((v >> s) & 0xff));
}
void PutU64(std::string* out, uint64_t v) {
  for (int s = 56; s >= 0; s -= 8) out->push_back(static_cast<char>((v >> s) & 0xff));
}
uint64_t Get(absl::string_view b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

// The first kMacSize bytes of HMAC-SHA256(key, signed).
bool Mac(absl::string_view key, absl::string_view signed_part, unsigned char out[32]) {
  unsigned int len = 0;
  return HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
              reinterpret_cast<const unsigned char*>(signed_part.data()), signed_part.size(), out,
              &len) != nullptr &&
         len >= kMacSize;
}

}  // namespace

std::string EncodeHeartbeatDatagram(const HeartbeatDatagram& d, absl::string_view key) {
  std::string out = "TGH1";
  PutU32(&out, d.agent_id);
  PutU32(&out, d.epoch);
  PutU64(&out, d.seq);
  unsigned char mac[32];
  if (!Mac(key, out, mac)) std::abort();  // only when OpenSSL itself is broken
  out.append(reinterpret_cast<const char*>(mac), kMacSize);
  return out;
}

std::optional<HeartbeatDatagram> PeekHeartbeatDatagram(absl::string_view b) {
  if (b.size() != kHeartbeatDatagramSize || b.substr(0, 4) != "TGH1") return std::nullopt;
  return HeartbeatDatagram{static_cast<uint32_t>(Get(b, 4, 4)), static_cast<uint32_t>(Get(b, 8, 4)),
                           Get(b, 12, 8)};
}

bool VerifyHeartbeatDatagram(absl::string_view b, absl::string_view key) {
  if (b.size() != kHeartbeatDatagramSize || key.empty()) return false;
  unsigned char mac[32];
  if (!Mac(key, b.substr(0, kSigned), mac)) return false;
  return CRYPTO_memcmp(mac, b.data() + kSigned, kMacSize) == 0;
}

std::string EncodeAckDatagram(uint32_t agent_id) {
  std::string out = "TGA1";
  PutU32(&out, agent_id);
  return out;
}

std::optional<uint32_t> DecodeAckDatagram(absl::string_view b) {
  if (b.size() != kReregisterDatagramSize || b.substr(0, 4) != "TGA1") return std::nullopt;
  return static_cast<uint32_t>(Get(b, 4, 4));
}

std::string EncodeReregisterDatagram(uint32_t agent_id) {
  std::string out = "TGR1";
  PutU32(&out, agent_id);
  return out;
}

std::optional<uint32_t> DecodeReregisterDatagram(absl::string_view b) {
  if (b.size() != kReregisterDatagramSize || b.substr(0, 4) != "TGR1") return std::nullopt;
  return static_cast<uint32_t>(Get(b, 4, 4));
}

std::string NewHeartbeatKey() {
  std::string key(kHeartbeatKeySize, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1) {
    std::abort();  // no randomness: refusing to hand out guessable keys
  }
  return key;
}

}  // namespace topogang
