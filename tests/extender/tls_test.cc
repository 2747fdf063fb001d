// The extender port under TLS, over 127.0.0.1: HTTPS, mTLS (no certificate, a certificate from
// another CA), rotation through a Kubernetes-style `..data` symlink swap, corrupt new files, the
// plain health port. Certificates are made at test time (test_pki.h). Bounds (slow loris, body
// sizes, in-flight bytes, connection cap) are in transport_limits_test.cc.
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/match.h"
#include "tests/extender/test_pki.h"
#include "tests/extender/transport_test_util.h"

namespace topogang {
namespace {

namespace fs = std::filesystem;
using testing::Pem;
using testing::SerialHex;
using testing::TestCa;

// A blocking OpenSSL client that verifies the server as kube-scheduler does with a caFile
// (chain to `ca_pem`, IP SAN 127.0.0.1), optionally presenting a client certificate.
class TlsConn {
 public:
  TlsConn(int port, const std::string& ca_pem, const Pem* client = nullptr) : raw_(port) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    BIO* b = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
    while (X509* x = PEM_read_bio_X509(b, nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_), x);
      X509_free(x);
    }
    BIO_free(b);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (client != nullptr) {
      b = BIO_new_mem_buf(client->cert.data(), static_cast<int>(client->cert.size()));
      X509* x = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
      BIO_free(b);
      b = BIO_new_mem_buf(client->key.data(), static_cast<int>(client->key.size()));
      EVP_PKEY* k = PEM_read_bio_PrivateKey(b, nullptr, nullptr, nullptr);
      BIO_free(b);
      SSL_CTX_use_certificate(ctx_, x);
      SSL_CTX_use_PrivateKey(ctx_, k);
      X509_free(x);
      EVP_PKEY_free(k);
    }
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, raw_.fd());
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
    ERR_clear_error();
    handshake_ok_ = SSL_connect(ssl_) == 1;
    if (!handshake_ok_) error_ = Errors();
    if (X509* peer = SSL_get1_peer_certificate(ssl_)) {
      BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(peer), nullptr);
      char* hex = BN_bn2hex(bn);
      serial_ = hex;
      OPENSSL_free(hex);
      BN_free(bn);
      X509_free(peer);
    }
  }
  ~TlsConn() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
  }
  bool handshake_ok() const { return handshake_ok_; }
  const std::string& serial() const { return serial_; }  // the server certificate's, in hex
  const std::string& error() const { return error_; }

  // One request/response; status 0 when the connection failed (error() says how).
  testing::HttpResponse Request(const std::string& raw) {
    if (!handshake_ok_) return {};
    ERR_clear_error();
    if (SSL_write(ssl_, raw.data(), static_cast<int>(raw.size())) <= 0) {
      error_ = Errors();
      return {};
    }
    return testing::ReadResponse(buf_, [this](char* p, size_t n) {
      int r = SSL_read(ssl_, p, static_cast<int>(n));
      if (r <= 0) error_ = Errors();
      return r;
    });
  }
  int Get(const std::string& path) {
    return Request(absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")).status;
  }

 private:
  static std::string Errors() {
    std::string out;
    while (unsigned long e = ERR_get_error()) {
      char buf[256];
      ERR_error_string_n(e, buf, sizeof(buf));
      absl::StrAppend(&out, out.empty() ? "" : "; ", buf);
    }
    return out.empty() ? "connection closed" : out;
  }

  testing::RawSocket raw_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  bool handshake_ok_ = false;
  std::string serial_, error_, buf_;
};

// A mounted Secret as the kubelet writes it: tls.crt -> ..data/tls.crt, ..data -> ..<version>,
// and an update swaps ..data in one rename.
class SecretDir {
 public:
  SecretDir() {
    std::string tmpl = (fs::temp_directory_path() / "topogang-tls-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
  }
  ~SecretDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void Write(const std::map<std::string, std::string>& files) {
    const fs::path version = dir_ / absl::StrCat("..v", ++version_);
    fs::create_directory(version);
    for (const auto& [name, text] : files) {
      std::ofstream(version / name) << text;
      if (!fs::exists(fs::symlink_status(dir_ / name))) {
        fs::create_symlink(fs::path("..data") / name, dir_ / name);
      }
    }
    fs::create_symlink(version.filename(), dir_ / "..data_tmp");
    fs::rename(dir_ / "..data_tmp", dir_ / "..data");
  }

 private:
  fs::path dir_;
  int version_ = 0;
};

HttpTransportOptions Tls(const SecretDir& d, bool mtls) {
  HttpTransportOptions t;
  t.tls.cert_file = d.Path("tls.crt");
  t.tls.key_file = d.Path("tls.key");
  if (mtls) t.tls.client_ca_file = d.Path("ca.crt");
  t.tls_reload_interval_ms = 20;
  return t;
}

TEST(TlsTest, ServesHttpsAndRefusesPlainHttpOnTheSamePort) {
  TestCa ca("server-ca");
  SecretDir d;
  Pem server = ca.IssueServer("topogangd", 100);
  d.Write({{"tls.crt", server.cert}, {"tls.key", server.key}});
  testing::TransportServer s(Tls(d, false));
  ASSERT_TRUE(s.started.ok()) << s.started;
  EXPECT_TRUE(absl::StartsWith(s.server->BaseUrl(), "https://127.0.0.1:"));
  TlsConn c(s.server->port(), ca.cert_pem());
  ASSERT_TRUE(c.handshake_ok()) << c.error();
  EXPECT_EQ(c.serial(), SerialHex(100));
  EXPECT_EQ(c.Get("/healthz"), 200);
  auto r = c.Request(testing::PostRequest("/filter", testing::CpuFilterBody()));
  ASSERT_EQ(r.status, 200) << c.error();
  EXPECT_TRUE(absl::StrContains(r.body, "\"NodeNames\"")) << r.body;
  EXPECT_TRUE(s.HasLog("extender TLS certificate: subject CN=topogangd")) << s.Logs();
  EXPECT_FALSE(s.HasLog("warning")) << s.Logs();

  // A client that does not trust the server's CA refuses it (what caFile is for).
  TestCa other("other-ca");
  TlsConn untrusted(s.server->port(), other.cert_pem());
  EXPECT_FALSE(untrusted.handshake_ok());
  // Plain HTTP to the HTTPS port gets no HTTP answer, and the server lives on.
  testing::RawSocket plain(s.server->port());
  ASSERT_TRUE(plain.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_GE(plain.MillisUntilClosed(2000), 0);
  EXPECT_EQ(TlsConn(s.server->port(), ca.cert_pem()).Get("/healthz"), 200);
}

TEST(TlsTest, WithAClientCaOnlyClientsWithACertificateFromItAreServed) {
  TestCa ca("cluster-ca");
  TestCa rogue("rogue-ca");
  SecretDir d;
  Pem server = ca.IssueServer("topogangd", 7);
  d.Write({{"tls.crt", server.cert}, {"tls.key", server.key}, {"ca.crt", ca.cert_pem()}});
  testing::TransportServer s(Tls(d, true));
  ASSERT_TRUE(s.started.ok()) << s.started;

  const Pem scheduler = ca.IssueClient("kube-scheduler", 8);
  TlsConn good(s.server->port(), ca.cert_pem(), &scheduler);
  ASSERT_TRUE(good.handshake_ok()) << good.error();
  EXPECT_EQ(good.Get("/healthz"), 200);
  EXPECT_EQ(good.Request(testing::PostRequest("/filter", testing::CpuFilterBody())).status, 200);

  TlsConn none(s.server->port(), ca.cert_pem());
  EXPECT_EQ(none.Get("/healthz"), 0);  // TLS 1.3: the refusal arrives after the handshake
  EXPECT_TRUE(absl::StrContains(none.error(), "certificate required")) << none.error();

  const Pem impostor = rogue.IssueClient("kube-scheduler", 8);
  TlsConn foreign(s.server->port(), ca.cert_pem(), &impostor);
  EXPECT_EQ(foreign.Get("/healthz"), 0);
  EXPECT_TRUE(absl::StrContains(foreign.error(), "unknown ca")) << foreign.error();

  // A server certificate from the right CA is not a client certificate (no clientAuth usage).
  TlsConn wrong_usage(s.server->port(), ca.cert_pem(), &server);
  EXPECT_EQ(wrong_usage.Get("/healthz"), 0);
  EXPECT_TRUE(s.HasLog("TLS handshake from 127.0.0.1:")) << s.Logs();  // one line, rate-limited
}

TEST(TlsTest, RotatedFilesAreServedToNewConnectionsWithoutARestart) {
  TestCa ca("ca-1");
  SecretDir d;
  Pem first = ca.IssueServer("topogangd", 100);
  d.Write({{"tls.crt", first.cert}, {"tls.key", first.key}, {"ca.crt", ca.cert_pem()}});
  testing::TransportServer s(Tls(d, true));
  ASSERT_TRUE(s.started.ok()) << s.started;
  const Pem client1 = ca.IssueClient("kube-scheduler", 5);
  TlsConn before(s.server->port(), ca.cert_pem(), &client1);
  ASSERT_EQ(before.Get("/healthz"), 200) << before.error();
  EXPECT_EQ(before.serial(), SerialHex(100));

  // cert-manager renews the certificate and, here, the client CA too; the kubelet swaps ..data.
  TestCa ca2("ca-2");
  Pem second = ca2.IssueServer("topogangd", 200);
  const std::string both_cas = ca.cert_pem() + ca2.cert_pem();  // server trusted during rollover
  d.Write({{"tls.crt", second.cert}, {"tls.key", second.key}, {"ca.crt", ca2.cert_pem()}});
  ASSERT_TRUE(testing::WaitFor([&] { return s.server->tls_reloads() == 1; })) << s.Logs();
  const Pem client2 = ca2.IssueClient("kube-scheduler", 6);
  TlsConn after(s.server->port(), both_cas, &client2);
  ASSERT_EQ(after.Get("/healthz"), 200) << after.error();
  EXPECT_EQ(after.serial(), SerialHex(200));
  EXPECT_TRUE(s.HasLog(
      absl::StrCat("reloaded: subject CN=topogangd,O=topogang tests, serial ", SerialHex(200))))
      << s.Logs();
  // A client certificate from the retired CA is refused on new connections...
  TlsConn retired(s.server->port(), both_cas, &client1);
  EXPECT_EQ(retired.Get("/healthz"), 0);
  // ... while a connection opened before the rotation keeps its session.
  EXPECT_EQ(before.Get("/healthz"), 200) << before.error();
  EXPECT_EQ(s.server->tls_reload_failures(), 0);
}

TEST(TlsTest, FilesThatDoNotLoadKeepThePreviousCertificateServing) {
  TestCa ca("ca");
  SecretDir d;
  Pem good = ca.IssueServer("topogangd", 100);
  d.Write({{"tls.crt", good.cert}, {"tls.key", good.key}});
  testing::TransportServer s(Tls(d, false));
  ASSERT_TRUE(s.started.ok()) << s.started;

  d.Write({{"tls.crt", "-----BEGIN CERTIFICATE-----\ngarbage\n"}, {"tls.key", good.key}});
  ASSERT_TRUE(testing::WaitFor([&] { return s.server->tls_reload_failures() == 1; })) << s.Logs();
  EXPECT_TRUE(s.HasLog("still serving the previous certificate: cert_file")) << s.Logs();
  TlsConn c1(s.server->port(), ca.cert_pem());
  EXPECT_EQ(c1.serial(), SerialHex(100));
  EXPECT_EQ(c1.Get("/healthz"), 200);

  // A renewed certificate whose key has not been written yet: refused, old one kept.
  Pem next = ca.IssueServer("topogangd", 300);
  d.Write({{"tls.crt", next.cert}, {"tls.key", good.key}});
  ASSERT_TRUE(testing::WaitFor([&] { return s.server->tls_reload_failures() == 2; })) << s.Logs();
  EXPECT_TRUE(s.HasLog("does not match")) << s.Logs();
  EXPECT_EQ(TlsConn(s.server->port(), ca.cert_pem()).serial(), SerialHex(100));
  // The same bad contents are reported once, not on every check.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(s.server->tls_reload_failures(), 2);

  d.Write({{"tls.crt", next.cert}, {"tls.key", next.key}});
  ASSERT_TRUE(testing::WaitFor([&] { return s.server->tls_reloads() == 1; })) << s.Logs();
  EXPECT_EQ(TlsConn(s.server->port(), ca.cert_pem()).serial(), SerialHex(300));
}

TEST(TlsTest, AStalledHandshakeIsDroppedAtTheReadTimeout) {
  TestCa ca("ca");
  SecretDir d;
  Pem server = ca.IssueServer("topogangd", 1);
  d.Write({{"tls.crt", server.cert}, {"tls.key", server.key}});
  HttpTransportOptions t = Tls(d, false);
  t.read_timeout_ms = 200;
  testing::TransportServer s(std::move(t));
  ASSERT_TRUE(s.started.ok()) << s.started;
  testing::RawSocket silent(s.server->port());  // connects, never says hello
  testing::RawSocket half(s.server->port());
  ASSERT_TRUE(half.Send(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11)));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_GE(silent.MillisUntilClosed(3000), 150);
  EXPECT_GE(half.MillisUntilClosed(3000), 0);  // at about the same moment
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(TlsConn(s.server->port(), ca.cert_pem()).Get("/healthz"), 200);
}

TEST(TlsTest, StartFailsWithAnErrorNamingTheBadFile) {
  TestCa ca("ca");
  SecretDir d;
  Pem a = ca.IssueServer("a", 1), b = ca.IssueServer("b", 2);
  d.Write({{"tls.crt", a.cert}, {"tls.key", b.key}, {"ca.crt", "not a certificate"}});
  auto start = [&](HttpTransportOptions t) {
    testing::TransportServer s(std::move(t));
    return std::string(s.started.message());
  };
  HttpTransportOptions missing = Tls(d, false);
  missing.tls.cert_file = d.Path("nope.crt");
  EXPECT_TRUE(absl::StrContains(start(missing), "cert_file")) << start(missing);
  EXPECT_TRUE(absl::StrContains(start(missing), "nope.crt")) << start(missing);
  EXPECT_TRUE(absl::StrContains(start(Tls(d, false)), "does not match")) << start(Tls(d, false));
  d.Write({{"tls.crt", a.cert}, {"tls.key", a.key}, {"ca.crt", "not a certificate"}});
  EXPECT_EQ(start(Tls(d, false)), "");
  EXPECT_TRUE(absl::StrContains(start(Tls(d, true)), "client_ca_file")) << start(Tls(d, true));
}

TEST(TlsTest, TheHealthPortServesProbesInPlainHttpAndNothingElse) {
  TestCa ca("ca");
  SecretDir d;
  Pem server = ca.IssueServer("topogangd", 1);
  d.Write({{"tls.crt", server.cert}, {"tls.key", server.key}, {"ca.crt", ca.cert_pem()}});
  HttpTransportOptions t = Tls(d, true);
  t.health_port = 0;
  testing::TransportServer s(std::move(t));
  ASSERT_TRUE(s.started.ok()) << s.started;
  ASSERT_GT(s.server->health_port(), 0);
  ASSERT_NE(s.server->health_port(), s.server->port());
  testing::RawSocket c(s.server->health_port());
  for (const char* path : {"/healthz", "/readyz"}) {
    ASSERT_TRUE(c.Send(absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: x\r\n\r\n")));
    EXPECT_EQ(c.Read().status, 200) << path;
  }
  ASSERT_TRUE(c.Send(testing::PostRequest("/filter", testing::CpuFilterBody())));
  EXPECT_EQ(c.Read().status, 404);
  ASSERT_TRUE(c.Send("GET /stats HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(c.Read().status, 404);
  // The verb port still wants a client certificate.
  EXPECT_EQ(TlsConn(s.server->port(), ca.cert_pem()).Get("/healthz"), 0);
}

TEST(TlsTest, PlainHttpOffLoopbackIsWarnedAbout) {
  EXPECT_NE(PlainHttpWarning("0.0.0.0", {}), "");
  EXPECT_NE(PlainHttpWarning("10.1.2.3", {}), "");
  EXPECT_NE(PlainHttpWarning("::", {}), "");
  EXPECT_EQ(PlainHttpWarning("127.0.0.1", {}), "");
  EXPECT_EQ(PlainHttpWarning("::1", {}), "");
  EXPECT_EQ(PlainHttpWarning("0.0.0.0", {"/c", "/k", ""}), "");
  EXPECT_TRUE(absl::StrContains(PlainHttpWarning("0.0.0.0", {}), "docs/security.md"));
  testing::TransportServer s{HttpTransportOptions{}};  // 127.0.0.1: nothing to warn about
  ASSERT_TRUE(s.started.ok());
  EXPECT_FALSE(s.HasLog("warning")) << s.Logs();
}

}  // namespace
}  // namespace topogang
