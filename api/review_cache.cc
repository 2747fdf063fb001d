#include "api/review_cache.h"

#include <openssl/evp.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace topogang {

std::string ReviewCacheKey(std::initializer_list<absl::string_view> parts) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  for (absl::string_view p : parts) {
    const uint64_t n = p.size();
    EVP_DigestUpdate(ctx, &n, sizeof(n));
    EVP_DigestUpdate(ctx, p.data(), p.size());
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(md), len));
}

absl::StatusOr<TokenVerdict> CachingTokenReviewer::Review(
    const std::string& token, const std::vector<std::string>& audiences) {
  std::string joined;
  for (const std::string& a : audiences) absl::StrAppend(&joined, a.size(), ":", a, ";");
  const std::string key = ReviewCacheKey({token, joined});
  TokenVerdict v;
  if (cache_.Get(key, &v)) return v;
  ++asked_;
  auto r = inner_->Review(token, audiences);
  if (r.ok()) cache_.Put(key, *r, r->authenticated);
  return r;
}

absl::StatusOr<AccessVerdict> CachingAccessReviewer::Review(const AccessQuestion& q) {
  std::string who = absl::StrCat(q.user.username.size(), ":", q.user.username, q.user.uid.size(),
                                 ":", q.user.uid);
  for (const std::string& g : q.user.groups) absl::StrAppend(&who, "g", g.size(), ":", g);
  for (const auto& [k, vs] : q.user.extra) {
    absl::StrAppend(&who, "x", k.size(), ":", k);
    for (const std::string& v : vs) absl::StrAppend(&who, "v", v.size(), ":", v);
  }
  const std::string key = ReviewCacheKey({who, q.verb, q.group, q.resource, q.name});
  AccessVerdict v;
  if (cache_.Get(key, &v)) return v;
  ++asked_;
  auto r = inner_->Review(q);
  if (r.ok()) cache_.Put(key, *r, r->allowed);
  return r;
}

}  // namespace topogang
