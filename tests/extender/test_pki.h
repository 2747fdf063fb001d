// Certificates made at test time with OpenSSL's C API: nothing in the repository that expires.
// EC P-256 keys (fast to generate), SHA-256 signatures, valid from an hour ago for a day.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace topogang::testing {

struct Pem {
  std::string cert;  // PEM certificate
  std::string key;   // PEM private key (unencrypted)
};

class TestCa {
 public:
  explicit TestCa(const std::string& common_name);
  ~TestCa();
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;

  const std::string& cert_pem() const { return pem_.cert; }
  // A server certificate for IP 127.0.0.1 and DNS localhost (extendedKeyUsage serverAuth).
  Pem IssueServer(const std::string& common_name, uint64_t serial) const;
  // A client certificate (extendedKeyUsage clientAuth), as kube-scheduler would present.
  Pem IssueClient(const std::string& common_name, uint64_t serial) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Pem pem_;
};

// Uppercase hex in whole bytes, as OpenSSL's BN_bn2hex prints serials: 200 -> "C8", 300 -> "012C".
std::string SerialHex(uint64_t serial);

}  // namespace topogang::testing
