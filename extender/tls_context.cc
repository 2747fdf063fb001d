#include "extender/tls_context.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ssl/context.hpp>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"

namespace topogang {
namespace {

namespace ssl = boost::asio::ssl;
constexpr size_t kMaxPemBytes = 1u << 20;

// The most specific message left in OpenSSL's error queue (which is then empty).
std::string OpenSslError(absl::string_view fallback) {
  unsigned long last = 0;
  while (unsigned long e = ERR_get_error()) last = e;
  if (last == 0) return std::string(fallback);
  char buf[256];
  ERR_error_string_n(last, buf, sizeof(buf));
  const char* reason = ERR_reason_error_string(last);
  return reason != nullptr ? std::string(reason) : std::string(buf);
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;

BioPtr MemBio(const std::string& s) {
  return BioPtr(BIO_new_mem_buf(s.data(), static_cast<int>(s.size())));
}

std::string NameText(const X509_NAME* name) {
  BioPtr out(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(out.get(), name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  long n = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(n > 0 ? n : 0));
}

std::string SerialText(X509* cert) {
  BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
  if (bn == nullptr) return "?";
  char* hex = BN_bn2hex(bn);
  std::string s = hex != nullptr ? hex : "?";
  OPENSSL_free(hex);
  BN_free(bn);
  return s;
}

std::string TimeText(const ASN1_TIME* t) {
  BioPtr out(BIO_new(BIO_s_mem()));
  ASN1_TIME_print(out.get(), t);
  char* data = nullptr;
  long n = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(n > 0 ? n : 0));
}

// Every certificate in a PEM text; an error when there is none or one does not parse.
absl::StatusOr<std::vector<X509Ptr>> ParseCerts(const std::string& pem, absl::string_view what) {
  std::vector<X509Ptr> certs;
  BioPtr bio = MemBio(pem);
  ERR_clear_error();
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) certs.emplace_back(x);
  const unsigned long err = ERR_peek_last_error();
  const bool clean_end =
      ERR_GET_LIB(err) == ERR_LIB_PEM && ERR_GET_REASON(err) == PEM_R_NO_START_LINE;
  if (certs.empty() || (err != 0 && !clean_end)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": no PEM certificate could be read (", OpenSslError("empty"), ")"));
  }
  ERR_clear_error();
  return certs;
}

// Answers HTTP/1.1 when the client offers it (Go's transport offers h2 first); otherwise no ALPN.
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kHttp11, sizeof(kHttp11), in, inlen) ==
      OPENSSL_NPN_NEGOTIATED) {
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

}  // namespace

absl::StatusOr<TlsPem> ReadTlsFiles(const TlsFiles& files) {
  TlsPem pem;
  for (auto [key, path, out] :
       {std::tuple{"cert_file", &files.cert_file, &pem.cert},
        std::tuple{"key_file", &files.key_file, &pem.key},
        std::tuple{"client_ca_file", &files.client_ca_file, &pem.client_ca}}) {
    if (path->empty()) continue;
    auto text = ReadFileToString(*path, kMaxPemBytes);
    if (!text.ok())
      return absl::Status(text.status().code(), absl::StrCat(key, ": ", text.status().message()));
    *out = *std::move(text);
  }
  return pem;
}

absl::StatusOr<ServerTlsContext> BuildServerTlsContext(const TlsPem& pem, const TlsFiles& files) {
  const std::string cert_what = absl::StrCat("cert_file \"", files.cert_file, "\"");
  const std::string key_what = absl::StrCat("key_file \"", files.key_file, "\"");
  const std::string ca_what = absl::StrCat("client_ca_file \"", files.client_ca_file, "\"");
  if (pem.cert.empty()) return absl::InvalidArgumentError(absl::StrCat(cert_what, " is empty"));
  if (pem.key.empty()) return absl::InvalidArgumentError(absl::StrCat(key_what, " is empty"));

  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* c = ctx->native_handle();
  SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
  SSL_CTX_set_options(
      c, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // A bind held at its gang's barrier is an idle TLS connection: let it drop its 2 x 16 KiB.
  SSL_CTX_set_mode(c, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_alpn_select_cb(c, SelectAlpn, nullptr);

  boost::system::error_code ec;
  ERR_clear_error();
  ctx->use_certificate_chain(boost::asio::buffer(pem.cert), ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat(cert_what, ": not a PEM certificate chain (",
                                                   OpenSslError(ec.message()), ")"));
  }
  // Parsed apart from the certificate so that "not a key" and "not this certificate's key" are
  // told apart (OpenSSL reports both from SSL_CTX_use_PrivateKey).
  BioPtr key_bio = MemBio(pem.key);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(
      key_bio.get(), nullptr, [](char*, int, int, void*) { return 0; }, nullptr);
  if (key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        key_what, ": not an unencrypted PEM private key (", OpenSslError("unreadable"), ")"));
  }
  const int used = SSL_CTX_use_PrivateKey(c, key);
  EVP_PKEY_free(key);
  if (used != 1 || SSL_CTX_check_private_key(c) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(key_what, " does not match ", cert_what, " (",
                                                   OpenSslError("key mismatch"), ")"));
  }
  X509* leaf = SSL_CTX_get0_certificate(c);
  ServerTlsContext out;
  out.expired = X509_cmp_current_time(X509_get0_notAfter(leaf)) < 0;
  out.description =
      absl::StrCat("subject ", NameText(X509_get_subject_name(leaf)), ", serial ", SerialText(leaf),
                   ", not after ", TimeText(X509_get0_notAfter(leaf)));

  if (!files.client_ca_file.empty()) {
    auto cas = ParseCerts(pem.client_ca, ca_what);
    if (!cas.ok()) return cas.status();
    X509_STORE* store = SSL_CTX_get_cert_store(c);
    STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
    for (const X509Ptr& ca : *cas) {
      if (X509_STORE_add_cert(store, ca.get()) != 1) {
        const std::string why = OpenSslError("cannot add");
        sk_X509_NAME_pop_free(names, X509_NAME_free);
        return absl::InvalidArgumentError(absl::StrCat(ca_what, ": ", why));
      }
      sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(ca.get())));
    }
    SSL_CTX_set_client_CA_list(c, names);  // takes ownership
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    absl::StrAppend(&out.description,
                    ", client CA: ", NameText(X509_get_subject_name(cas->front().get())),
                    cas->size() > 1 ? absl::StrCat(" (+", cas->size() - 1, " more)") : "");
  } else {
    ctx->set_verify_mode(ssl::verify_none);
  }
  ERR_clear_error();
  out.context = std::move(ctx);
  return out;
}

}  // namespace topogang
