#include "extender/http_server.h"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "extender/http_server_core.h"
#include "extender/http_session.h"
#include "extender/tls_reloader.h"

namespace topogang {

using http_internal::kHealthConnections;
using http_internal::PlainSession;
using http_internal::SessionBase;
using http_internal::TlsSession;
namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using std::chrono::milliseconds;

namespace {

bool IsLoopback(const std::string& address) {
  beast::error_code ec;
  auto addr = net::ip::make_address(address, ec);
  return !ec && addr.is_loopback();
}

}  // namespace

std::string PlainHttpWarning(const std::string& bind_address, const TlsFiles& tls) {
  if (tls.enabled() || IsLoopback(bind_address)) return "";
  return absl::StrCat(
      "warning: serving plain HTTP on ", bind_address,
      ", which is not a loopback address: anyone who can reach the port can call filter and "
      "bind (which acts with topogangd's pods/binding right); set daemon.tls.cert_file, "
      "key_file and client_ca_file (docs/security.md)");
}

void http_internal::ServerCore::Accept(tcp::acceptor& acc, bool health) {
  acc.async_accept(net::make_strand(ioc),
                   [this, &acc, health](beast::error_code ec, tcp::socket socket) {
                     if (ec == net::error::operation_aborted || !acc.is_open()) return;  // stopping
                     if (!ec) {
                       beast::error_code ignored;
                       socket.set_option(tcp::no_delay(true), ignored);
                       std::shared_ptr<PlainSession> plain;
                       std::shared_ptr<TlsSession> secure;
                       {
                         std::lock_guard<std::mutex> l(mu);
                         int& open = health ? health_sessions : verb_sessions;
                         if (open < (health ? kHealthConnections : max_connections)) {
                           ++open;
                           uint64_t id = next_id++;
                           // Sessions keep Core alive through their own shared_ptr; `this` is owned
                           // by one.
                           if (tls && !health) {
                             secure = std::make_shared<TlsSession>(
                                 std::move(socket), tls->Current(), shared_self.lock(), id, health);
                             sessions[id] = secure;
                           } else {
                             plain = std::make_shared<PlainSession>(std::move(socket), nullptr,
                                                                    shared_self.lock(), id, health);
                             sessions[id] = plain;
                           }
                         }
                       }
                       if (secure) {
                         secure->Start();
                       } else if (plain) {
                         plain->Start();
                       } else {
                         socket.close(ignored);  // over the connection limit
                       }
                     }
                     Accept(acc, health);
                   });
}

ExtenderHttpServer::ExtenderHttpServer(ExtenderService& service, HttpServerOptions options,
                                       DaemonMetrics* metrics, HttpTransportOptions transport)
    : service_(service), options_(std::move(options)), transport_(std::move(transport)) {
  if (!transport_.log) {
    transport_.log = [](const std::string& line) {
      std::cerr << "topogangd: " << line << std::endl;
    };
  }
  core_ = std::make_shared<http_internal::ServerCore>(service_, options_, metrics, transport_);
  core_->shared_self = core_;
  core_->max_connections = std::max(1, options_.max_connections);
}

ExtenderHttpServer::~ExtenderHttpServer() { Stop(); }

void ExtenderHttpServer::SetReady(bool ready) { core_->routes.SetReady(ready); }
void ExtenderHttpServer::SetLeader(bool leader) { core_->routes.SetLeader(leader); }

int ExtenderHttpServer::tls_reloads() const { return core_->tls ? core_->tls->reloads() : 0; }
int ExtenderHttpServer::tls_reload_failures() const {
  return core_->tls ? core_->tls->failures() : 0;
}

std::string ExtenderHttpServer::BaseUrl() const {
  return absl::StrCat(transport_.tls.enabled() ? "https://" : "http://", options_.bind_address, ":",
                      options_.port);
}

namespace {

absl::StatusOr<tcp::acceptor> Listen(net::io_context& ioc, const net::ip::address& addr, int port,
                                     const std::string& what) {
  beast::error_code ec;
  tcp::endpoint ep(addr, static_cast<unsigned short>(port));
  tcp::acceptor acc(net::make_strand(ioc));
  acc.open(ep.protocol(), ec);
  if (!ec) acc.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(ep, ec);
  if (!ec) acc.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return absl::UnavailableError(absl::StrCat("cannot listen on ", what, ": ", ec.message()));
  return acc;
}

}  // namespace

absl::Status ExtenderHttpServer::Start() {
  if (options_.port < 0 || options_.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("invalid port ", options_.port));
  }
  if (transport_.health_port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("invalid health port ", transport_.health_port));
  }
  if (core_->acceptor) return absl::FailedPreconditionError("server already started");
  beast::error_code ec;
  auto addr = net::ip::make_address(options_.bind_address, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid bind address \"", options_.bind_address, "\": ", ec.message()));
  }
  if (transport_.tls.enabled()) {
    if (transport_.tls.key_file.empty()) {
      return absl::InvalidArgumentError("daemon.tls: cert_file is set but key_file is not");
    }
    auto tls = TlsReloader::Create(transport_.tls,
                                   milliseconds(std::max(0, transport_.tls_reload_interval_ms)),
                                   transport_.log);
    if (!tls.ok())
      return absl::Status(tls.status().code(),
                          absl::StrCat("daemon.tls: ", tls.status().message()));
    core_->tls = *std::move(tls);
  } else if (std::string w = PlainHttpWarning(options_.bind_address, transport_.tls); !w.empty()) {
    transport_.log(w);
  }
  auto acc = Listen(core_->ioc, addr, options_.port, BaseUrl());
  if (!acc.ok()) return acc.status();
  options_.port = acc->local_endpoint().port();  // port 0: the one the kernel chose
  if (transport_.health_port >= 0) {
    auto health = Listen(core_->ioc, addr, transport_.health_port,
                         absl::StrCat("health port ", transport_.health_port));
    if (!health.ok()) return health.status();
    transport_.health_port = health->local_endpoint().port();
    transport_.log(absl::StrCat("health port ", transport_.health_port,
                                ": plain HTTP, GET /healthz, /readyz and /metrics only"));
    core_->health_acceptor.emplace(*std::move(health));
  }
  core_->acceptor.emplace(*std::move(acc));
  core_->work.emplace(core_->ioc.get_executor());
  core_->Accept(*core_->acceptor, /*health=*/false);
  if (core_->health_acceptor) core_->Accept(*core_->health_acceptor, /*health=*/true);
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
  if (c.health_acceptor) {
    net::post(c.health_acceptor->get_executor(), [core = core_] {
      beast::error_code ignored;
      core->health_acceptor->close(ignored);
    });
  }
  if (c.tls) c.tls->Stop();
  c.routes.Shutdown();
  // 2. Held binds get their failure reply before the connections close.
  service_.ledger().FailHeldBinds("topogang is shutting down");
  {
    std::unique_lock<std::mutex> l(c.mu);
    c.cv.wait_for(l, std::chrono::seconds(2), [&] { return c.pending_replies == 0; });
  }
  // 3. Close every connection, let the threads run out of work, join them.
  std::vector<std::shared_ptr<SessionBase>> open;
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
