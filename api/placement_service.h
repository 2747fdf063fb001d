// topogang.v1.PlacementService over the shared DaemonState (sync API: calls are short, and
// WatchDecisions holds one thread per watcher, which is fine for operator tools).
#pragma once

#include <atomic>

#include "api/identity.h"
#include "daemon/daemon_state.h"
#include "topogang/v1/placement.grpc.pb.h"

namespace topogang {

class PlacementServiceImpl final : public ::topogang::v1::PlacementService::Service {
 public:
  PlacementServiceImpl(DaemonState& state, const Authenticator& auth)
      : state_(state), auth_(auth) {}

  // Makes every WatchDecisions stream return within its poll interval.
  void Stop() { stopping_ = true; }

  grpc::Status DryRun(grpc::ServerContext* ctx, const v1::DryRunRequest* req,
                      v1::DryRunResponse* resp) override;
  grpc::Status Explain(grpc::ServerContext* ctx, const v1::ExplainRequest* req,
                       v1::ExplainResponse* resp) override;
  grpc::Status GetGang(grpc::ServerContext* ctx, const v1::GetGangRequest* req,
                       v1::Gang* resp) override;
  grpc::Status ListGangs(grpc::ServerContext* ctx, const v1::ListGangsRequest* req,
                         v1::ListGangsResponse* resp) override;
  grpc::Status ListReservations(grpc::ServerContext* ctx, const v1::ListReservationsRequest* req,
                                v1::ListReservationsResponse* resp) override;
  grpc::Status ListSpares(grpc::ServerContext* ctx, const v1::ListSparesRequest* req,
                          v1::ListSparesResponse* resp) override;
  grpc::Status WatchDecisions(grpc::ServerContext* ctx, const v1::WatchDecisionsRequest* req,
                              grpc::ServerWriter<v1::DecisionEvent>* writer) override;
  grpc::Status Drain(grpc::ServerContext* ctx, const v1::DrainRequest* req,
                     v1::NodeHealth* resp) override;
  grpc::Status Undrain(grpc::ServerContext* ctx, const v1::DrainRequest* req,
                       v1::NodeHealth* resp) override;

 private:
  grpc::Status SetDrain(grpc::ServerContext* ctx, const v1::DrainRequest* req, bool drain,
                        v1::NodeHealth* resp);

  DaemonState& state_;
  const Authenticator& auth_;
  std::atomic<bool> stopping_{false};
};

}  // namespace topogang
