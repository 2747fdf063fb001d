// A scheduler extender for the emulator's own tests: a LoopbackHttpServer on 127.0.0.1 that
// records every request and answers through a test-supplied handler (test-only, header-only).
// A handler may block (to hold a bind); each connection is served on its own thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tests/kubesched/api_objects.h"
#include "tests/support/loopback_http_server.h"

namespace topogang::kubesched::testing {

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

  // Serves under `prefix` (e.g. "/topogang"); url() includes it. Other paths are 404.
  explicit FakeExtender(Handler handler, const std::string& prefix = "")
      : handler_(std::move(handler)),
        base_(prefix.substr(0, prefix.find_last_not_of('/') + 1)),
        server_([this](std::shared_ptr<topogang::testing::HttpExchange> ex) { Serve(*ex); }),
        url_(server_.url() + prefix) {}

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
  void Serve(topogang::testing::HttpExchange& ex) {
    const topogang::testing::HttpRequest& req = ex.request();
    if (!base_.empty() && req.path != base_ && req.path.rfind(base_ + "/", 0) != 0) {
      return ex.Reply(404, "", "");
    }
    ExtenderRequest r;
    r.path = req.path;
    r.verb = r.path.substr(r.path.find_last_of('/') + 1);
    if (r.verb.empty()) r.verb = r.path.substr(base_.size());
    r.content_type = req.Header("Content-Type");
    r.user_agent = req.Header("User-Agent");
    r.accept_encoding = req.Header("Accept-Encoding");
    r.body = req.body;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(r);
    }
    ExtenderReply reply = handler_(r);
    ex.Reply(reply.status, reply.body);
  }

  Handler handler_;
  const std::string base_;  // the prefix without its trailing '/'s
  std::mutex mu_;
  std::vector<ExtenderRequest> requests_;
  // Last but for url_: stopped (its threads joined) before the members its handler uses go.
  topogang::testing::LoopbackHttpServer server_;
  const std::string url_;
};

}  // namespace topogang::kubesched::testing
