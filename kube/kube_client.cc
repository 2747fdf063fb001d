#include "kube/kube_client.h"

#include <cpprest/http_client.h>

#include <boost/asio/ssl.hpp>
#include <iostream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/file_util.h"
#include "common/json_util.h"
#include "daemon/version.h"
#include "kube/bind_check.h"

namespace topogang {

using web::http::http_request;
using web::http::http_response;
using web::http::methods;
using web::http::client::http_client;
using web::http::client::http_client_config;

struct KubeClient::CancelState {
  std::mutex mu;
  pplx::cancellation_token_source source;
  std::atomic<bool> cancelled{false};
};

namespace {

// As client-go names its clients ("<binary>/<version> (<os>/<arch>)").
std::string UserAgent(const std::string& program) {
  return absl::StrCat(program, "/", TopogangVersion(), " (linux)");
}

http_client_config MakeConfig(const KubeConfig& c, std::chrono::milliseconds timeout) {
  http_client_config cfg;
  cfg.set_timeout(timeout);
  cfg.set_validate_certificates(!c.insecure_skip_verify);
  const std::string ca = c.ca_pem, cert = c.client_cert_pem, key = c.client_key_pem;
  if (!ca.empty() || !cert.empty()) {
    cfg.set_ssl_context_callback([ca, cert, key](boost::asio::ssl::context& ctx) {
      if (!ca.empty()) ctx.add_certificate_authority(boost::asio::buffer(ca.data(), ca.size()));
      if (!cert.empty()) {
        ctx.use_certificate_chain(boost::asio::buffer(cert.data(), cert.size()));
        ctx.use_private_key(boost::asio::buffer(key.data(), key.size()),
                            boost::asio::ssl::context::pem);
      }
    });
  }
  return cfg;
}

}  // namespace

std::string PathEscape(absl::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppend(&out, "%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return out;
}

KubeClient::KubeClient(KubeConfig config, absl::Duration request_timeout)
    : config_(std::move(config)), cancel_(std::make_unique<CancelState>()) {
  client_ = std::make_unique<http_client>(
      config_.server, MakeConfig(config_, std::chrono::milliseconds(std::max<int64_t>(
                                              1, absl::ToInt64Milliseconds(request_timeout)))));
  // Watches run up to timeoutSeconds (300) server-side; the client timeout is an inactivity
  // bound above that.
  watch_client_ =
      std::make_unique<http_client>(config_.server, MakeConfig(config_, std::chrono::seconds(330)));
  token_ = config_.token;
  token_read_ = absl::Now();
}

KubeClient::~KubeClient() { Cancel(); }

std::string KubeClient::Token() {
  std::lock_guard<std::mutex> lock(token_mu_);
  if (!config_.token_file.empty() && absl::Now() - token_read_ > absl::Minutes(1)) {
    auto t = ReadFileToString(config_.token_file, 1 << 20);
    if (t.ok()) token_ = std::string(absl::StripAsciiWhitespace(*t));
    token_read_ = absl::Now();
  }
  if (config_.exec) {
    const absl::Time now = absl::Now();
    const bool expiring = exec_expires_ && now > *exec_expires_ - absl::Seconds(30);
    if ((exec_stale_ || expiring) && now >= exec_retry_after_) {
      // Under token_mu_: concurrent requests wait for one plugin run instead of each starting one.
      auto t = RunExecPlugin(*config_.exec);
      if (t.ok()) {
        token_ = t->token;
        exec_expires_ = t->expires;
        exec_stale_ = false;
      } else {
        std::cerr << "topogangd: " << t.status().message() << std::endl;
        exec_retry_after_ = now + absl::Seconds(5);
      }
    }
  }
  return token_;
}

void KubeClient::TokenRejected() {
  std::lock_guard<std::mutex> lock(token_mu_);
  exec_stale_ = true;
}

absl::StatusOr<HttpResult> KubeClient::Send(const char* method, const std::string& path,
                                            const std::string* body, const char* content_type) {
  http_request req{web::http::method(method)};
  req.set_request_uri(path);
  req.headers().add("Accept", "application/json");
  req.headers().add("User-Agent", UserAgent(config_.program));
  if (std::string t = Token(); !t.empty()) req.headers().add("Authorization", "Bearer " + t);
  if (body) req.set_body(*body, content_type);
  try {
    http_response resp = client_->request(req).get();
    if (resp.status_code() == 401 && config_.exec) TokenRejected();
    return HttpResult{resp.status_code(), resp.extract_utf8string(true).get()};
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(method, " ", config_.server, path, ": ", e.what()));
  }
}

absl::StatusOr<HttpResult> KubeClient::Get(const std::string& path) {
  return Send("GET", path, nullptr);
}

absl::StatusOr<HttpResult> KubeClient::Post(const std::string& path, const std::string& body) {
  return Send("POST", path, &body);
}

absl::StatusOr<HttpResult> KubeClient::Put(const std::string& path, const std::string& body) {
  return Send("PUT", path, &body);
}

absl::StatusOr<HttpResult> KubeClient::MergePatch(const std::string& path,
                                                  const std::string& body) {
  return Send("PATCH", path, &body, "application/merge-patch+json");
}

void KubeClient::Cancel() {
  std::lock_guard<std::mutex> lock(cancel_->mu);
  cancel_->cancelled = true;
  cancel_->source.cancel();
}

absl::StatusOr<int> KubeClient::Watch(const std::string& path,
                                      const std::function<bool(absl::string_view)>& on_line) {
  pplx::cancellation_token token = pplx::cancellation_token::none();
  {
    std::lock_guard<std::mutex> lock(cancel_->mu);
    if (cancel_->cancelled) return absl::CancelledError("client stopped");
    token = cancel_->source.get_token();
  }
  http_request req(methods::GET);
  req.set_request_uri(path);
  req.headers().add("Accept", "application/json");
  req.headers().add("User-Agent", UserAgent(config_.program));
  if (std::string t = Token(); !t.empty()) req.headers().add("Authorization", "Bearer " + t);
  try {
    http_response resp = watch_client_->request(req, token).get();
    if (resp.status_code() != 200) {
      if (resp.status_code() == 401 && config_.exec) TokenRejected();
      (void)resp.extract_utf8string(true).get();
      return static_cast<int>(resp.status_code());
    }
    auto buf = resp.body().streambuf();
    std::string pending;
    char chunk[65536];
    for (;;) {
      // Wait for at least one byte, then take whatever else is already there.
      size_t n = buf.getn(reinterpret_cast<uint8_t*>(chunk), 1).get();
      if (n == 0) break;  // end of stream
      size_t avail = std::min(buf.in_avail(), sizeof(chunk) - 1);
      // Already buffered, so this completes at once.
      if (avail > 0) n += buf.getn(reinterpret_cast<uint8_t*>(chunk + 1), avail).get();
      pending.append(chunk, n);
      size_t start = 0;
      for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
        absl::string_view line(pending.data() + start, nl - start);
        if (!absl::StripAsciiWhitespace(line).empty() && !on_line(line)) return 200;
      }
      pending.erase(0, start);
      if (pending.size() > (64u << 20)) {
        return absl::ResourceExhaustedError("watch event larger than 64 MiB");
      }
    }
    // A partial last line means the connection dropped mid-event: it is discarded.
    return 200;
  } catch (const pplx::task_canceled&) {
    return absl::CancelledError("watch cancelled");
  } catch (const std::exception& e) {
    if (cancel_->cancelled) return absl::CancelledError("watch cancelled");
    return absl::UnavailableError(absl::StrCat("watch ", path, ": ", e.what()));
  }
}

absl::Status KubeBinder::Bind(const PodBinding& b) {
  Json body = {{"apiVersion", "v1"},
               {"kind", "Binding"},
               {"metadata", {{"name", b.pod_name}, {"namespace", b.pod_namespace}}},
               {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", b.node}}}};
  if (!b.pod_uid.empty()) body["metadata"]["uid"] = b.pod_uid;
  if (!b.annotations.empty()) body["metadata"]["annotations"] = b.annotations;
  const std::string pod_path = absl::StrCat("/api/v1/namespaces/", PathEscape(b.pod_namespace),
                                            "/pods/", PathEscape(b.pod_name));
  // Bind only what was asked: the pod as the API server has it now (bind_check.h).
  auto live = client_->Get(pod_path);
  if (!live.ok()) return live.status();
  if (live->status == 404) {
    return absl::NotFoundError(absl::StrCat("topogang refuses to bind pod ", b.pod_namespace, "/",
                                            b.pod_name, ": the API server has no such pod"));
  }
  if (live->status != 200) {
    return absl::UnavailableError(absl::StrCat("reading pod ", b.pod_namespace, "/", b.pod_name,
                                               " before binding it: HTTP ", live->status));
  }
  auto live_pod = ParseJson(live->body);
  if (!live_pod.ok()) return live_pod.status();
  auto check = CheckBindable(*live_pod, b);
  if (!check.ok()) return check.status();
  if (*check == BindCheck::kAlreadyBoundHere) return absl::OkStatus();  // a retry that went through
  auto r = client_->Post(pod_path + "/binding", DumpJson(body));
  if (!r.ok()) return r.status();
  if (r->status == 201 || r->status == 200) return absl::OkStatus();
  if (r->status == 404) {
    // Deleted between the read and the binding: gone, as above (the ledger gives its slot back).
    return absl::NotFoundError(absl::StrCat("binding ", b.pod_namespace, "/", b.pod_name, " to ",
                                            b.node, ": the API server has no such pod any more"));
  }
  if (r->status == 409) {
    // Bound meanwhile (a retry that went through, or someone else), or the UID precondition failed:
    // the pod was deleted and recreated under its name since the read. Read it again to tell.
    auto pod = client_->Get(pod_path);
    if (pod.ok() && pod->status == 404) {
      return absl::NotFoundError(absl::StrCat("binding ", b.pod_namespace, "/", b.pod_name,
                                              ": the pod was deleted while it was being bound"));
    }
    if (pod.ok() && pod->status == 200) {
      if (auto j = ParseJson(pod->body); j.ok()) {
        auto again = CheckBindable(*j, b);
        if (again.ok() && *again == BindCheck::kAlreadyBoundHere) return absl::OkStatus();
        if (absl::IsNotFound(again.status())) return again.status();
      }
    }
  }
  std::string msg = r->body.substr(0, 300);
  if (auto j = ParseJson(r->body); j.ok()) {
    if (const Json* m = GoField(*j, "message"); m && m->is_string()) msg = m->get<std::string>();
  }
  return absl::Status(
      r->status == 409 ? absl::StatusCode::kAlreadyExists : absl::StatusCode::kUnavailable,
      absl::StrCat("binding ", b.pod_namespace, "/", b.pod_name, " to ", b.node, ": HTTP ",
                   r->status, ": ", msg));
}

std::string MakePodEvent(const PodBinding& pod, absl::string_view type, absl::string_view reason,
                         absl::string_view message, absl::Time now) {
  std::string ts = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", now, absl::UTCTimeZone());
  std::string micro = absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", now, absl::UTCTimeZone());
  Json involved = {{"apiVersion", "v1"},
                   {"kind", "Pod"},
                   {"namespace", pod.pod_namespace},
                   {"name", pod.pod_name}};
  if (!pod.pod_uid.empty()) involved["uid"] = pod.pod_uid;
  Json e = {{"apiVersion", "v1"},
            {"kind", "Event"},
            {"metadata",
             {{"generateName", pod.pod_name + ".topogang-"}, {"namespace", pod.pod_namespace}}},
            {"involvedObject", involved},
            {"reason", reason},
            {"message", std::string(message).substr(0, 1024)},
            {"type", type},
            {"source", {{"component", "topogangd"}}},
            {"reportingComponent", "topogangd"},
            {"reportingInstance", "topogangd"},
            {"action", "Scheduling"},
            {"firstTimestamp", ts},
            {"lastTimestamp", ts},
            {"eventTime", micro},
            {"count", 1}};
  return DumpJson(e);
}

}  // namespace topogang
