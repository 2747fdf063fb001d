#include "tests/extender/test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <stdexcept>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace topogang::testing {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* x) const { X509_free(x); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using CertPtr = std::unique_ptr<X509, CertFree>;

void Check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(absl::StrCat("test PKI: ", what, " failed"));
}

KeyPtr NewKey() {
  KeyPtr k(EVP_EC_gen("P-256"));
  Check(k != nullptr, "EVP_EC_gen");
  return k;
}

void AddExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Check(ext != nullptr, "X509V3_EXT_conf_nid");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// `issuer` null: self-signed with `key`.
CertPtr MakeCert(EVP_PKEY* key, const std::string& cn, uint64_t serial, X509* issuer,
                 EVP_PKEY* issuer_key, const std::vector<std::pair<int, const char*>>& exts) {
  CertPtr x(X509_new());
  X509_set_version(x.get(), 2);
  ASN1_INTEGER_set_uint64(X509_get_serialNumber(x.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), 86400);
  X509_set_pubkey(x.get(), key);
  X509_NAME* name = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("topogang tests"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x.get(), issuer ? X509_get_subject_name(issuer) : name);
  for (const auto& [nid, value] : exts) AddExt(x.get(), issuer ? issuer : x.get(), nid, value);
  Check(X509_sign(x.get(), issuer_key ? issuer_key : key, EVP_sha256()) > 0, "X509_sign");
  return x;
}

std::string CertPem(X509* x) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(b, x);
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string s(data, static_cast<size_t>(n));
  BIO_free(b);
  return s;
}

std::string KeyPem(EVP_PKEY* k) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(b, k, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string s(data, static_cast<size_t>(n));
  BIO_free(b);
  return s;
}

}  // namespace

struct TestCa::Impl {
  KeyPtr key;
  CertPtr cert;
  Pem Issue(const std::string& cn, uint64_t serial, const char* eku, const char* san) const {
    KeyPtr k = NewKey();
    std::vector<std::pair<int, const char*>> exts = {{NID_basic_constraints, "critical,CA:FALSE"},
                                                     {NID_key_usage, "critical,digitalSignature"},
                                                     {NID_ext_key_usage, eku}};
    if (san != nullptr) exts.push_back({NID_subject_alt_name, san});
    CertPtr c = MakeCert(k.get(), cn, serial, cert.get(), key.get(), exts);
    return {CertPem(c.get()), KeyPem(k.get())};
  }
};

TestCa::TestCa(const std::string& common_name) : impl_(std::make_unique<Impl>()) {
  impl_->key = NewKey();
  impl_->cert = MakeCert(impl_->key.get(), common_name, 1, nullptr, nullptr,
                         {{NID_basic_constraints, "critical,CA:TRUE"},
                          {NID_key_usage, "critical,keyCertSign,cRLSign"},
                          {NID_subject_key_identifier, "hash"}});
  pem_ = {CertPem(impl_->cert.get()), KeyPem(impl_->key.get())};
}

TestCa::~TestCa() = default;

Pem TestCa::IssueServer(const std::string& cn, uint64_t serial) const {
  return impl_->Issue(cn, serial, "serverAuth", "IP:127.0.0.1,DNS:localhost");
}

Pem TestCa::IssueClient(const std::string& cn, uint64_t serial) const {
  return impl_->Issue(cn, serial, "clientAuth", nullptr);
}

std::string SerialHex(uint64_t serial) {
  std::string hex = absl::StrFormat("%X", serial);
  return hex.size() % 2 == 1 ? "0" + hex : hex;
}

}  // namespace topogang::testing
