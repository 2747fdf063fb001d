// What bounds a connection to the extender port, over 127.0.0.1 with a 200 ms read timeout so
// nothing waits for seconds: slow-loris headers and bodies are dropped at the deadline (which a
// trickle does not extend), idle keep-alive connections are not, oversized bodies get 413 (or the
// verb's Error), request bytes in flight across connections are capped, and so are connections.
#include <gtest/gtest.h>

#include "tests/extender/transport_test_util.h"

namespace topogang {
namespace {

using testing::PostRequest;
using testing::RawSocket;
using testing::TransportServer;

constexpr int kReadTimeoutMs = 200;
constexpr char kHealthz[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

HttpTransportOptions Fast() {
  HttpTransportOptions t;
  t.read_timeout_ms = kReadTimeoutMs;
  return t;
}

TEST(TransportLimitsTest, HalfSentHeadersAreDroppedAtTheReadTimeout) {
  TransportServer s(Fast());
  ASSERT_TRUE(s.started.ok()) << s.started;
  RawSocket c(s.server->port());
  ASSERT_TRUE(c.Send("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Le"));
  const int ms = c.MillisUntilClosed(3000);
  EXPECT_GE(ms, kReadTimeoutMs - 50);
  EXPECT_LE(ms, 2000) << "the half-sent request was not dropped";
  RawSocket after(s.server->port());  // and the server serves the next client
  ASSERT_TRUE(after.Send(kHealthz));
  EXPECT_EQ(after.Read().status, 200);
}

TEST(TransportLimitsTest, TricklingHeadersDoesNotExtendTheDeadline) {
  TransportServer s(Fast());
  ASSERT_TRUE(s.started.ok());
  RawSocket c(s.server->port());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.Send("GET /healthz HTTP/1.1\r\nX-Slow: "));
  bool closed = false;
  for (int i = 0; i < 80 && !closed; ++i) {  // one byte every 25 ms, for up to 2 s
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    if (!c.Send("a")) closed = true;
    pollfd p{c.fd(), POLLIN, 0};
    if (poll(&p, 1, 0) > 0) closed = true;
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(closed);
  EXPECT_LT(took, std::chrono::milliseconds(1500));
}

TEST(TransportLimitsTest, HalfSentBodiesAreDroppedAtTheReadTimeout) {
  TransportServer s(Fast());
  ASSERT_TRUE(s.started.ok());
  RawSocket c(s.server->port());
  std::string req = PostRequest("/filter", testing::CpuFilterBody());
  req.resize(req.size() - 50);
  ASSERT_TRUE(c.Send(req));
  const int ms = c.MillisUntilClosed(3000);
  EXPECT_GE(ms, kReadTimeoutMs - 50);
  EXPECT_LE(ms, 2000);
}

TEST(TransportLimitsTest, IdleKeepAliveConnectionsOutliveTheReadTimeout) {
  TransportServer s(Fast());
  ASSERT_TRUE(s.started.ok());
  RawSocket fresh(s.server->port()), used(s.server->port());
  ASSERT_TRUE(used.Send(kHealthz));
  ASSERT_EQ(used.Read().status, 200);
  // Twice the read timeout with nothing sent: only the idle timeout (120 s) applies.
  EXPECT_EQ(used.MillisUntilClosed(2 * kReadTimeoutMs), -1);
  ASSERT_TRUE(used.Send(kHealthz));
  EXPECT_EQ(used.Read().status, 200);
  ASSERT_TRUE(fresh.Send(kHealthz));
  EXPECT_EQ(fresh.Read().status, 200);
}

TEST(TransportLimitsTest, IdleConnectionsAreClosedAtTheIdleTimeout) {
  HttpTransportOptions t = Fast();
  t.idle_timeout_ms = 150;
  TransportServer s(t);
  ASSERT_TRUE(s.started.ok());
  RawSocket c(s.server->port());
  ASSERT_TRUE(c.Send(kHealthz));
  ASSERT_EQ(c.Read().status, 200);
  const int ms = c.MillisUntilClosed(3000);
  EXPECT_GE(ms, 100);
  EXPECT_LE(ms, 2000);
}

TEST(TransportLimitsTest, OversizedBodiesAreRefusedWith413OrTheVerbsError) {
  HttpServerOptions ho;
  ho.max_body_bytes = 4096;
  TransportServer s(Fast(), ho);
  ASSERT_TRUE(s.started.ok());
  const std::string big(10000, ' ');
  {
    RawSocket c(s.server->port());
    ASSERT_TRUE(c.Send(PostRequest("/prioritize", big)));
    auto r = c.Read();
    EXPECT_EQ(r.status, 413);
    EXPECT_TRUE(absl::StrContains(r.body, "exceeds the limit of 4096")) << r.body;
    EXPECT_GE(c.MillisUntilClosed(3000), 0);  // and the connection ends
  }
  {
    // kube-scheduler reads only 200 answers: filter says it in its Error field.
    RawSocket c(s.server->port());
    ASSERT_TRUE(c.Send(PostRequest("/filter", big)));
    auto r = c.Read();
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(absl::StrContains(r.body, "exceeds the limit")) << r.body;
  }
  RawSocket c(s.server->port());
  ASSERT_TRUE(c.Send(PostRequest("/filter", testing::CpuFilterBody())));
  EXPECT_EQ(c.Read().status, 200);
}

TEST(TransportLimitsTest, BodyBytesInFlightAcrossConnectionsAreCapped) {
  HttpServerOptions ho;
  ho.max_body_bytes = 8000;
  HttpTransportOptions t;
  t.max_inflight_body_bytes = 12000;
  TransportServer s(t, ho);
  ASSERT_TRUE(s.started.ok());
  const std::string body(7000, ' ');
  // A holds 7,000 bytes: its headers are read (the 100 Continue says so), its body not yet.
  RawSocket a(s.server->port());
  std::string head = PostRequest("/prioritize", body, "Expect: 100-continue\r\n");
  head.resize(head.size() - body.size());
  ASSERT_TRUE(a.Send(head));
  ASSERT_EQ(a.Read().status, 100);
  // B's 7,000 more would pass 12,000: refused before its body is read.
  {
    RawSocket b(s.server->port());
    ASSERT_TRUE(b.Send(PostRequest("/prioritize", body)));
    auto r = b.Read();
    EXPECT_EQ(r.status, 503);
    EXPECT_TRUE(absl::StrContains(r.body, "max_inflight_body_bytes")) << r.body;
  }
  // A small request still fits.
  RawSocket small(s.server->port());
  ASSERT_TRUE(small.Send(PostRequest("/filter", testing::CpuFilterBody())));
  EXPECT_EQ(small.Read().status, 200);
  // Once A's request is done its bytes are free again.
  ASSERT_TRUE(a.Send(body));
  EXPECT_EQ(a.Read().status, 400);  // not JSON; what matters is that it was read and answered
  RawSocket b(s.server->port());
  ASSERT_TRUE(b.Send(PostRequest("/prioritize", body)));
  EXPECT_EQ(b.Read().status, 400);
}

TEST(TransportLimitsTest, ConnectionsOverTheCapAreClosedAndFreedSlotsReused) {
  HttpServerOptions ho;
  ho.max_connections = 2;
  TransportServer s(Fast(), ho);
  ASSERT_TRUE(s.started.ok());
  auto a = std::make_unique<RawSocket>(s.server->port());
  RawSocket b(s.server->port());
  for (RawSocket* c : {a.get(), &b}) {
    ASSERT_TRUE(c->Send(kHealthz));
    ASSERT_EQ(c->Read().status, 200);
  }
  {
    RawSocket third(s.server->port());
    ASSERT_TRUE(third.connected());  // the kernel accepts; the server closes it at once
    third.Send(kHealthz);
    EXPECT_GE(third.MillisUntilClosed(2000), 0);
  }
  a.reset();  // the server notices the close and frees the slot
  EXPECT_TRUE(testing::WaitFor([&] {
    RawSocket c(s.server->port());
    return c.Send(kHealthz) && c.Read().status == 200;
  }));
}

}  // namespace
}  // namespace topogang
