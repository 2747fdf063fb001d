#include "cli/remote_client.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cli/remote.h"
#include "common/file_util.h"

namespace topogang::cli {

namespace v1 = ::topogang::v1;

const char kConnHelp[] = R"(
connection:
  --server HOST:PORT      topogangd gRPC address (required)
  --token-file FILE       bearer token (or $TOPOGANG_TOKEN); drain needs an admin token
                          when the daemon has any
  --ca FILE               CA bundle to verify topogangd (enables TLS)
  --cert FILE --key FILE  client certificate for mutual TLS
  --tls-server-name NAME  expected name in topogangd's certificate
  --timeout SECONDS       per call (default 30)
  --format table|json     output (default table)
)";

std::set<std::string> WithValue(std::initializer_list<const char*> extra) {
  std::set<std::string> s(extra.begin(), extra.end());
  for (const char* const* f = kRemoteFlags; *f; ++f) s.insert(*f);
  return s;
}

void Remote::Prepare(grpc::ClientContext* ctx, bool deadline) const {
  if (deadline) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_s));
  }
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
}

absl::StatusOr<Remote> Connect(const Args& a) {
  Remote r;
  const std::string server = a.Get("server");
  if (server.empty()) return absl::InvalidArgumentError("--server HOST:PORT is required");
  const std::string format = a.Get("format", "table");
  if (format != "table" && format != "json") {
    return absl::InvalidArgumentError(
        absl::StrCat("--format must be table or json, got '", format, "'"));
  }
  r.json = format == "json";
  if (a.Has("timeout") && (!absl::SimpleAtoi(a.Get("timeout"), &r.timeout_s) || r.timeout_s < 1 ||
                           r.timeout_s > 3600)) {
    return absl::InvalidArgumentError("--timeout must be 1..3600 seconds");
  }
  if (a.Has("token-file")) {
    auto t = ReadFileToString(a.Get("token-file"));
    if (!t.ok()) return t.status();
    r.token = std::string(absl::StripAsciiWhitespace(*t));
  } else if (const char* t = std::getenv("TOPOGANG_TOKEN")) {
    r.token = t;
  }
  grpc::ChannelArguments args;
  if (a.Has("tls-server-name")) args.SetSslTargetNameOverride(a.Get("tls-server-name"));
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (a.Has("ca") || a.Has("cert")) {
    grpc::SslCredentialsOptions ssl;
    for (auto [flag, dst] : {std::pair<const char*, std::string*>{"ca", &ssl.pem_root_certs},
                             {"cert", &ssl.pem_cert_chain},
                             {"key", &ssl.pem_private_key}}) {
      if (!a.Has(flag)) continue;
      auto pem = ReadFileToString(a.Get(flag));
      if (!pem.ok()) return pem.status();
      *dst = *pem;
    }
    creds = grpc::SslCredentials(ssl);
  }
  r.stub = v1::PlacementService::NewStub(grpc::CreateCustomChannel(server, creds, args));
  return r;
}

int Fail(absl::string_view cmd, const grpc::Status& s) {
  std::cerr << "topogang " << cmd << ": " << s.error_message() << " ("
            << absl::StatusCodeToString(static_cast<absl::StatusCode>(s.error_code())) << ")\n";
  // NOT_FOUND and refusals of bad input are the caller's; the rest is the daemon/network.
  switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return 2;
    default:
      return 1;
  }
}

void PrintJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.always_print_primitive_fields = true;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  std::cout << out;
  if (out.empty() || out.back() != '\n') std::cout << "\n";
}

}  // namespace topogang::cli
