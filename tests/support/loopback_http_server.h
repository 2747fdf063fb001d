// A small HTTP/1.1 server on 127.0.0.1 for the test fakes (the fake API server, fake extenders):
// Boost.Beast with one thread per connection and blocking I/O, keep-alive, plain and chunked
// (streamed) replies, answered from any thread.
//
// Why not cpprestsdk's http_listener (the first version): its asio server
// (Release/src/http/listener/http_server_asio.cpp) closes a connection's socket in
// connection::close() on whichever thread closes it, while PPL continuations on pool threads
// start the next operation on that socket, with no strand or lock between them. Once in about
// 10,000 runs of a kube-scheduler emulator test an operation began on a socket already closed:
// SIGSEGV in epoll_reactor::start_op (tests/kubesched/README.md). Here each socket is read,
// written and closed by its own connection thread only; Stop() merely shuts it down (a syscall
// on a descriptor the thread still owns) to wake a blocked read or write.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace topogang::testing {

namespace loopback_internal {
struct ExchangeState;
struct ServerState;
}  // namespace loopback_internal

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string target;                          // as sent: path and query
  std::string path;                            // the target up to '?', not decoded
  std::map<std::string, std::string> query;    // decoded ('+' is a space, as in Go's ParseQuery)
  std::map<std::string, std::string> headers;  // names lower-cased; repeats joined with ", "
  std::string body;
  // The value of header `name` (any case), or "" when absent.
  std::string Header(const std::string& name) const;
};

// A streamed (chunked) reply: one Write per chunk, then Close ends the reply. Dropping the last
// reference closes it too. After the client went away, or the server stopped, writes are dropped.
class ReplyStream {
 public:
  explicit ReplyStream(std::shared_ptr<loopback_internal::ExchangeState> state);
  ~ReplyStream();
  ReplyStream(const ReplyStream&) = delete;
  ReplyStream& operator=(const ReplyStream&) = delete;
  void Write(std::string chunk);
  void Close();

 private:
  std::shared_ptr<loopback_internal::ExchangeState> state_;
};

// One request and its one reply. The handler may answer at once, keep the exchange and answer
// later from any thread (a held bind, a hung lease), or stream. An exchange dropped unanswered is
// answered 500, so a fake's bug shows up as an error, not a hung client.
class HttpExchange {
 public:
  HttpExchange(HttpRequest request, std::shared_ptr<loopback_internal::ExchangeState> state);
  ~HttpExchange();
  HttpExchange(const HttpExchange&) = delete;
  HttpExchange& operator=(const HttpExchange&) = delete;

  const HttpRequest& request() const { return request_; }
  // The first reply (or Stream) wins; later ones are ignored.
  void Reply(int status, std::string body, const std::string& content_type = "application/json",
             std::vector<std::pair<std::string, std::string>> headers = {});
  std::shared_ptr<ReplyStream> Stream(int status,
                                      const std::string& content_type = "application/json");

 private:
  HttpRequest request_;
  std::shared_ptr<loopback_internal::ExchangeState> state_;
};

class LoopbackHttpServer {
 public:
  using Handler = std::function<void(std::shared_ptr<HttpExchange>)>;

  // Listens on 127.0.0.1 at a port the kernel picks; throws std::runtime_error if it cannot.
  // A handler that throws gets its request answered 500.
  explicit LoopbackHttpServer(Handler handler);
  ~LoopbackHttpServer();  // Stop()
  LoopbackHttpServer(const LoopbackHttpServer&) = delete;
  LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;

  int port() const { return port_; }
  std::string url() const;  // http://127.0.0.1:<port>
  // Stops accepting, cuts every connection (unanswered exchanges and open streams with it) and
  // joins the threads. Idempotent; handlers running then finish first.
  void Stop();

 private:
  void AcceptLoop();
  int port_ = 0;
  std::shared_ptr<loopback_internal::ServerState> state_;
};

}  // namespace topogang::testing
