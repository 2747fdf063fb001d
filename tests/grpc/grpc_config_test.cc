// daemon.grpc config section -> GrpcServerOptions: defaults, a full section, and errors with
// positions.
#include "api/grpc_config.h"

#include <gmock/gmock.h>

#include "common/yaml_util.h"

namespace topogang {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<GrpcServerOptions> Parse(const std::string& text) {
  auto root = YamlParse(text, "cfg.yaml");
  if (!root.ok()) return root.status();
  return ParseGrpcConfig((*root)["grpc"], "cfg.yaml");
}

TEST(GrpcConfigTest, DefaultsWhenAbsent) {
  auto o = Parse("other: 1\n");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->address, "0.0.0.0:9090");
  EXPECT_EQ(o->heartbeat_interval, absl::Seconds(10));
  EXPECT_EQ(o->heartbeat_window, absl::Seconds(30));
  EXPECT_FALSE(o->allow_unauthenticated_agents);
  EXPECT_TRUE(o->fatal_xids.empty());  // the server then uses DefaultFatalXids()
}

TEST(GrpcConfigTest, FullSection) {
  auto o = Parse(R"(grpc:
  address: 127.0.0.1:7000
  tls: {cert: c.pem, key: k.pem, client_ca: ca.pem, require_client_cert: false}
  token_file: /secrets/tokens
  heartbeat_interval_seconds: 5
  heartbeat_window_seconds: 20
  monitor_period_ms: 500
  max_receive_bytes: 65536
  fatal_xids: [79, 48]
)");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->address, "127.0.0.1:7000");
  EXPECT_EQ(o->tls.client_ca_file, "ca.pem");
  EXPECT_FALSE(o->tls.require_client_cert);
  EXPECT_EQ(o->token_file, "/secrets/tokens");
  EXPECT_EQ(o->heartbeat_window, absl::Seconds(20));
  EXPECT_EQ(o->monitor_period, absl::Milliseconds(500));
  EXPECT_EQ(o->max_receive_bytes, 65536);
  EXPECT_THAT(o->fatal_xids, ::testing::ElementsAre(48, 79));
}

TEST(GrpcConfigTest, ErrorsNamePositions) {
  EXPECT_THAT(Parse("grpc:\n  adress: x\n").status().message(), HasSubstr("cfg.yaml:2"));
  EXPECT_THAT(Parse("grpc:\n  heartbeat_interval_seconds: 0\n").status().message(),
              HasSubstr("heartbeat_interval_seconds"));
  EXPECT_THAT(Parse("grpc:\n  heartbeat_interval_seconds: 60\n").status().message(),
              HasSubstr("at least"));
  EXPECT_THAT(Parse("grpc:\n  fatal_xids: [79, banana]\n").status().message(), HasSubstr("banana"));
  EXPECT_FALSE(Parse("grpc:\n  fatal_xids: []\n").ok());
  EXPECT_FALSE(Parse("grpc:\n  tls: {cert: a, colour: red}\n").ok());
  EXPECT_FALSE(Parse("grpc: [1, 2]\n").ok());
}

}  // namespace
}  // namespace topogang
