#include "extender/http_server.h"

#include <arpa/inet.h>
#include <cpprest/http_listener.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace topogang {

using web::http::http_request;
using web::http::http_response;
using web::http::methods;
using web::http::status_code;
using web::http::status_codes;
using web::http::experimental::listener::http_listener;
using web::http::experimental::listener::http_listener_config;

namespace {

// Replies in flight (all servers in the process): Stop() lets them drain before closing, so a
// held bind failed at shutdown still reaches kube-scheduler.
std::atomic<int> g_pending_replies{0};

void Reply(http_request req, status_code code, std::string body,
           const char* type = "application/json") {
  http_response resp(code);
  resp.set_body(std::move(body), type);
  ++g_pending_replies;
  req.reply(resp).then([](pplx::task<void> t) {
    try {
      t.get();
    } catch (...) {
      // The client went away; nothing to do.
    }
    --g_pending_replies;
  });
}

// A filter reply for a request we could not read: no node list to answer, only the Error.
std::string FilterError(std::string msg) {
  ExtenderFilterResult r;
  r.error = std::move(msg);
  return SerializeFilterResult(r);
}

std::string JoinPath(const std::string& prefix, const std::string& verb) {
  std::string p = prefix;
  while (!p.empty() && p.back() == '/') p.pop_back();
  if (!p.empty() && p.front() != '/') p.insert(p.begin(), '/');
  std::string v = verb;
  while (!v.empty() && v.front() == '/') v.erase(v.begin());
  return p + "/" + v;
}

}  // namespace

int PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    socklen_t len = sizeof(addr);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

ExtenderHttpServer::ExtenderHttpServer(ExtenderService& service, HttpServerOptions options)
    : service_(service), options_(std::move(options)) {}

ExtenderHttpServer::~ExtenderHttpServer() { Stop(); }

std::string ExtenderHttpServer::BaseUrl() const {
  return absl::StrCat("http://", options_.bind_address, ":", options_.port);
}

absl::Status ExtenderHttpServer::Start() {
  if (options_.port <= 0 || options_.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("invalid port ", options_.port));
  }
  const std::string filter = JoinPath(options_.prefix, options_.filter_verb);
  const std::string prioritize = JoinPath(options_.prefix, options_.prioritize_verb);
  const std::string bind = JoinPath(options_.prefix, options_.bind_verb);
  const std::string preempt = JoinPath(options_.prefix, options_.preempt_verb);
  http_listener_config config;
  config.set_timeout(std::chrono::seconds(30));
  try {
    listener_ = std::make_unique<http_listener>(BaseUrl() + "/", config);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("listener ", BaseUrl(), ": ", e.what()));
  }
  const size_t limit = options_.max_body_bytes;
  listener_->support([=, this, guard = guard_](http_request req) {
    const std::string path = req.relative_uri().path();
    const auto method = req.method();
    const bool is_verb = path == filter || path == prioritize || path == bind || path == preempt;
    if (method == methods::GET && !is_verb) {
      if (path == "/healthz") return Reply(req, status_codes::OK, "ok", "text/plain");
      if (path == "/stats") {
        std::shared_lock<std::shared_mutex> alive(guard->mu);
        if (!guard->alive)
          return Reply(req, status_codes::ServiceUnavailable, "stopping", "text/plain");
        ExtenderService::Stats st = service_.GetStats();
        return Reply(req, status_codes::OK,
                     absl::StrCat("{\"reserved_gangs\":", st.reserved_gangs, ",\"running_gangs\":",
                                  st.running_gangs, ",\"held_binds\":", st.held_binds, "}"));
      }
      if (path == "/readyz") {
        return ready_ ? Reply(req, status_codes::OK, "ready", "text/plain")
                      : Reply(req, status_codes::ServiceUnavailable, "not ready", "text/plain");
      }
      return Reply(req, status_codes::NotFound, "not found", "text/plain");
    }
    int verb = path == filter       ? 0
               : path == prioritize ? 1
               : path == bind       ? 2
               : path == preempt    ? 3
                                    : -1;
    if (verb < 0) return Reply(req, status_codes::NotFound, "not found", "text/plain");
    if (method != methods::POST) {
      return Reply(req, status_codes::MethodNotAllowed, "use POST", "text/plain");
    }
    const auto declared = req.headers().content_length();
    if (declared > limit) {
      std::string msg =
          absl::StrCat("request body of ", declared, " bytes exceeds the limit of ", limit);
      if (verb == 0) return Reply(req, status_codes::OK, FilterError(msg));
      if (verb == 2) return Reply(req, status_codes::OK, SerializeBindingResult({msg}));
      return Reply(req, status_codes::RequestEntityTooLarge, msg, "text/plain");
    }
    req.extract_utf8string(true).then([=, this, guard = guard_](pplx::task<std::string> t) {
      std::shared_lock<std::shared_mutex> alive(guard->mu);
      if (!guard->alive) {
        return Reply(req, status_codes::ServiceUnavailable, "topogang is shutting down",
                     "text/plain");
      }
      std::string body;
      try {
        body = t.get();
      } catch (const std::exception& e) {
        return Reply(req, status_codes::BadRequest, absl::StrCat("reading body: ", e.what()),
                     "text/plain");
      }
      if (body.size() > limit) {
        std::string msg = absl::StrCat("request body exceeds the limit of ", limit, " bytes");
        if (verb == 0) return Reply(req, status_codes::OK, FilterError(msg));
        if (verb == 2) return Reply(req, status_codes::OK, SerializeBindingResult({msg}));
        return Reply(req, status_codes::RequestEntityTooLarge, msg, "text/plain");
      }
      try {
        switch (verb) {
          case 0: {
            auto args = ParseExtenderArgs(body);
            if (!args.ok()) {
              return Reply(req, status_codes::OK,
                           FilterError(std::string(args.status().message())));
            }
            return Reply(req, status_codes::OK, SerializeFilterResult(service_.Filter(*args)));
          }
          case 1: {
            auto args = ParseExtenderArgs(body);
            if (!args.ok()) {
              return Reply(req, status_codes::BadRequest, std::string(args.status().message()),
                           "text/plain");
            }
            auto scores = service_.Prioritize(*args);
            if (!scores.ok()) {
              return Reply(req, status_codes::BadRequest, std::string(scores.status().message()),
                           "text/plain");
            }
            return Reply(req, status_codes::OK, SerializeHostPriorityList(*scores));
          }
          case 2: {
            auto args = ParseBindingArgs(body);
            if (!args.ok()) {
              return Reply(req, status_codes::OK,
                           SerializeBindingResult({std::string(args.status().message())}));
            }
            service_.Bind(*args, [req](const ExtenderBindingResult& r) {
              Reply(req, status_codes::OK, SerializeBindingResult(r));
            });
            return;
          }
          case 3: {
            auto args = ParsePreemptionArgs(body);
            if (!args.ok()) {
              return Reply(req, status_codes::BadRequest, std::string(args.status().message()),
                           "text/plain");
            }
            return Reply(req, status_codes::OK, SerializePreemptionResult(service_.Preempt(*args)));
          }
        }
      } catch (const std::exception& e) {
        // Defensive: nothing below should throw, but a bug must not take the daemon down.
        return Reply(req, status_codes::InternalError, absl::StrCat("internal error: ", e.what()),
                     "text/plain");
      }
    });
  });
  try {
    listener_->open().wait();
  } catch (const std::exception& e) {
    listener_.reset();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", BaseUrl(), ": ", e.what()));
  }
  started_ = true;
  return absl::OkStatus();
}

void ExtenderHttpServer::Stop() {
  if (!started_.exchange(false) || !listener_) return;
  {
    // Waits for handlers in progress; later ones answer 503 without touching the service.
    std::unique_lock<std::shared_mutex> lock(guard_->mu);
    guard_->alive = false;
  }
  // Answer held binds first: closing waits for requests in flight.
  service_.FailHeldBinds("topogang is shutting down");
  for (int i = 0; i < 200 && g_pending_replies.load() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // bounded drain (2 s)
  }
  try {
    listener_->close().wait();
  } catch (...) {
  }
}

}  // namespace topogang
