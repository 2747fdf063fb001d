#include "extender/tls_reloader.h"

#include <boost/asio/ssl/context.hpp>

#include "absl/strings/str_cat.h"

namespace topogang {

absl::StatusOr<std::unique_ptr<TlsReloader>> TlsReloader::Create(TlsFiles files,
                                                                 std::chrono::milliseconds interval,
                                                                 Log log) {
  auto pem = ReadTlsFiles(files);
  if (!pem.ok()) return pem.status();
  auto ctx = BuildServerTlsContext(*pem, files);
  if (!ctx.ok()) return ctx.status();
  std::unique_ptr<TlsReloader> r(new TlsReloader(std::move(files), std::move(log)));
  r->Install(*pem, *std::move(ctx), /*first=*/true);
  if (interval.count() > 0) r->thread_ = std::thread([p = r.get(), interval] { p->Run(interval); });
  return r;
}

TlsReloader::~TlsReloader() { Stop(); }

void TlsReloader::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<boost::asio::ssl::context> TlsReloader::Current() const {
  std::lock_guard<std::mutex> l(mu_);
  return current_;
}

int TlsReloader::reloads() const {
  std::lock_guard<std::mutex> l(mu_);
  return reloads_;
}

int TlsReloader::failures() const {
  std::lock_guard<std::mutex> l(mu_);
  return failures_;
}

void TlsReloader::Run(std::chrono::milliseconds interval) {
  std::unique_lock<std::mutex> l(mu_);
  while (!cv_.wait_for(l, interval, [this] { return stopping_; })) {
    l.unlock();
    CheckNow();
    l.lock();
  }
}

bool TlsReloader::CheckNow() {
  auto pem = ReadTlsFiles(files_);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (pem.ok() && *pem == serving_) return false;  // the common case: nothing changed
    if (pem.ok() && *pem == last_failed_) return false;
  }
  absl::Status error;
  if (pem.ok()) {
    auto ctx = BuildServerTlsContext(*pem, files_);
    if (ctx.ok()) {
      Install(*pem, *std::move(ctx), /*first=*/false);
      return true;
    }
    error = ctx.status();
  } else {
    error = pem.status();  // e.g. a file missing for a moment while its symlink is swapped
  }
  std::lock_guard<std::mutex> l(mu_);
  const TlsPem failed = pem.ok() ? *pem : TlsPem{"unreadable", error.ToString(), ""};
  if (failed == last_failed_) return false;
  last_failed_ = failed;
  ++failures_;
  log_(
      absl::StrCat("error: extender TLS files changed but do not load, still serving the "
                   "previous certificate: ",
                   error.message()));
  return false;
}

void TlsReloader::Install(const TlsPem& pem, ServerTlsContext ctx, bool first) {
  std::lock_guard<std::mutex> l(mu_);
  current_ = std::move(ctx.context);
  serving_ = pem;
  last_failed_ = {};
  if (!first) ++reloads_;
  log_(absl::StrCat(first ? "extender TLS certificate: " : "extender TLS certificate reloaded: ",
                    ctx.description));
  if (ctx.expired) {
    log_(absl::StrCat("warning: the extender TLS certificate has expired (", files_.cert_file,
                      "); clients that verify it will refuse every connection"));
  }
}

}  // namespace topogang
