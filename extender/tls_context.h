// The extender port's server TLS: an asio ssl::context built from PEM text (certificate chain,
// private key, and optionally the CA that client certificates must chain to).
//
// Built from contents, not paths, so the reloader (tls_reloader.h) can compare what is on disk
// with what is serving and build a fresh context only when the bytes changed: Kubernetes Secret
// volumes swap a `..data` symlink, which no mtime on the visible path reflects reliably.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace boost::asio::ssl {
class context;
}

namespace topogang {

struct TlsFiles {
  std::string cert_file;       // PEM: the server certificate first, then intermediates
  std::string key_file;        // PEM: its private key (unencrypted)
  std::string client_ca_file;  // PEM: "" = no client certificates; else they are required (mTLS)
  bool enabled() const { return !cert_file.empty(); }
};

// The three files' contents as read at one moment.
struct TlsPem {
  std::string cert, key, client_ca;
  bool operator==(const TlsPem&) const = default;
};

struct ServerTlsContext {
  std::shared_ptr<boost::asio::ssl::context> context;
  std::string description;  // "subject CN=x, serial 0A1B, not after <date>[, client CA: <subject>]"
  bool expired = false;     // the leaf's notAfter is past (served anyway: nothing better is known)
};

// Reads the files named in `files` (each at most 1 MiB); errors name the key and the path.
absl::StatusOr<TlsPem> ReadTlsFiles(const TlsFiles& files);

// TLS 1.2+, HTTP/1.1 by ALPN when offered, idle connections' buffers released. With a client CA:
// SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT against exactly that CA, which is also sent
// as the acceptable issuer list. `files` only names the inputs in error messages. Never prompts
// for a passphrase: an encrypted key is an error.
absl::StatusOr<ServerTlsContext> BuildServerTlsContext(const TlsPem& pem, const TlsFiles& files);

}  // namespace topogang
