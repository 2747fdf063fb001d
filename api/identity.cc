#include "api/identity.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/file_util.h"

namespace topogang {

absl::StatusOr<TokenFile> ParseTokenFile(absl::string_view text, absl::string_view source) {
  TokenFile out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    auto bad = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line_no, ": ", what));
    };
    if (parts.size() != 2) return bad("expected 'TOKEN NODE' or 'TOKEN @admin'");
    std::string token(parts[0]);
    if (token.size() < 16) return bad("token shorter than 16 characters");
    if (out.node_by_token.count(token) || out.admin_tokens.count(token)) {
      return bad("token listed twice");
    }
    if (parts[1] == "@admin") {
      out.admin_tokens.insert(token);
    } else {
      out.node_by_token[token] = std::string(parts[1]);
    }
  }
  return out;
}

absl::StatusOr<TokenFile> LoadTokenFile(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return ParseTokenFile(*text, path);
}

std::vector<std::string> Authenticator::CertIdentities(const grpc::ServerContextBase& ctx) {
  std::vector<std::string> out;
  auto auth = ctx.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return out;
  for (const char* prop : {"x509_common_name", "x509_subject_alternative_name"}) {
    for (const grpc::string_ref& v : auth->FindPropertyValues(prop)) {
      out.emplace_back(v.data(), v.size());
    }
  }
  return out;
}

std::string Authenticator::BearerToken(const grpc::ServerContextBase& ctx) {
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return "";
  absl::string_view v(it->second.data(), it->second.size());
  if (!absl::ConsumePrefix(&v, "Bearer ")) return "";
  return std::string(absl::StripAsciiWhitespace(v));
}

grpc::Status Authenticator::AuthorizeAgent(const grpc::ServerContextBase& ctx,
                                           absl::string_view node) const {
  std::vector<std::string> ids = CertIdentities(ctx);
  if (!ids.empty()) {
    for (const std::string& id : ids) {
      if (id == node) return grpc::Status::OK;
    }
    return grpc::Status(
        grpc::StatusCode::PERMISSION_DENIED,
        absl::StrCat("client certificate names ", absl::StrJoin(ids, ", "), ", not node '", node,
                     "': an agent may only speak for its own node"));
  }
  std::string token = BearerToken(ctx);
  if (!token.empty()) {
    auto it = tokens_.node_by_token.find(token);
    if (it == tokens_.node_by_token.end()) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "unknown agent token");
    }
    if (it->second != node) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          absl::StrCat("token belongs to node '", it->second, "', not '", node,
                                       "': an agent may only speak for its own node"));
    }
    return grpc::Status::OK;
  }
  if (allow_unauthenticated_) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "agent presented no client certificate and no bearer token");
}

grpc::Status Authenticator::AuthorizeAdmin(const grpc::ServerContextBase& ctx) const {
  if (tokens_.admin_tokens.empty()) return grpc::Status::OK;
  std::string token = BearerToken(ctx);
  if (token.empty()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "admin call needs a bearer token");
  }
  if (!tokens_.admin_tokens.count(token)) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "token is not an admin token");
  }
  return grpc::Status::OK;
}

}  // namespace topogang
