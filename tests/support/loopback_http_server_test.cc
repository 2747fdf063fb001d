// LoopbackHttpServer against a Beast client over 127.0.0.1: plain and keep-alive replies, the
// request as the handler sees it, answers from another thread, streams, unanswered exchanges and
// throwing handlers (500), and Stop() with requests still held and streams still open.
#include "tests/support/loopback_http_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

namespace topogang::testing {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// One client connection (keep-alive) to the server under test.
class Client {
 public:
  explicit Client(int port) : socket_(ioc_) {
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  }
  void Send(const std::string& method, const std::string& target, const std::string& body = "",
            bool keep_alive = true) {
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set("X-Test", "one");
    req.insert("x-test", "two");
    req.body() = body;
    req.keep_alive(keep_alive);
    req.prepare_payload();
    http::write(socket_, req);
  }
  // The next whole reply; a stream's chunks come joined in its body.
  http::response<http::string_body> Read(beast::error_code* ec = nullptr) {
    http::response<http::string_body> res;
    beast::error_code local;
    http::read(socket_, buffer_, res, ec ? *ec : local);
    return res;
  }
  http::response<http::string_body> Call(const std::string& method, const std::string& target,
                                         const std::string& body = "") {
    Send(method, target, body);
    return Read();
  }

 private:
  net::io_context ioc_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

TEST(LoopbackHttpServer, RepliesWithStatusHeadersAndBodyOnOneKeptAliveConnection) {
  std::atomic<int> calls{0};
  LoopbackHttpServer server([&](std::shared_ptr<HttpExchange> ex) {
    ++calls;
    ex->Reply(201, "{\"n\":" + std::to_string(calls.load()) + "}", "application/json",
              {{"Retry-After", "1"}});
  });
  EXPECT_EQ(server.url(), "http://127.0.0.1:" + std::to_string(server.port()));
  Client c(server.port());
  auto a = c.Call("POST", "/x", "hello");
  auto b = c.Call("GET", "/y");  // same connection: keep-alive worked
  EXPECT_EQ(a.result_int(), 201);
  EXPECT_EQ(a.body(), "{\"n\":1}");
  EXPECT_EQ(a[http::field::content_type], "application/json");
  EXPECT_EQ(a["Retry-After"], "1");
  EXPECT_TRUE(a.keep_alive());
  EXPECT_EQ(b.body(), "{\"n\":2}");
  EXPECT_EQ(calls.load(), 2);
}

TEST(LoopbackHttpServer, HandsTheHandlerTheDecodedRequest) {
  std::mutex mu;
  HttpRequest seen;
  LoopbackHttpServer server([&](std::shared_ptr<HttpExchange> ex) {
    {
      std::lock_guard<std::mutex> lock(mu);
      seen = ex->request();
    }
    ex->Reply(200, "");
  });
  Client c(server.port());
  c.Call("PATCH", "/api/v1/nodes/n1?labelSelector=a%3Db%2Cc+d&watch=1&flag&x=%zz", "{\"p\":1}");
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen.method, "PATCH");
  EXPECT_EQ(seen.path, "/api/v1/nodes/n1");
  EXPECT_EQ(seen.target, "/api/v1/nodes/n1?labelSelector=a%3Db%2Cc+d&watch=1&flag&x=%zz");
  EXPECT_EQ(seen.query.at("labelSelector"), "a=b,c d");
  EXPECT_EQ(seen.query.at("watch"), "1");
  EXPECT_EQ(seen.query.at("flag"), "");
  EXPECT_EQ(seen.query.at("x"), "%zz");  // not an escape: kept as sent
  EXPECT_EQ(seen.body, "{\"p\":1}");
  EXPECT_EQ(seen.Header("x-TEST"), "one, two");  // any case; repeats joined
  EXPECT_EQ(seen.Header("Host"), "127.0.0.1");
  EXPECT_EQ(seen.Header("Absent"), "");
}

// A held request (a bind kube-scheduler waits on) does not hold up another connection, and is
// answered from another thread.
TEST(LoopbackHttpServer, AnswersAHeldRequestLaterFromAnotherThread) {
  std::mutex mu;
  std::condition_variable cv;
  std::shared_ptr<HttpExchange> held;
  LoopbackHttpServer server([&](std::shared_ptr<HttpExchange> ex) {
    if (ex->request().path == "/hold") {
      std::lock_guard<std::mutex> lock(mu);
      held = ex;
      cv.notify_all();
      return;
    }
    ex->Reply(200, "quick");
  });
  Client slow(server.port()), quick(server.port());
  slow.Send("POST", "/hold");
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return held != nullptr; }));
  }
  EXPECT_EQ(quick.Call("GET", "/other").body(), "quick");
  std::thread([&] {
    held->Reply(409, "late");
    held->Reply(200, "ignored: the first reply wins");
    held.reset();
  }).join();
  auto r = slow.Read();
  EXPECT_EQ(r.result_int(), 409);
  EXPECT_EQ(r.body(), "late");
}

TEST(LoopbackHttpServer, StreamsChunksUntilClosedThenServesTheNextRequest) {
  std::promise<std::shared_ptr<ReplyStream>> stream;
  LoopbackHttpServer server([&](std::shared_ptr<HttpExchange> ex) {
    if (ex->request().path == "/watch") {
      auto s = ex->Stream(200);
      s->Write("{\"type\":\"ADDED\"}\n");
      s->Write("");  // dropped: an empty chunk would end the reply
      stream.set_value(s);
      return;
    }
    ex->Reply(200, "after");
  });
  Client c(server.port());
  c.Send("GET", "/watch?watch=1");
  auto s = stream.get_future().get();
  std::thread writer([s] {
    s->Write("{\"type\":\"MODIFIED\"}\n");
    s->Close();
    s->Write("dropped: after the close\n");
  });
  auto r = c.Read();
  writer.join();
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_TRUE(r.chunked());
  EXPECT_EQ(r.body(), "{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n");
  EXPECT_EQ(c.Call("GET", "/next").body(), "after");
}

TEST(LoopbackHttpServer, AnUnansweredOrThrowingHandlerIsA500) {
  LoopbackHttpServer server([&](std::shared_ptr<HttpExchange> ex) {
    if (ex->request().path == "/throw") throw std::runtime_error("boom");
    // "/drop": returns without answering, keeping nothing
  });
  Client c(server.port());
  auto dropped = c.Call("GET", "/drop");
  EXPECT_EQ(dropped.result_int(), 500);
  EXPECT_NE(dropped.body().find("unanswered"), std::string::npos);
  auto thrown = c.Call("GET", "/throw");
  EXPECT_EQ(thrown.result_int(), 500);
  EXPECT_NE(thrown.body().find("boom"), std::string::npos);
}

TEST(LoopbackHttpServer, ConnectionCloseIsHonoured) {
  LoopbackHttpServer server([&](std::shared_ptr<HttpExchange> ex) { ex->Reply(200, "bye"); });
  Client c(server.port());
  c.Send("GET", "/", "", /*keep_alive=*/false);
  auto r = c.Read();
  EXPECT_EQ(r.body(), "bye");
  EXPECT_FALSE(r.keep_alive());
  beast::error_code ec;
  c.Read(&ec);  // the server closed its end
  EXPECT_EQ(ec, http::error::end_of_stream);
}

// Stop() with a request held, a stream open and an idle keep-alive connection: it returns, every
// client sees its connection end, and a reply or write after it goes nowhere.
TEST(LoopbackHttpServer, StopCutsHeldRequestsOpenStreamsAndIdleConnections) {
  std::mutex mu;
  std::condition_variable cv;
  std::shared_ptr<HttpExchange> held;
  std::shared_ptr<ReplyStream> stream;
  auto server = std::make_unique<LoopbackHttpServer>([&](std::shared_ptr<HttpExchange> ex) {
    std::lock_guard<std::mutex> lock(mu);
    if (ex->request().path == "/hold") {
      held = ex;
    } else if (ex->request().path == "/watch") {
      stream = ex->Stream(200);
      stream->Write("first\n");
    } else {
      ex->Reply(200, "ok");
    }
    cv.notify_all();
  });
  const int port = server->port();
  Client hold(port), watch(port), idle(port);
  hold.Send("POST", "/hold");
  watch.Send("GET", "/watch");
  EXPECT_EQ(idle.Call("GET", "/").body(), "ok");
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return held && stream; }));
  }
  server->Stop();
  server->Stop();  // idempotent
  beast::error_code ec;
  hold.Read(&ec);
  EXPECT_TRUE(ec) << "a held request's connection ends without a reply";
  watch.Read(&ec);
  EXPECT_TRUE(ec) << "an open stream ends without its last chunk";
  idle.Read(&ec);
  EXPECT_TRUE(ec);
  held->Reply(200, "too late");
  stream->Write("too late\n");
  stream->Close();
  server.reset();
  EXPECT_THROW(Client{port}, boost::system::system_error);  // no longer listening
}

}  // namespace
}  // namespace topogang::testing
