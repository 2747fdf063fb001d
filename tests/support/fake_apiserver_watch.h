// FakeApiServer's open watch (fake_apiserver.cc streams events to it; the timeouts of
// fake_apiserver_watch_timeouts.cc end it). Internal to the fake.
#pragma once

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "tests/support/fake_apiserver.h"
#include "tests/support/lagged_delivery.h"
#include "tests/support/loopback_http_server.h"

namespace topogang::testing {

struct FakeApiServer::Watch : std::enable_shared_from_this<FakeApiServer::Watch> {
  std::string kind;
  std::shared_ptr<ReplyStream> stream;  // the watch's chunked reply: one event per line
  // SetWatchLag: the stream's writes and its close go through `lag`, in order. `closing` is set
  // at once, under the server's lock, so nothing is written after a close that is still due.
  LaggedDelivery* lag = nullptr;
  bool closing = false;
  // SetWatchTimeouts: when the server ends it, as the real one times a watch out.
  absl::Time deadline = absl::InfiniteFuture();

  // Called under the server's lock (a lagged watch's: on the delivery thread, which never takes
  // it). Nothing here waits: ReplyStream queues the bytes for the connection's own thread.
  void Write(const std::string& s) {
    if (lag == nullptr) return stream->Write(s);
    if (closing) return;
    lag->Post([self = shared_from_this(), s] { self->stream->Write(s); });
  }
  void Close() {
    if (lag == nullptr) return stream->Close();
    if (closing) return;
    closing = true;
    lag->Post([self = shared_from_this()] { self->stream->Close(); });
  }
};

}  // namespace topogang::testing
