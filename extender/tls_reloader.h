// Keeps the extender's TLS context in step with the certificate files on disk.
//
// cert-manager rotates certificates well before they expire, and the kubelet updates a mounted
// Secret by swapping a `..data` symlink: no inotify event on the visible path, and an mtime that
// may not change. So a thread re-reads the files every interval and compares their bytes with
// what is serving; when they differ it builds a new context, which new connections get (open ones
// keep theirs). A file that does not load (half-written, key not yet matching the certificate,
// garbage) keeps the previous context serving and is logged once per distinct content.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "extender/tls_context.h"

namespace topogang {

class TlsReloader {
 public:
  using Log = std::function<void(const std::string&)>;

  // Loads the files once (an error names the key and path: the daemon must not start without
  // its certificate), then checks them every `interval` (zero: never).
  static absl::StatusOr<std::unique_ptr<TlsReloader>> Create(TlsFiles files,
                                                             std::chrono::milliseconds interval,
                                                             Log log);
  ~TlsReloader();
  TlsReloader(const TlsReloader&) = delete;
  TlsReloader& operator=(const TlsReloader&) = delete;

  // The context for a new connection; it stays valid for as long as the caller holds it.
  std::shared_ptr<boost::asio::ssl::context> Current() const;
  // Re-reads the files now; true when a new context was installed. The thread calls this.
  bool CheckNow();
  // Ends the thread; idempotent.
  void Stop();

  int reloads() const;   // contexts installed after the first
  int failures() const;  // changed contents that did not load

 private:
  TlsReloader(TlsFiles files, Log log) : files_(std::move(files)), log_(std::move(log)) {}
  void Install(const TlsPem& pem, ServerTlsContext ctx, bool first);
  void Run(std::chrono::milliseconds interval);

  const TlsFiles files_;
  const Log log_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::shared_ptr<boost::asio::ssl::context> current_;
  TlsPem serving_;      // the contents behind current_
  TlsPem last_failed_;  // the last contents that did not load (logged once)
  int reloads_ = 0;
  int failures_ = 0;
  std::thread thread_;
};

}  // namespace topogang
