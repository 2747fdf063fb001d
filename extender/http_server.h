// kube-scheduler's view of topogang: POST <prefix>/<verb> for filter, prioritize, bind and
// preempt (verbs and prefix configurable, to match the KubeSchedulerConfiguration), plus GET
// /healthz, /readyz and /stats (gangs reserved/running, binds held). Handlers parse, call
// ExtenderService and reply; bind replies are sent later from the service's callback, so no server
// thread waits for a gang.
//
// Only HTTP 200 is accepted by kube-scheduler, so verb-level problems (bad JSON, absurd input) go
// back as 200 with the result's Error field where the type has one (filter, bind); prioritize and
// preempt, which have none, answer 400 with the message.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>

#include "absl/status/status.h"
#include "extender/extender_service.h"

namespace web::http::experimental::listener {
class http_listener;
}

namespace topogang {

struct HttpServerOptions {
  std::string bind_address = "127.0.0.1";
  int port = 8888;
  std::string prefix = "";  // e.g. "/scheduler"; requests go to prefix + "/" + verb
  std::string filter_verb = "filter";
  std::string prioritize_verb = "prioritize";
  std::string bind_verb = "bind";
  std::string preempt_verb = "preempt";
  size_t max_body_bytes = 64u << 20;
};

class ExtenderHttpServer {
 public:
  ExtenderHttpServer(ExtenderService& service, HttpServerOptions options);
  ~ExtenderHttpServer();

  absl::Status Start();
  void Stop();
  // /readyz answers 200 only once the model is in sync (kube mode: after the first list).
  void SetReady(bool ready) { ready_ = ready; }
  std::string BaseUrl() const;  // http://addr:port

 private:
  ExtenderService& service_;
  HttpServerOptions options_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
  std::atomic<bool> ready_{true};
  std::atomic<bool> started_{false};
  // Handler continuations run on cpprest's pool and may outlive Stop(); they hold this shared
  // lock while touching the service, and Stop() flips `alive` under the exclusive lock.
  struct Guard {
    std::shared_mutex mu;
    bool alive = true;
  };
  std::shared_ptr<Guard> guard_ = std::make_shared<Guard>();
};

// A free TCP port on 127.0.0.1 (bind to port 0 and read it back). For tests and the load tool.
int PickFreePort();

}  // namespace topogang
