#include "extender/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace topogang {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// kube-scheduler's Go transport closes idle connections after 90 s; staying open longer means the
// client, not us, closes them, so it never sends a POST on a connection we just closed.
constexpr auto kIdleTimeout = std::chrono::seconds(120);
constexpr auto kIoTimeout = std::chrono::seconds(30);  // reading a body, writing a reply
constexpr size_t kHeaderLimit = 64 * 1024;
constexpr size_t kReadBuffer = 64 * 1024;
constexpr size_t kReadBufferMax = 1024 * 1024;  // bytes read ahead of the parser, at most
// After an error reply on a connection we close, read (and drop) what the client still sends
// before closing, so it gets our reply instead of a reset. Bounded in bytes and time.
constexpr size_t kLingerBytes = 256u << 20;
constexpr auto kLingerTimeout = std::chrono::seconds(2);

class Session;

}  // namespace

// State shared by the server object and its connections.
namespace http_internal {
struct ServerCore {
  ServerCore(ExtenderService& service, const HttpServerOptions& options, DaemonMetrics* metrics)
      : routes(service, options, metrics), max_body_bytes(options.max_body_bytes) {}

  ExtenderRoutes routes;
  const size_t max_body_bytes;
  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  int max_connections = 16384;

  std::mutex mu;
  std::condition_variable cv;
  int pending_replies = 0;  // replies owed (requests read, answer not yet written)
  uint64_t next_id = 0;
  std::unordered_map<uint64_t, std::weak_ptr<Session>> sessions;
  std::weak_ptr<ServerCore> shared_self;  // handed to new sessions
  int running_threads = 0;

  void Accept();
  void OweReply() {
    std::lock_guard<std::mutex> l(mu);
    ++pending_replies;
  }
  void ReplyDone() {
    std::lock_guard<std::mutex> l(mu);
    if (--pending_replies == 0) cv.notify_all();
  }
};
}  // namespace http_internal

namespace {

// One keep-alive connection: read a request, hand it to the routes, write the one reply, repeat.
// Operations of a connection run on its strand; the reply of a held bind arrives from another
// thread and is posted there.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, std::shared_ptr<http_internal::ServerCore> core, uint64_t id)
      : stream_(std::move(socket)), buffer_(kReadBufferMax), core_(std::move(core)), id_(id) {}
  ~Session() {
    std::lock_guard<std::mutex> l(core_->mu);
    core_->sessions.erase(id_);
  }

  void Start() {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&Session::ReadHeader, shared_from_this()));
  }
  // From any thread (Stop): closes the socket on the strand, which ends every pending operation.
  void Close() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      beast::error_code ec;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
      self->stream_.close();
    });
  }

 private:
  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(core_->max_body_bytes);
    stream_.expires_after(kIdleTimeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::OnHeader, shared_from_this()));
  }

  void OnHeader(beast::error_code ec, size_t) {
    if (ec == http::error::body_limit) {
      const auto& req = parser_->get();
      uint64_t declared = parser_->content_length().value_or(0);
      return Answer(core_->routes.TooLarge(ToView(req.target()), declared), /*close=*/true);
    }
    if (ec) return Fail(ec);
    const auto& req = parser_->get();
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
    stream_.expires_after(kIoTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::OnBody, shared_from_this()));
  }

  void OnBody(beast::error_code ec, size_t) {
    if (ec == http::error::body_limit) {
      return Answer(core_->routes.TooLarge(ToView(parser_->get().target()), 0), /*close=*/true);
    }
    if (ec) return Fail(ec);
    http::request<http::string_body> req = parser_->release();
    keep_alive_ = req.keep_alive();
    core_->OweReply();
    core_->routes.Handle(ToView(req.method_string()), ToView(req.target()), std::move(req.body()),
                         [self = shared_from_this()](HttpReply r) { self->Deliver(std::move(r)); });
  }

  // Called exactly once per request, from the strand or (held binds) from the service's worker.
  void Deliver(HttpReply r) {
    net::dispatch(stream_.get_executor(), [self = shared_from_this(), r = std::move(r)]() mutable {
      self->Write(std::move(r), /*close=*/false, /*owed=*/true);
    });
  }

  // An answer produced by the transport itself (no reply owed by the routes).
  void Answer(HttpReply r, bool close) { Write(std::move(r), close, /*owed=*/false); }

  void Write(HttpReply r, bool close, bool owed) {
    res_ = {};
    res_.version(11);
    res_.result(static_cast<unsigned>(r.status));
    res_.set(http::field::server, "topogang");
    res_.set(http::field::content_type, r.content_type);
    res_.keep_alive(keep_alive_ && !close);
    res_.body() = std::move(r.body);
    res_.prepare_payload();
    owed_ = owed;
    stream_.expires_after(kIoTimeout);
    http::async_write(stream_, res_,
                      beast::bind_front_handler(&Session::OnWrite, shared_from_this()));
  }

  void OnWrite(beast::error_code ec, size_t) {
    if (owed_) core_->ReplyDone();
    owed_ = false;
    if (ec) return Fail(ec);
    if (!res_.keep_alive()) return Linger();
    res_ = {};
    ReadHeader();
  }

  // Ends the connection after an error: half-close, then drain what the client still sends.
  void Linger() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return Fail(ec);
    stream_.expires_after(kLingerTimeout);
    lingered_ = 0;
    DrainSome();
  }
  void DrainSome() {
    stream_.async_read_some(net::buffer(scratch_),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->lingered_ += n;
                              if (ec || self->lingered_ > kLingerBytes) return self->Fail(ec);
                              self->DrainSome();
                            });
  }

  void Fail(beast::error_code ec) {
    if (ec && ec != http::error::end_of_stream && ec != net::error::eof &&
        ec != beast::error::timeout && ec != net::error::operation_aborted &&
        ec != net::error::connection_reset && ec != net::error::broken_pipe &&
        ec != net::error::bad_descriptor) {
      // A malformed request: say so before closing (best effort, the connection is done).
      http::response<http::string_body> bad{http::status::bad_request, 11};
      bad.set(http::field::content_type, "text/plain");
      bad.set(http::field::connection, "close");
      bad.body() = absl::StrCat("bad request: ", ec.message());
      bad.prepare_payload();
      beast::error_code wec;
      http::write(stream_, bad, wec);
    }
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  static absl::string_view ToView(beast::string_view s) { return {s.data(), s.size()}; }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  std::shared_ptr<http_internal::ServerCore> core_;
  const uint64_t id_;
  bool keep_alive_ = true;
  bool owed_ = false;
  size_t lingered_ = 0;
  char scratch_[16 * 1024];
};

}  // namespace

void http_internal::ServerCore::Accept() {
  acceptor->async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor->is_open()) return;  // stopping
    if (!ec) {
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::shared_ptr<Session> s;
      {
        std::lock_guard<std::mutex> l(mu);
        if (static_cast<int>(sessions.size()) < max_connections) {
          uint64_t id = next_id++;
          // Sessions keep Core alive through their own shared_ptr; `this` is owned by one.
          s = std::make_shared<Session>(std::move(socket), shared_self.lock(), id);
          sessions[id] = s;
        }
      }
      if (s) {
        s->Start();
      } else {
        socket.close(ignored);  // over the connection limit
      }
    }
    Accept();
  });
}

ExtenderHttpServer::ExtenderHttpServer(ExtenderService& service, HttpServerOptions options,
                                       DaemonMetrics* metrics)
    : service_(service), options_(std::move(options)) {
  core_ = std::make_shared<http_internal::ServerCore>(service_, options_, metrics);
  core_->shared_self = core_;
  core_->max_connections = std::max(1, options_.max_connections);
}

ExtenderHttpServer::~ExtenderHttpServer() { Stop(); }

void ExtenderHttpServer::SetReady(bool ready) { core_->routes.SetReady(ready); }
void ExtenderHttpServer::SetLeader(bool leader) { core_->routes.SetLeader(leader); }

std::string ExtenderHttpServer::BaseUrl() const {
  return absl::StrCat("http://", options_.bind_address, ":", options_.port);
}

absl::Status ExtenderHttpServer::Start() {
  if (options_.port < 0 || options_.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("invalid port ", options_.port));
  }
  if (core_->acceptor) return absl::FailedPreconditionError("server already started");
  beast::error_code ec;
  auto addr = net::ip::make_address(options_.bind_address, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid bind address \"", options_.bind_address, "\": ", ec.message()));
  }
  tcp::endpoint ep(addr, static_cast<unsigned short>(options_.port));
  tcp::acceptor acc(net::make_strand(core_->ioc));
  acc.open(ep.protocol(), ec);
  if (!ec) acc.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(ep, ec);
  if (!ec) acc.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", BaseUrl(), ": ", ec.message()));
  }
  options_.port = acc.local_endpoint().port();  // port 0: the one the kernel chose
  core_->acceptor.emplace(std::move(acc));
  core_->work.emplace(core_->ioc.get_executor());
  core_->Accept();
  int n = options_.threads;
  if (n <= 0) n = std::min(4, std::max(2, static_cast<int>(std::thread::hardware_concurrency())));
  core_->running_threads = n;
  for (int i = 0; i < n; ++i) {
    core_->threads.emplace_back([core = core_.get()] {
      core->ioc.run();
      std::lock_guard<std::mutex> l(core->mu);
      if (--core->running_threads == 0) core->cv.notify_all();
    });
  }
  return absl::OkStatus();
}

void ExtenderHttpServer::Stop() {
  http_internal::ServerCore& c = *core_;
  if (!c.acceptor) return;
  if (c.threads.empty()) return;  // already stopped
  // 1. No new connections; handlers in progress finish, later ones answer 503.
  net::post(c.acceptor->get_executor(), [core = core_] {
    beast::error_code ignored;
    core->acceptor->close(ignored);
  });
  c.routes.Shutdown();
  // 2. Held binds get their failure reply before the connections close.
  service_.ledger().FailHeldBinds("topogang is shutting down");
  {
    std::unique_lock<std::mutex> l(c.mu);
    c.cv.wait_for(l, std::chrono::seconds(2), [&] { return c.pending_replies == 0; });
  }
  // 3. Close every connection, let the threads run out of work, join them.
  std::vector<std::shared_ptr<Session>> open;
  {
    std::lock_guard<std::mutex> l(c.mu);
    for (auto& [id, w] : c.sessions) {
      if (auto s = w.lock()) open.push_back(std::move(s));
    }
  }
  for (auto& s : open) s->Close();
  open.clear();
  // Without the guard, run() returns once every connection has wound down; a stuck one gets 2 s.
  c.work.reset();
  {
    std::unique_lock<std::mutex> l(c.mu);
    if (!c.cv.wait_for(l, std::chrono::seconds(2), [&] { return c.running_threads == 0; })) {
      c.ioc.stop();
    }
  }
  for (std::thread& t : c.threads) t.join();
  c.threads.clear();
}

}  // namespace topogang
