// Conversions between the core's types and topogang.v1 messages. Every proto coming in is
// hostile: GangFromProto bounds and validates before the core sees it.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/daemon_state.h"
#include "scheduler/gang_scheduler.h"
#include "topogang/v1/placement.pb.h"
#include "topology/cluster.h"

namespace topogang {

// InvalidArgument on oversize strings or what ValidateGang rejects.
absl::StatusOr<GangSpec> GangFromProto(const v1::GangSpec& p);
void GangToProto(const GangSpec& g, v1::GangSpec* p);
// GPU indices become node-local.
void PlacementToProto(const Cluster& c, const Placement& pl, v1::Placement* p);
// By name, so new core states map without a code change here (unknown -> UNSPECIFIED).
v1::GangState GangStateToProto(GangState s);
void GangRecordToProto(const Cluster& c, const GangRecord& r, v1::Gang* p);
void EventToProto(const DecisionEvent& e, v1::DecisionEvent* p);
int64_t UnixMillis(absl::Time t);

// absl and gRPC share the canonical code numbering.
grpc::Status ToGrpcStatus(const absl::Status& s);

}  // namespace topogang
