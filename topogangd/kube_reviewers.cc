#include "topogangd/kube_reviewers.h"

namespace topogang {

absl::StatusOr<TokenVerdict> KubeTokenReviewer::Review(const std::string& token,
                                                       const std::vector<std::string>& audiences) {
  auto r = client_->ReviewToken(token, audiences);
  if (!r.ok()) return r.status();
  TokenVerdict v;
  v.authenticated = r->authenticated;
  v.error = r->error;
  v.user = {r->username, r->uid, r->groups, r->extra};
  v.audiences = r->audiences;
  return v;
}

absl::StatusOr<AccessVerdict> KubeAccessReviewer::Review(const AccessQuestion& q) {
  SubjectAccessReviewSpec spec;
  spec.user = q.user.username;
  spec.uid = q.user.uid;
  spec.groups = q.user.groups;
  spec.extra = q.user.extra;
  spec.verb = q.verb;
  spec.group = q.group;
  spec.resource = q.resource;
  spec.name = q.name;
  auto r = client_->ReviewAccess(spec);
  if (!r.ok()) return r.status();
  return AccessVerdict{r->allowed, r->reason.empty() ? r->evaluation_error : r->reason};
}

}  // namespace topogang
