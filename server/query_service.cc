#include "server/query_service.h"

#include "server/grpc_status.h"

namespace fleetprof {

grpc::Status QueryServiceImpl::ListProfiles(grpc::ServerContext* context, const v1::ListProfilesRequest* request,
                                            v1::ListProfilesResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->ListProfiles(*request), response);
}

grpc::Status QueryServiceImpl::GetProfile(grpc::ServerContext* context, const v1::GetProfileRequest* request,
                                          v1::GetProfileResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->GetProfile(request->profile_id()), response);
}

grpc::Status QueryServiceImpl::OpBreakdown(grpc::ServerContext* context, const v1::BreakdownRequest* request,
                                           v1::OpBreakdownResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->Ops(*request), response);
}

grpc::Status QueryServiceImpl::KernelBreakdown(grpc::ServerContext* context, const v1::BreakdownRequest* request,
                                               v1::KernelBreakdownResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->Kernels(*request), response);
}

grpc::Status QueryServiceImpl::TemporalBreakdown(grpc::ServerContext* context, const v1::BreakdownRequest* request,
                                                 v1::TemporalBreakdownResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->Devices(*request), response);
}

grpc::Status QueryServiceImpl::StepBreakdown(grpc::ServerContext* context, const v1::BreakdownRequest* request,
                                             v1::StepBreakdownResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->Steps(*request), response);
}

grpc::Status QueryServiceImpl::MemoryBreakdown(grpc::ServerContext* context, const v1::BreakdownRequest* request,
                                               v1::MemoryBreakdownResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->Memory(*request), response);
}

grpc::Status QueryServiceImpl::XlaOpBreakdown(grpc::ServerContext* context, const v1::BreakdownRequest* request,
                                              v1::XlaOpBreakdownResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->XlaOps(*request), response);
}

grpc::Status QueryServiceImpl::GetTraceWindow(grpc::ServerContext* context, const v1::TraceWindowRequest* request,
                                              v1::TraceWindow* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->TraceWindow(*request), response);
}

grpc::Status QueryServiceImpl::GetRangeBreakdown(grpc::ServerContext* context,
                                                 const v1::RangeBreakdownRequest* request,
                                                 v1::RangeBreakdown* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->RangeBreakdown(*request), response);
}

grpc::Status QueryServiceImpl::DeleteProfile(grpc::ServerContext* context, const v1::DeleteProfileRequest* request,
                                             v1::DeleteProfileResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->DeleteProfile(*request), response);
}

grpc::Status QueryServiceImpl::Diff(grpc::ServerContext* context, const v1::DiffRequest* request,
                                    v1::DiffResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->Diff(*request), response);
}

grpc::Status QueryServiceImpl::JobOps(grpc::ServerContext* context, const v1::JobRequest* request,
                                      v1::JobOpsResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->JobOps(*request), response);
}

grpc::Status QueryServiceImpl::JobSeries(grpc::ServerContext* context, const v1::JobRequest* request,
                                         v1::JobSeriesResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->JobSeries(*request), response);
}

grpc::Status QueryServiceImpl::Diagnose(grpc::ServerContext* context, const v1::DiagnoseRequest* request,
                                        v1::DiagnoseResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(api_->Diagnose(*request), response);
}

grpc::Status QueryServiceImpl::ExportProfile(grpc::ServerContext* context, const v1::ExportProfileRequest* request,
                                             grpc::ServerWriter<v1::ExportChunk>* writer) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  auto exported = api_->ExportProfile(*request);
  if (!exported.ok()) return ToGrpcStatus(exported.status());
  v1::ExportChunk chunk;
  *chunk.mutable_profile() = exported->profile;
  std::string buffer(1 << 20, '\0');
  while (!context->IsCancelled()) {
    auto n = exported->bytes->Read(buffer.data(), buffer.size());
    if (!n.ok()) return ToGrpcStatus(n.status());
    if (*n == 0) break;
    chunk.set_data(buffer.data(), *n);
    if (!writer->Write(chunk)) return grpc::Status::CANCELLED;
    chunk.clear_profile();
  }
  if (chunk.has_profile() && !writer->Write(chunk)) return grpc::Status::CANCELLED;  // an empty file
  return context->IsCancelled() ? grpc::Status::CANCELLED : grpc::Status::OK;
}

}  // namespace fleetprof
