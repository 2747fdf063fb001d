// Short-lived memory of TokenReview and SubjectAccessReview verdicts, so that an agent that
// reconnects, or an operator's repeated CLI calls, do not each cost an API server round trip. The
// same idea and the same 10 s default as k8s.io/apiserver's delegating authenticator
// (DelegatingAuthenticationOptions.CacheTTL) and authorizer (AllowCacheTTL, DenyCacheTTL).
// Verdicts are cached (refusals for `negative_ttl`), errors never: an unreachable API server is
// asked again on the next call. Tokens are keyed by their SHA-256, never kept in memory as such.
// Thread-safe; the inner reviewer is called outside the lock (concurrent misses for one key may
// both ask).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "api/reviewers.h"
#include "scheduler/clock.h"

namespace topogang {

struct ReviewCacheOptions {
  absl::Duration ttl = absl::Seconds(10);           // authenticated / allowed
  absl::Duration negative_ttl = absl::Seconds(10);  // not authenticated / not allowed
  size_t max_entries = 65536;  // full: expired entries go, then everything (a flood of tokens)
};

// The hex SHA-256 of `parts`, each length-prefixed (so ("ab","c") and ("a","bc") differ).
std::string ReviewCacheKey(std::initializer_list<absl::string_view> parts);

template <typename Verdict>
class VerdictCache {
 public:
  VerdictCache(const Clock& clock, ReviewCacheOptions o) : clock_(clock), options_(o) {}
  // The cached verdict for `key` if still fresh.
  bool Get(const std::string& key, Verdict* out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return false;
    if (clock_.Now() >= it->second.expires) {
      entries_.erase(it);
      return false;
    }
    *out = it->second.verdict;
    return true;
  }
  void Put(const std::string& key, const Verdict& v, bool positive) {
    const absl::Duration ttl = positive ? options_.ttl : options_.negative_ttl;
    if (ttl <= absl::ZeroDuration()) return;
    const absl::Time now = clock_.Now();
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.size() >= options_.max_entries) {
      absl::erase_if(entries_, [&](const auto& e) { return now >= e.second.expires; });
      if (entries_.size() >= options_.max_entries) entries_.clear();
    }
    entries_[key] = {v, now + ttl};
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size();
  }

 private:
  struct Entry {
    Verdict verdict;
    absl::Time expires;
  };
  const Clock& clock_;
  const ReviewCacheOptions options_;
  std::mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_;
};

class CachingTokenReviewer : public TokenReviewer {
 public:
  CachingTokenReviewer(std::shared_ptr<TokenReviewer> inner, const Clock& clock,
                       ReviewCacheOptions o = {})
      : inner_(std::move(inner)), cache_(clock, o) {}
  absl::StatusOr<TokenVerdict> Review(const std::string& token,
                                      const std::vector<std::string>& audiences) override;
  int64_t asked() const { return asked_.load(); }  // calls that went to the inner reviewer

 private:
  std::shared_ptr<TokenReviewer> inner_;
  VerdictCache<TokenVerdict> cache_;
  std::atomic<int64_t> asked_{0};
};

class CachingAccessReviewer : public AccessReviewer {
 public:
  CachingAccessReviewer(std::shared_ptr<AccessReviewer> inner, const Clock& clock,
                        ReviewCacheOptions o = {})
      : inner_(std::move(inner)), cache_(clock, o) {}
  absl::StatusOr<AccessVerdict> Review(const AccessQuestion& q) override;
  int64_t asked() const { return asked_.load(); }

 private:
  std::shared_ptr<AccessReviewer> inner_;
  VerdictCache<AccessVerdict> cache_;
  std::atomic<int64_t> asked_{0};
};

}  // namespace topogang
