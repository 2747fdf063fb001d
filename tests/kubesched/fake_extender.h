// A scheduler extender for the emulator's own tests: a cpprest listener on 127.0.0.1 that
// records every request and answers through a test-supplied handler (test-only, header-only).
// A handler may block (to hold a bind); each request is served on its own listener thread.
#pragma once

#include <arpa/inet.h>
#include <cpprest/http_listener.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tests/kubesched/api_objects.h"

namespace topogang::kubesched::testing {

// A port nothing listens on right now (the kernel's pick for port 0).
inline int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

struct ExtenderRequest {
  std::string verb;  // the last path segment: "filter", "prioritize", "bind"
  std::string path, body, content_type, user_agent, accept_encoding;
};

struct ExtenderReply {
  int status = 200;
  std::string body;
};

class FakeExtender {
 public:
  using Handler = std::function<ExtenderReply(const ExtenderRequest&)>;

  // Serves under `prefix` (e.g. "/topogang"); url() includes it.
  explicit FakeExtender(Handler handler, const std::string& prefix = "")
      : handler_(std::move(handler)) {
    for (int attempt = 0; attempt < 20 && !listener_; ++attempt) {
      url_ = "http://127.0.0.1:" + std::to_string(FreeLoopbackPort()) + prefix;
      try {
        auto l = std::make_unique<web::http::experimental::listener::http_listener>(url_);
        l->support([this](web::http::http_request req) { Serve(req); });
        l->open().wait();
        listener_ = std::move(l);
      } catch (...) {
      }
    }
  }
  ~FakeExtender() {
    if (listener_) {
      try {
        listener_->close().wait();
      } catch (...) {
      }
    }
  }

  const std::string& url() const { return url_; }
  std::vector<ExtenderRequest> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  int count(const std::string& verb) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& r : requests_) n += r.verb == verb;
    return n;
  }

 private:
  void Serve(web::http::http_request req) {
    ExtenderRequest r;
    r.path = req.relative_uri().path();
    r.verb = r.path.substr(r.path.find_last_of('/') + 1);
    if (r.verb.empty()) r.verb = r.path;
    r.path = req.request_uri().path();
    auto header = [&](const char* name) {
      return req.headers().has(name) ? req.headers().find(name)->second : std::string();
    };
    r.content_type = header("Content-Type");
    r.user_agent = header("User-Agent");
    r.accept_encoding = header("Accept-Encoding");
    r.body = req.extract_utf8string(true).get();
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(r);
    }
    ExtenderReply reply = handler_(r);
    web::http::http_response resp(static_cast<web::http::status_code>(reply.status));
    resp.set_body(reply.body, "application/json");
    req.reply(resp).then([](pplx::task<void> t) {
      try {
        t.get();
      } catch (...) {
      }
    });
  }

  Handler handler_;
  std::string url_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
  std::mutex mu_;
  std::vector<ExtenderRequest> requests_;
};

}  // namespace topogang::kubesched::testing
