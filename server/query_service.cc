#include "server/query_service.h"

#include "server/grpc_status.h"

namespace fleetprof {

grpc::Status QueryServiceImpl::ListProfiles(grpc::ServerContext*, const v1::ListProfilesRequest* request,
                                            v1::ListProfilesResponse* response) {
  return Reply(api_->ListProfiles(*request), response);
}

grpc::Status QueryServiceImpl::GetProfile(grpc::ServerContext*, const v1::GetProfileRequest* request,
                                          v1::GetProfileResponse* response) {
  return Reply(api_->GetProfile(request->profile_id()), response);
}

grpc::Status QueryServiceImpl::OpBreakdown(grpc::ServerContext*, const v1::BreakdownRequest* request,
                                           v1::OpBreakdownResponse* response) {
  return Reply(api_->Ops(*request), response);
}

grpc::Status QueryServiceImpl::KernelBreakdown(grpc::ServerContext*, const v1::BreakdownRequest* request,
                                               v1::KernelBreakdownResponse* response) {
  return Reply(api_->Kernels(*request), response);
}

grpc::Status QueryServiceImpl::TemporalBreakdown(grpc::ServerContext*, const v1::BreakdownRequest* request,
                                                 v1::TemporalBreakdownResponse* response) {
  return Reply(api_->Devices(*request), response);
}

grpc::Status QueryServiceImpl::StepBreakdown(grpc::ServerContext*, const v1::BreakdownRequest* request,
                                             v1::StepBreakdownResponse* response) {
  return Reply(api_->Steps(*request), response);
}

grpc::Status QueryServiceImpl::MemoryBreakdown(grpc::ServerContext*, const v1::BreakdownRequest* request,
                                               v1::MemoryBreakdownResponse* response) {
  return Reply(api_->Memory(*request), response);
}

grpc::Status QueryServiceImpl::XlaOpBreakdown(grpc::ServerContext*, const v1::BreakdownRequest* request,
                                              v1::XlaOpBreakdownResponse* response) {
  return Reply(api_->XlaOps(*request), response);
}

}  // namespace fleetprof
