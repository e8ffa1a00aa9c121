#include "server/grpc/query_service.h"

#include "server/grpc/grpc_status.h"

namespace fleetprof {

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
