#pragma once
// QueryService: answers from the summaries stored at ingest; never re-reads events.

#include "fleetprof/v1/query.grpc.pb.h"
#include "server/server_metrics.h"
#include "storage/profile_store.h"

namespace fleetprof {

class QueryServiceImpl final : public v1::QueryService::Service {
 public:
  QueryServiceImpl(ProfileStore* store, ServerMetrics* metrics) : store_(store), metrics_(metrics) {}

  grpc::Status ListProfiles(grpc::ServerContext*, const v1::ListProfilesRequest* request,
                            v1::ListProfilesResponse* response) override;
  grpc::Status GetProfile(grpc::ServerContext*, const v1::GetProfileRequest* request,
                          v1::GetProfileResponse* response) override;
  grpc::Status OpBreakdown(grpc::ServerContext*, const v1::BreakdownRequest* request,
                           v1::OpBreakdownResponse* response) override;
  grpc::Status KernelBreakdown(grpc::ServerContext*, const v1::BreakdownRequest* request,
                               v1::KernelBreakdownResponse* response) override;
  grpc::Status TemporalBreakdown(grpc::ServerContext*, const v1::BreakdownRequest* request,
                                 v1::TemporalBreakdownResponse* response) override;

 private:
  ProfileStore* store_;
  ServerMetrics* metrics_;
};

}  // namespace fleetprof
