// One connection of the extender's HTTP server, plain or TLS (internal to http_server.cc).
#pragma once

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <memory>
#include <optional>
#include <type_traits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "extender/http_server_core.h"

namespace topogang::http_internal {

namespace http = boost::beast::http;
namespace ssl = boost::asio::ssl;

// One keep-alive connection: read a request, hand it to the routes, write the one reply, repeat.
// Operations of a connection run on its strand; the reply of a held bind arrives from another
// thread and is posted there. Stream is beast::tcp_stream (plain) or an ssl_stream over one.
template <class Stream>
class Session : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  Session(tcp::socket&& socket, std::shared_ptr<ssl::context> tls, std::shared_ptr<ServerCore> core,
          uint64_t id, bool health)
      : tls_(std::move(tls)),
        stream_(MakeStream(std::move(socket), tls_.get())),
        buffer_(kReadBufferMax),
        core_(std::move(core)),
        id_(id),
        health_(health) {}
  ~Session() override {
    if (reserved_ > 0) core_->Release(reserved_);
    core_->Forget(id_, health_);
  }

  void Start() {
    net::dispatch(Lowest().get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        self->Handshake();
      } else {
        self->ReadHeader();
      }
    });
  }
  // From any thread (Stop): closes the socket on the strand, which ends every pending operation.
  void Close() override {
    net::post(Lowest().get_executor(), [self = this->shared_from_this()] { self->CloseSocket(); });
  }

 private:
  static Stream MakeStream(tcp::socket&& socket, ssl::context* tls) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *tls);
    } else {
      (void)tls;
      return Stream(std::move(socket));
    }
  }
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }
  void CloseSocket() {
    beast::error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    Lowest().close();
  }
  template <class F>
  auto Bind(F f) {
    return beast::bind_front_handler(f, this->shared_from_this());
  }

  void Handshake() {
    if constexpr (kTls) {
      Lowest().expires_after(core_->read_timeout);
      stream_.async_handshake(ssl::stream_base::server, Bind(&Session::OnHandshake));
    }
  }
  void OnHandshake(beast::error_code ec) {
    if (ec) {
      beast::error_code ignored;
      auto peer = Lowest().socket().remote_endpoint(ignored);
      core_->HandshakeFailed(
          ec, ignored ? "?" : absl::StrCat(peer.address().to_string(), ":", peer.port()));
      return CloseSocket();
    }
    ReadHeader();
  }

  // Waits (idle timeout) for the first byte of the next request, unless it is already buffered;
  // from there the whole request must arrive within the read timeout.
  void ReadHeader() {
    ReleaseBody();
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(core_->max_body_bytes);
    if (buffer_.size() > 0) return ReadRequest();
    Lowest().expires_after(core_->idle_timeout);
    const size_t room = std::max(kFirstRead, buffer_.capacity() - buffer_.size());
    stream_.async_read_some(buffer_.prepare(std::min(room, buffer_.max_size() - buffer_.size())),
                            Bind(&Session::OnFirstBytes));
  }
  void OnFirstBytes(beast::error_code ec, size_t n) {
    buffer_.commit(n);
    if (ec) return Fail(ec);
    ReadRequest();
  }
  void ReadRequest() {
    Lowest().expires_after(core_->read_timeout);  // a deadline: the body read below keeps it
    http::async_read_header(stream_, buffer_, *parser_, Bind(&Session::OnHeader));
  }

  void OnHeader(beast::error_code ec, size_t) {
    if (ec == http::error::body_limit) {
      const auto& req = parser_->get();
      uint64_t declared = parser_->content_length().value_or(0);
      return Answer(core_->routes.TooLarge(ToView(req.target()), declared), /*close=*/true);
    }
    if (ec) return Fail(ec);
    const auto& req = parser_->get();
    // The body's bytes count against the server-wide budget before they are read: a declared
    // length as declared, a chunked body as the largest one allowed.
    const size_t need = parser_->content_length()
                            ? static_cast<size_t>(*parser_->content_length())
                            : (parser_->chunked() ? core_->max_body_bytes : 0);
    size_t total = 0;
    if (need > 0 && !core_->Reserve(need, &total)) {
      return Answer({503,
                     absl::StrCat("topogang: ", total, " bytes of requests are in flight; ", need,
                                  " more would pass the limit of ", core_->max_inflight,
                                  " (daemon.max_inflight_body_bytes); retry"),
                     "text/plain"},
                    /*close=*/true);
    }
    reserved_ = need;
    // Beast reads at most the buffer's free capacity per recv (and at least 512 bytes): a buffer
    // left to grow on its own reads a 150 KB filter body in ~300 recvs, each with an epoll_ctl
    // and a timer update. Only connections that carry large bodies get the big buffer: a
    // 2,000-member gang holds 2,000 bind connections at its barrier.
    if (parser_->content_length().value_or(kReadBuffer) >= 4096 &&
        buffer_.capacity() < kReadBuffer) {
      buffer_.reserve(kReadBuffer);
    }
    if (absl::EqualsIgnoreCase(ToView(req[http::field::expect]), "100-continue")) {
      // curl and some clients wait for this before sending a large body.
      http::response<http::empty_body> cont{http::status::continue_, 11};
      beast::error_code wec;
      http::write(stream_, cont, wec);
      if (wec) return Fail(wec);
    }
    http::async_read(stream_, buffer_, *parser_, Bind(&Session::OnBody));
  }

  void OnBody(beast::error_code ec, size_t) {
    if (ec == http::error::body_limit) {
      return Answer(core_->routes.TooLarge(ToView(parser_->get().target()), 0), /*close=*/true);
    }
    if (ec) return Fail(ec);
    http::request<http::string_body> req = parser_->release();
    keep_alive_ = req.keep_alive();
    if (health_ && !HealthPath(req)) {
      return Answer(
          {404, "the health port serves only GET /healthz, /readyz and /metrics", "text/plain"},
          /*close=*/false);
    }
    core_->OweReply();
    core_->routes.Handle(
        ToView(req.method_string()), ToView(req.target()), std::move(req.body()),
        [self = this->shared_from_this()](HttpReply r) { self->Deliver(std::move(r)); });
    // The body is gone (parsed and answered, or a bind held at its barrier): its bytes are free.
    ReleaseBody();
  }
  static bool HealthPath(const http::request<http::string_body>& req) {
    if (req.method() != http::verb::get) return false;
    absl::string_view path = ToView(req.target());
    path = path.substr(0, path.find('?'));
    return path == "/healthz" || path == "/readyz" || path == "/metrics";
  }
  void ReleaseBody() {
    if (reserved_ == 0) return;
    core_->Release(reserved_);
    reserved_ = 0;
  }

  // Called exactly once per request, from the strand or (held binds) from the service's worker.
  void Deliver(HttpReply r) {
    net::dispatch(Lowest().get_executor(),
                  [self = this->shared_from_this(), r = std::move(r)]() mutable {
                    self->Write(std::move(r), /*close=*/false, /*owed=*/true);
                  });
  }

  // An answer produced by the transport itself (no reply owed by the routes).
  void Answer(HttpReply r, bool close) { Write(std::move(r), close, /*owed=*/false); }

  void Write(HttpReply r, bool close, bool owed) {
    ReleaseBody();  // before the client can read the reply and send the next request
    res_ = {};
    res_.version(11);
    res_.result(static_cast<unsigned>(r.status));
    res_.set(http::field::server, "topogang");
    res_.set(http::field::content_type, r.content_type);
    res_.keep_alive(keep_alive_ && !close);
    res_.body() = std::move(r.body);
    res_.prepare_payload();
    owed_ = owed;
    Lowest().expires_after(core_->write_timeout);
    http::async_write(stream_, res_, Bind(&Session::OnWrite));
  }

  void OnWrite(beast::error_code ec, size_t) {
    if (owed_) core_->ReplyDone();
    owed_ = false;
    if (ec) return Fail(ec);
    if (!res_.keep_alive()) return Linger();
    res_ = {};
    ReadHeader();
  }

  // Ends the connection after an error: half-close, then drain what the client still sends (raw
  // bytes from the socket, under TLS too: only the client's leftovers, never parsed).
  void Linger() {
    ReleaseBody();
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return Fail(ec);
    Lowest().expires_after(kLingerTimeout);
    lingered_ = 0;
    scratch_ = std::make_unique<char[]>(kScratch);
    DrainSome();
  }
  void DrainSome() {
    Lowest().async_read_some(net::buffer(scratch_.get(), kScratch),
                             [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                               self->lingered_ += n;
                               if (ec || self->lingered_ > kLingerBytes) return self->Fail(ec);
                               self->DrainSome();
                             });
  }

  void Fail(beast::error_code ec) {
    if (ec && ec.category() == http::make_error_code(http::error::bad_target).category() &&
        ec != http::error::end_of_stream) {
      // A malformed request: say so before closing (best effort, the connection is done).
      http::response<http::string_body> bad{http::status::bad_request, 11};
      bad.set(http::field::content_type, "text/plain");
      bad.set(http::field::connection, "close");
      bad.body() = absl::StrCat("bad request: ", ec.message());
      bad.prepare_payload();
      beast::error_code wec;
      http::write(stream_, bad, wec);
    }
    CloseSocket();
  }

  static absl::string_view ToView(beast::string_view s) { return {s.data(), s.size()}; }

  static constexpr size_t kScratch = 16 * 1024;
  const std::shared_ptr<ssl::context> tls_;  // outlives stream_: a reload must not free it
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  std::shared_ptr<ServerCore> core_;
  const uint64_t id_;
  const bool health_;
  bool keep_alive_ = true;
  bool owed_ = false;
  size_t reserved_ = 0;  // body bytes this request holds of the server-wide budget
  size_t lingered_ = 0;
  std::unique_ptr<char[]> scratch_;  // only while lingering: held binds stay small
};

using PlainSession = Session<beast::tcp_stream>;
using TlsSession = Session<beast::ssl_stream<beast::tcp_stream>>;

}  // namespace topogang::http_internal
