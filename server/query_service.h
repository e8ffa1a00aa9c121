#pragma once
// QueryService over gRPC: each method hands its request to QueryApi and its answer back.

#include "fleetprof/v1/query.grpc.pb.h"
#include "server/grpc_access.h"
#include "server/query_api.h"

namespace fleetprof {

class QueryServiceImpl final : public v1::QueryService::Service {
 public:
  QueryServiceImpl(QueryApi* api, const GrpcAccess* access) : api_(api), access_(access) {}

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
  grpc::Status StepBreakdown(grpc::ServerContext*, const v1::BreakdownRequest* request,
                             v1::StepBreakdownResponse* response) override;
  grpc::Status MemoryBreakdown(grpc::ServerContext*, const v1::BreakdownRequest* request,
                               v1::MemoryBreakdownResponse* response) override;
  grpc::Status XlaOpBreakdown(grpc::ServerContext*, const v1::BreakdownRequest* request,
                              v1::XlaOpBreakdownResponse* response) override;
  grpc::Status GetTraceWindow(grpc::ServerContext* context, const v1::TraceWindowRequest* request,
                              v1::TraceWindow* response) override;
  grpc::Status GetRangeBreakdown(grpc::ServerContext* context, const v1::RangeBreakdownRequest* request,
                                 v1::RangeBreakdown* response) override;
  grpc::Status DeleteProfile(grpc::ServerContext* context, const v1::DeleteProfileRequest* request,
                             v1::DeleteProfileResponse* response) override;
  grpc::Status ExportProfile(grpc::ServerContext* context, const v1::ExportProfileRequest* request,
                             grpc::ServerWriter<v1::ExportChunk>* writer) override;
  grpc::Status Diff(grpc::ServerContext* context, const v1::DiffRequest* request, v1::DiffResponse* response) override;
  grpc::Status JobOps(grpc::ServerContext* context, const v1::JobRequest* request,
                      v1::JobOpsResponse* response) override;
  grpc::Status JobSeries(grpc::ServerContext* context, const v1::JobRequest* request,
                         v1::JobSeriesResponse* response) override;
  grpc::Status Diagnose(grpc::ServerContext* context, const v1::DiagnoseRequest* request,
                        v1::DiagnoseResponse* response) override;

 private:
  QueryApi* api_;
  const GrpcAccess* access_;
};

}  // namespace fleetprof
