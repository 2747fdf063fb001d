#include "tests/support/loopback_http_server.h"

#include <cpprest/base_uri.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <deque>
#include <exception>
#include <list>
#include <stdexcept>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace topogang::testing {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace loopback_internal {

// One lock and one condition for the whole server: its connections, their exchanges and Stop().
struct Signal {
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
};

struct ExchangeState {
  enum class Phase { kPending, kReplied, kStreaming, kAbandoned };
  explicit ExchangeState(std::shared_ptr<Signal> s) : sig(std::move(s)) {}
  std::shared_ptr<Signal> sig;
  // Guarded by sig->mu.
  Phase phase = Phase::kPending;
  int status = 0;
  std::string body, content_type;
  std::vector<std::pair<std::string, std::string>> headers;
  std::deque<std::string> chunks;
  bool stream_closed = false;
  bool dead = false;  // the connection is gone: writes are dropped
};

struct Connection {
  explicit Connection(net::io_context& ioc) : socket(ioc) {}
  tcp::socket socket;
  std::thread thread;
  bool closed = false;  // guarded by Signal::mu; set as the socket is closed
  bool done = false;    // guarded by Signal::mu; the thread is about to return
};

struct ServerState {
  LoopbackHttpServer::Handler handler;
  std::shared_ptr<Signal> sig = std::make_shared<Signal>();
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::thread accept_thread;
  std::list<std::shared_ptr<Connection>> connections;  // guarded by sig->mu
  bool stopped = false;                                // guarded by sig->mu
};

}  // namespace loopback_internal

using loopback_internal::Connection;
using loopback_internal::ExchangeState;
using loopback_internal::ServerState;
using Phase = ExchangeState::Phase;

namespace {

constexpr size_t kHeaderLimit = 64 * 1024;
constexpr uint64_t kBodyLimit = 256ull << 20;

// A query component decoded as Go's url.ParseQuery does ('+' is a space, then %XX); kept as sent
// when it is no valid escape.
std::string QueryDecode(std::string s) {
  std::replace(s.begin(), s.end(), '+', ' ');
  try {
    return web::uri::decode(s);
  } catch (const std::exception&) {
    return s;
  }
}

HttpRequest ToRequest(http::request<http::string_body>& m) {
  HttpRequest r;
  r.method = std::string(m.method_string());
  r.target = std::string(m.target());
  const size_t q = r.target.find('?');
  r.path = r.target.substr(0, q);
  if (q != std::string::npos) {
    const std::vector<std::string> pairs =
        absl::StrSplit(r.target.substr(q + 1), '&', absl::SkipEmpty());
    for (const std::string& kv : pairs) {
      const size_t eq = kv.find('=');
      r.query[QueryDecode(kv.substr(0, eq))] =
          eq == std::string::npos ? "" : QueryDecode(kv.substr(eq + 1));
    }
  }
  for (const auto& f : m) {
    std::string& v = r.headers[absl::AsciiStrToLower(std::string(f.name_string()))];
    v = v.empty() ? std::string(f.value()) : absl::StrCat(v, ", ", std::string(f.value()));
  }
  r.body = std::move(m.body());
  return r;
}

// Serves one connection until the client closes it, an error, a reply that ends it, or Stop().
void Serve(const std::shared_ptr<ServerState>& s, const std::shared_ptr<Connection>& c) {
  auto& sig = *s->sig;
  tcp::socket& sock = c->socket;
  beast::flat_buffer buffer;
  beast::error_code ec;
  std::shared_ptr<ExchangeState> st;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(kBodyLimit);
    http::read(sock, buffer, parser, ec);
    if (ec) break;
    auto& msg = parser.get();
    const bool keep_alive = msg.keep_alive();
    const unsigned version = msg.version();
    st = std::make_shared<ExchangeState>(s->sig);
    {
      auto ex = std::make_shared<HttpExchange>(ToRequest(msg), st);
      try {
        s->handler(ex);
      } catch (const std::exception& e) {
        ex->Reply(500, absl::StrCat("handler threw: ", e.what(), "\n"), "text/plain");
      } catch (...) {
        ex->Reply(500, "handler threw\n", "text/plain");
      }
    }  // unless the handler kept it, the exchange is answered (500) as it goes
    std::unique_lock<std::mutex> lock(sig.mu);
    sig.cv.wait(lock, [&] { return st->phase != Phase::kPending || sig.stopping; });
    if (st->phase == Phase::kPending) break;  // stopping
    if (st->phase != Phase::kStreaming) {
      http::response<http::string_body> res{static_cast<http::status>(st->status), version};
      if (!st->content_type.empty()) res.set(http::field::content_type, st->content_type);
      for (const auto& [k, v] : st->headers) res.set(k, v);
      res.body() = std::move(st->body);
      lock.unlock();
      res.keep_alive(keep_alive);
      res.prepare_payload();
      http::write(sock, res, ec);
      if (ec || !keep_alive) break;
      continue;
    }
    http::response<http::empty_body> res{static_cast<http::status>(st->status), version};
    res.set(http::field::content_type, st->content_type);
    lock.unlock();
    res.keep_alive(keep_alive);
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    http::write_header(sock, sr, ec);
    bool ended = false;
    while (!ec && !ended) {
      std::deque<std::string> out;
      lock.lock();
      sig.cv.wait(lock, [&] { return !st->chunks.empty() || st->stream_closed || sig.stopping; });
      if (sig.stopping) {
        lock.unlock();
        ec = net::error::operation_aborted;
        break;
      }
      out.swap(st->chunks);
      ended = st->stream_closed;
      lock.unlock();
      // What queued meanwhile goes out as one chunk: a burst of watch events (a controller
      // creating a 1,024-pod gang) is then one write, not one per event.
      std::string joined;
      for (const std::string& chunk : out) joined += chunk;
      if (!joined.empty()) net::write(sock, http::make_chunk(net::buffer(joined)), ec);
      if (!ec && ended) net::write(sock, http::make_chunk_last(), ec);
    }
    if (ec || !keep_alive) break;
  }
  std::lock_guard<std::mutex> lock(sig.mu);
  if (st) {
    st->dead = true;
    st->chunks.clear();
  }
  c->closed = true;
  sock.close(ec);
  c->done = true;
}

}  // namespace

std::string HttpRequest::Header(const std::string& name) const {
  auto it = headers.find(absl::AsciiStrToLower(name));
  return it == headers.end() ? "" : it->second;
}

ReplyStream::ReplyStream(std::shared_ptr<ExchangeState> state) : state_(std::move(state)) {}
ReplyStream::~ReplyStream() { Close(); }

void ReplyStream::Write(std::string chunk) {
  if (chunk.empty()) return;  // an empty chunk would end the reply
  std::lock_guard<std::mutex> lock(state_->sig->mu);
  if (state_->dead || state_->stream_closed) return;
  state_->chunks.push_back(std::move(chunk));
  state_->sig->cv.notify_all();
}

void ReplyStream::Close() {
  std::lock_guard<std::mutex> lock(state_->sig->mu);
  if (state_->stream_closed) return;
  state_->stream_closed = true;
  state_->sig->cv.notify_all();
}

HttpExchange::HttpExchange(HttpRequest request, std::shared_ptr<ExchangeState> state)
    : request_(std::move(request)), state_(std::move(state)) {}

HttpExchange::~HttpExchange() {
  std::lock_guard<std::mutex> lock(state_->sig->mu);
  if (state_->phase != Phase::kPending) return;
  state_->phase = Phase::kAbandoned;
  state_->status = 500;
  state_->content_type = "text/plain";
  state_->body = "the fake server dropped this request unanswered\n";
  state_->sig->cv.notify_all();
}

void HttpExchange::Reply(int status, std::string body, const std::string& content_type,
                         std::vector<std::pair<std::string, std::string>> headers) {
  std::lock_guard<std::mutex> lock(state_->sig->mu);
  if (state_->phase != Phase::kPending) return;
  state_->phase = Phase::kReplied;
  state_->status = status;
  state_->body = std::move(body);
  state_->content_type = content_type;
  state_->headers = std::move(headers);
  state_->sig->cv.notify_all();
}

std::shared_ptr<ReplyStream> HttpExchange::Stream(int status, const std::string& content_type) {
  std::lock_guard<std::mutex> lock(state_->sig->mu);
  if (state_->phase != Phase::kPending) {  // answered already: a stream that goes nowhere
    auto nowhere = std::make_shared<ExchangeState>(state_->sig);
    nowhere->dead = true;
    return std::make_shared<ReplyStream>(nowhere);
  }
  state_->phase = Phase::kStreaming;
  state_->status = status;
  state_->content_type = content_type;
  state_->sig->cv.notify_all();
  return std::make_shared<ReplyStream>(state_);
}

LoopbackHttpServer::LoopbackHttpServer(Handler handler) : state_(std::make_shared<ServerState>()) {
  state_->handler = std::move(handler);
  beast::error_code ec;
  const tcp::endpoint ep(net::ip::make_address("127.0.0.1"), 0);
  state_->acceptor.open(ep.protocol(), ec);
  if (!ec) state_->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) state_->acceptor.bind(ep, ec);
  if (!ec) state_->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    throw std::runtime_error("LoopbackHttpServer: cannot listen on 127.0.0.1: " + ec.message());
  port_ = state_->acceptor.local_endpoint().port();
  state_->accept_thread = std::thread([this] { AcceptLoop(); });
}

LoopbackHttpServer::~LoopbackHttpServer() { Stop(); }

std::string LoopbackHttpServer::url() const { return absl::StrCat("http://127.0.0.1:", port_); }

void LoopbackHttpServer::AcceptLoop() {
  auto s = state_;
  auto& sig = *s->sig;
  for (;;) {
    auto c = std::make_shared<Connection>(s->ioc);
    beast::error_code ec;
    s->acceptor.accept(c->socket, ec);
    std::list<std::shared_ptr<Connection>> finished;  // joined outside the lock
    {
      std::lock_guard<std::mutex> lock(sig.mu);
      if (sig.stopping) {
        if (!ec) c->socket.close(ec);
        return;
      }
      for (auto it = s->connections.begin(); it != s->connections.end();) {
        auto next = std::next(it);
        if ((*it)->done) finished.splice(finished.end(), s->connections, it);
        it = next;
      }
      if (!ec) {
        // Without it a watch event written right after another small write waits for the
        // client's delayed ACK (Nagle): tens of ms on loopback, and one client's watch trails
        // another's (the product's extender server sets it too).
        beast::error_code ignored;
        c->socket.set_option(tcp::no_delay(true), ignored);
        c->thread = std::thread([s, c] { Serve(s, c); });
        s->connections.push_back(c);
      }
    }
    for (auto& f : finished) f->thread.join();  // each is returning already
    if (ec) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // e.g. out of descriptors
  }
}

void LoopbackHttpServer::Stop() {
  auto& sig = *state_->sig;
  {
    std::lock_guard<std::mutex> lock(sig.mu);
    if (state_->stopped) return;
    state_->stopped = true;
    sig.stopping = true;
    sig.cv.notify_all();
  }
  // Wakes the blocked accept (Linux answers it EINVAL); the accept thread closes nothing.
  ::shutdown(state_->acceptor.native_handle(), SHUT_RDWR);
  state_->accept_thread.join();
  beast::error_code ec;
  state_->acceptor.close(ec);
  std::list<std::shared_ptr<Connection>> connections;
  {
    std::lock_guard<std::mutex> lock(sig.mu);
    for (auto& c : state_->connections) {
      // Under the lock, so the descriptor is still this connection's (it closes under it too).
      if (!c->closed) ::shutdown(c->socket.native_handle(), SHUT_RDWR);
    }
    connections.swap(state_->connections);
  }
  for (auto& c : connections) c->thread.join();
}

}  // namespace topogang::testing
