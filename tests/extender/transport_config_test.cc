// The extender transport's keys in the daemon config (daemon.tls, timeouts, in-flight bytes,
// health_port): defaults, values, and errors that name the key.
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "topogangd/daemon_config.h"

namespace topogang {
namespace {

std::string Error(const std::string& yaml) {
  auto c = ParseDaemonConfig(YAML::Load(yaml), "cfg.yaml");
  return c.ok() ? "" : std::string(c.status().message());
}

TEST(TransportConfigTest, DefaultsArePlainHttpWithBoundedReads) {
  auto d = ParseDaemonConfig(YAML::Node(), "x");
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->transport.tls.enabled());
  EXPECT_EQ(d->transport.read_timeout_ms, 10000);
  EXPECT_EQ(d->transport.idle_timeout_ms, 120000);
  EXPECT_EQ(d->transport.max_inflight_body_bytes, size_t{256} << 20);
  EXPECT_EQ(d->transport.health_port, -1);
}

TEST(TransportConfigTest, ReadsTlsTimeoutsAndTheHealthPort) {
  auto c = ParseDaemonConfig(
      YAML::Load("{tls: {cert_file: /t/tls.crt, key_file: /t/tls.key, client_ca_file: /t/ca.crt,"
                 " reload_interval_ms: 2000}, read_timeout_ms: 3000, idle_timeout_ms: 60000,"
                 " write_timeout_ms: 9000, max_inflight_body_bytes: 134217728,"
                 " health_port: 8889}"),
      "x");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->transport.tls.cert_file, "/t/tls.crt");
  EXPECT_EQ(c->transport.tls.key_file, "/t/tls.key");
  EXPECT_EQ(c->transport.tls.client_ca_file, "/t/ca.crt");
  EXPECT_EQ(c->transport.tls_reload_interval_ms, 2000);
  EXPECT_EQ(c->transport.read_timeout_ms, 3000);
  EXPECT_EQ(c->transport.idle_timeout_ms, 60000);
  EXPECT_EQ(c->transport.write_timeout_ms, 9000);
  EXPECT_EQ(c->transport.max_inflight_body_bytes, size_t{128} << 20);
  EXPECT_EQ(c->transport.health_port, 8889);
}

TEST(TransportConfigTest, ErrorsNameTheKey) {
  EXPECT_TRUE(absl::StrContains(Error("{tls: {cert_file: /c}}"),
                                "daemon.tls: cert_file is set "
                                "but key_file is not"));
  EXPECT_TRUE(absl::StrContains(Error("{tls: {key_file: /k}}"), "key_file is set but cert_file"));
  EXPECT_TRUE(absl::StrContains(Error("{tls: {client_ca_file: /ca}}"), "client_ca_file needs"));
  EXPECT_TRUE(absl::StrContains(Error("{tls: {cert: /c}}"), "cert"));  // a typo: unknown key
  EXPECT_TRUE(absl::StrContains(Error("{tls: /c}"), "daemon.tls: expected a mapping"));
  EXPECT_TRUE(absl::StrContains(Error("{tls: {cert_file: /c, key_file: /k, "
                                      "reload_interval_ms: -1}}"),
                                "reload_interval_ms"));
  EXPECT_TRUE(absl::StrContains(Error("{read_timeout_ms: 0}"), "read_timeout_ms"));
  EXPECT_TRUE(absl::StrContains(Error("{idle_timeout_ms: x}"), "idle_timeout_ms"));
  EXPECT_TRUE(absl::StrContains(Error("{max_inflight_body_bytes: 2048}"),
                                "max_inflight_body_bytes (2048) must be at least max_body_bytes"));
  EXPECT_TRUE(absl::StrContains(Error("{health_port: 8888}"), "health_port must differ"));
  EXPECT_TRUE(absl::StrContains(Error("{health_port: 70000}"), "health_port"));
  EXPECT_TRUE(absl::StrContains(Error("{tls: {cert_file: /c}}"), "cfg.yaml:"));  // where
}

}  // namespace
}  // namespace topogang
