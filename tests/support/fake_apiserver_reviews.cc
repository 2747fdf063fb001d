// The fake API server's TokenReview and SubjectAccessReview, answering as kube-apiserver does:
// - TokenReview: pkg/registry/authentication/tokenreview/storage.go (400 without spec.token;
//   spec.audiences default to the API server's own; status.error in the union authenticator's
//   "[invalid bearer token, ...]" form; status.user and the audience intersection when
//   authenticated) with the service-account authenticator's checks (pkg/serviceaccount:
//   expiry, audience) and its user.Info (k8s.io/apiserver pkg/authentication/serviceaccount).
// - SubjectAccessReview: pkg/registry/authorization/subjectaccessreview/rest.go (422 when the
//   spec names neither user nor group, or not exactly one of resourceAttributes and
//   nonResourceAttributes; status.allowed/denied/reason) with RBAC's allow-only rules.
// - Both: 201 Created with the object; 403 Forbidden when the caller's own RBAC lacks create.
#include <algorithm>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/support/fake_apiserver.h"

namespace topogang::testing {

namespace {

constexpr char kApiServerAudience[] = "https://kubernetes.default.svc.cluster.local";

std::vector<std::string> Strings(const Json& obj, const char* key) {
  std::vector<std::string> out;
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_array()) return out;
  for (const Json& v : obj[key]) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::string Quoted(const std::vector<std::string>& v) {
  std::vector<std::string> q;
  for (const std::string& s : v) q.push_back("\"" + s + "\"");
  return "[" + absl::StrJoin(q, " ") + "]";
}

std::string Forbidden(const std::string& resource, const std::string& group) {
  return resource + "." + group + " is forbidden: User \"system:serviceaccount:topogang-system:" +
         "topogangd\" cannot create resource \"" + resource + "\" in API group \"" + group +
         "\" at the cluster scope";
}

}  // namespace

FakeApiServer::FakeToken FakeApiServer::ServiceAccountToken(const std::string& ns,
                                                            const std::string& name,
                                                            const std::string& node,
                                                            const std::string& audience,
                                                            int64_t expires_unix) {
  FakeToken t;
  t.username = "system:serviceaccount:" + ns + ":" + name;
  t.uid = "sa-uid-" + ns + "-" + name;
  t.groups = {"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"};
  const std::string pod = name + "-" + node;
  t.extra = {{"authentication.kubernetes.io/credential-id", {"JTI=jti-" + pod}},
             {"authentication.kubernetes.io/pod-name", {pod}},
             {"authentication.kubernetes.io/pod-uid", {"pod-uid-" + pod}}};
  if (!node.empty()) {
    t.extra["authentication.kubernetes.io/node-name"] = {node};
    t.extra["authentication.kubernetes.io/node-uid"] = {"node-uid-" + node};
  }
  t.audiences = {audience};
  t.expires_unix = expires_unix;
  return t;
}

void FakeApiServer::AddToken(const std::string& token, FakeToken t) {
  std::lock_guard<std::mutex> lock(mu_);
  tokens_[token] = std::move(t);
}

void FakeApiServer::RemoveToken(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  tokens_.erase(token);
}

void FakeApiServer::SetReviewTime(int64_t unix_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  review_time_ = unix_seconds;
}

void FakeApiServer::Grant(const std::string& subject, const std::string& verb,
                          const std::string& api_group, const std::string& resource) {
  std::lock_guard<std::mutex> lock(mu_);
  rules_.push_back({subject, verb, api_group, resource});
}

void FakeApiServer::ForbidReviews(bool forbidden) {
  std::lock_guard<std::mutex> lock(mu_);
  reviews_forbidden_ = forbidden;
}

int FakeApiServer::token_reviews() {
  std::lock_guard<std::mutex> lock(mu_);
  return token_reviews_;
}

int FakeApiServer::access_reviews() {
  std::lock_guard<std::mutex> lock(mu_);
  return access_reviews_;
}

std::vector<Json> FakeApiServer::access_review_specs() {
  std::lock_guard<std::mutex> lock(mu_);
  return access_review_specs_;
}

void FakeApiServer::HandleTokenReview(const std::shared_ptr<HttpExchange>& request,
                                      const std::string& body) {
  Json review = Json::parse(body, nullptr, false);
  std::lock_guard<std::mutex> lock(mu_);
  if (reviews_forbidden_) {
    return Reply(request, 403,
                 StatusBody(403, "Forbidden", Forbidden("tokenreviews", "authentication.k8s.io")));
  }
  if (!review.is_object() || review.value("kind", "") != "TokenReview") {
    return Reply(request, 400, StatusBody(400, "BadRequest", "not a TokenReview"));
  }
  const Json spec = review.contains("spec") ? review["spec"] : Json::object();
  const std::string token =
      spec.is_object() && spec.contains("token") && spec["token"].is_string() ? spec["token"] : "";
  if (token.empty()) {
    return Reply(
        request, 400,
        StatusBody(400, "BadRequest", "token is required for TokenReview in authentication"));
  }
  ++token_reviews_;
  cv_.notify_all();
  std::vector<std::string> auds = Strings(spec, "audiences");
  if (auds.empty()) auds = {kApiServerAudience};
  Json status = {{"user", Json::object()}};
  auto it = tokens_.find(token);
  const int64_t now = review_time_ != 0 ? review_time_ : static_cast<int64_t>(std::time(nullptr));
  std::string error;
  std::vector<std::string> matched;
  if (it == tokens_.end()) {
    error = "[invalid bearer token, token lookup failed]";
  } else if (it->second.expires_unix != 0 && now >= it->second.expires_unix) {
    error = "[invalid bearer token, service account token has expired]";
  } else {
    for (const std::string& a : it->second.audiences) {
      for (const std::string& want : auds) {
        if (a == want) matched.push_back(a);
      }
    }
    if (matched.empty()) {
      error = absl::StrCat("[invalid bearer token, token audiences ", Quoted(it->second.audiences),
                           " is invalid for the target audiences ", Quoted(auds), "]");
    }
  }
  if (error.empty()) {
    const FakeToken& t = it->second;
    status = {{"authenticated", true},
              {"user",
               {{"username", t.username},
                {"uid", t.uid},
                {"groups", t.groups},
                {"extra", t.extra.empty() ? Json::object() : Json(t.extra)}}},
              {"audiences", matched}};
  } else {
    status["error"] = error;
  }
  review["metadata"] = {{"creationTimestamp", nullptr}};
  review["status"] = status;
  Reply(request, 201, review);
}

void FakeApiServer::HandleAccessReview(const std::shared_ptr<HttpExchange>& request,
                                       const std::string& body) {
  Json review = Json::parse(body, nullptr, false);
  std::lock_guard<std::mutex> lock(mu_);
  if (reviews_forbidden_) {
    return Reply(
        request, 403,
        StatusBody(403, "Forbidden", Forbidden("subjectaccessreviews", "authorization.k8s.io")));
  }
  if (!review.is_object() || review.value("kind", "") != "SubjectAccessReview" ||
      !review.contains("spec") || !review["spec"].is_object()) {
    return Reply(request, 400, StatusBody(400, "BadRequest", "not a SubjectAccessReview"));
  }
  const Json& spec = review["spec"];
  const std::string user = spec.contains("user") && spec["user"].is_string() ? spec["user"] : "";
  const std::vector<std::string> groups = Strings(spec, "groups");
  const bool res = spec.contains("resourceAttributes") && spec["resourceAttributes"].is_object();
  const bool nonres =
      spec.contains("nonResourceAttributes") && spec["nonResourceAttributes"].is_object();
  if (user.empty() && groups.empty()) {
    return Reply(
        request, 422,
        StatusBody(422, "Invalid",
                   "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: "
                   "Invalid value: \"\": at least one of user or group must be specified"));
  }
  if (res == nonres) {
    return Reply(request, 422,
                 StatusBody(422, "Invalid",
                            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: "
                            "spec.resourceAttributes: Invalid value: \"null\": exactly one of "
                            "nonResourceAttributes or resourceAttributes must be specified"));
  }
  ++access_reviews_;
  access_review_specs_.push_back(spec);
  cv_.notify_all();
  bool allowed = false;
  std::string reason;
  if (res) {
    const Json& a = spec["resourceAttributes"];
    auto field = [&](const char* k) {
      return a.contains(k) && a[k].is_string() ? a[k].get<std::string>() : std::string();
    };
    auto match = [](const std::string& rule, const std::string& v) {
      return rule == "*" || rule == v;
    };
    for (const Rule& r : rules_) {
      const bool subject =
          r.subject == user || std::find(groups.begin(), groups.end(), r.subject) != groups.end();
      if (subject && match(r.verb, field("verb")) && match(r.group, field("group")) &&
          match(r.resource, field("resource"))) {
        allowed = true;
        reason = absl::StrCat("RBAC: allowed by ClusterRoleBinding \"fake-", r.verb,
                              "\" of ClusterRole \"fake-", r.verb, "\" to ",
                              r.subject == user ? "User" : "Group", " \"", r.subject, "\"");
        break;
      }
    }
  }
  review["metadata"] = {{"creationTimestamp", nullptr}};
  review["status"] = {{"allowed", allowed}};
  if (!reason.empty()) review["status"]["reason"] = reason;
  Reply(request, 201, review);
}

}  // namespace topogang::testing
