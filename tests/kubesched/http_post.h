// Blocking HTTP/1.1 POSTs over one kept-alive connection (Boost.Beast), for the extender verbs
// a scheduling cycle waits on (filter, prioritize).
//
// Why not cpprestsdk, which the emulator uses elsewhere: it moves a body in 4 KiB chunks, each
// through a task continuation, so a 12,500-name filter request cost the emulator ~4 ms where Go's
// net/http spends well under one; the benchmark charged that to the extender. Go's Transport
// keeps the connection alive between cycles and, like this class, re-sends a request once when a
// reused idle connection turns out closed before anything was read.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace topogang::kubesched {

struct HttpReply {
  int status = 0;
  std::string content_encoding;  // "gzip" or ""
  std::string body;
};

class HttpPoster {
 public:
  HttpPoster(std::string host, std::string port);
  ~HttpPoster();
  HttpPoster(const HttpPoster&) = delete;
  HttpPoster& operator=(const HttpPoster&) = delete;

  // One request at a time (a scheduling cycle is single-threaded). Fails with the transport's
  // error after `timeout` in all, as http.Client.Timeout does.
  absl::StatusOr<HttpReply> Post(const std::string& target, const std::string& body,
                                 absl::Duration timeout);
  // Later requests fail at once; one in flight ends by its timeout or the peer.
  void Cancel();

 private:
  struct Conn;
  std::unique_ptr<Conn> conn_;
};

}  // namespace topogang::kubesched
