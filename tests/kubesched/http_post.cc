#include "tests/kubesched/http_post.h"

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <optional>

#include "absl/strings/str_cat.h"

namespace topogang::kubesched {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

struct HttpPoster::Conn {
  std::string host, port;
  boost::asio::io_context ioc;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  std::atomic<bool> cancelled{false};
};

HttpPoster::HttpPoster(std::string host, std::string port) : conn_(std::make_unique<Conn>()) {
  conn_->host = std::move(host);
  conn_->port = std::move(port);
}

HttpPoster::~HttpPoster() = default;

void HttpPoster::Cancel() { conn_->cancelled = true; }

namespace {

// Runs the io_context until `op_done` or the deadline; the stream's own expiry closes it then.
void RunUntil(boost::asio::io_context& ioc, const bool& op_done) {
  ioc.restart();
  while (!op_done && ioc.run_one() > 0) {
  }
}

}  // namespace

absl::StatusOr<HttpReply> HttpPoster::Post(const std::string& target, const std::string& body,
                                           absl::Duration timeout) {
  Conn& c = *conn_;
  if (c.cancelled) return absl::CancelledError("request cancelled");
  const auto expiry = std::chrono::microseconds(absl::ToInt64Microseconds(timeout));
  const auto deadline = std::chrono::steady_clock::now() + expiry;
  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::host, c.host + ":" + c.port);
  req.set(http::field::user_agent, "Go-http-client/1.1");
  req.set(http::field::accept_encoding, "gzip");
  req.set(http::field::content_type, "application/json");
  req.body() = body;
  req.prepare_payload();

  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = c.stream.has_value();
    beast::error_code ec;
    if (!reused) {
      tcp::resolver resolver(c.ioc);
      auto endpoints = resolver.resolve(c.host, c.port, ec);
      if (ec) return absl::UnavailableError(absl::StrCat("dial tcp: ", ec.message()));
      c.stream.emplace(c.ioc);
      c.stream->expires_at(deadline);
      bool done = false;
      c.stream->async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) {
        ec = e;
        done = true;
      });
      RunUntil(c.ioc, done);
      if (ec) {
        c.stream.reset();
        return absl::UnavailableError(absl::StrCat("dial tcp: ", ec.message()));
      }
    }
    c.stream->expires_at(deadline);
    bool done = false;
    http::async_write(*c.stream, req, [&](beast::error_code e, size_t) {
      ec = e;
      done = true;
    });
    RunUntil(c.ioc, done);
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 30);
    bool read_any = false;
    if (!ec) {
      done = false;
      c.buffer.clear();
      http::async_read(*c.stream, c.buffer, parser, [&](beast::error_code e, size_t n) {
        ec = e;
        read_any = n > 0;
        done = true;
      });
      RunUntil(c.ioc, done);
    }
    if (ec) {
      c.stream.reset();
      // A kept-alive connection the server closed while idle: send once more on a new one.
      if (reused && !read_any && ec != beast::error::timeout) continue;
      if (ec == beast::error::timeout) {
        return absl::DeadlineExceededError("context deadline exceeded");
      }
      return absl::UnavailableError(ec.message());
    }
    auto res = parser.release();
    HttpReply out;
    out.status = static_cast<int>(res.result_int());
    if (auto it = res.find(http::field::content_encoding); it != res.end()) {
      out.content_encoding = std::string(it->value());
    }
    out.body = std::move(res.body());
    if (!res.keep_alive()) c.stream.reset();
    return out;
  }
  return absl::UnavailableError("connection closed by the server");
}

}  // namespace topogang::kubesched
