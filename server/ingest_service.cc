#include "server/ingest_service.h"

#include "server/grpc_status.h"

namespace fleetprof {
namespace {

class GrpcUploadStream final : public UploadStream {
 public:
  GrpcUploadStream(grpc::ServerContext* context, grpc::ServerReader<v1::UploadRequest>* reader)
      : context_(context), reader_(reader) {}
  bool Read(v1::UploadRequest* message) override { return reader_->Read(message); }
  bool Cancelled() override { return context_->IsCancelled(); }

 private:
  grpc::ServerContext* context_;
  grpc::ServerReader<v1::UploadRequest>* reader_;
};

}  // namespace

grpc::Status IngestServiceImpl::Upload(grpc::ServerContext* context,
                                       grpc::ServerReader<v1::UploadRequest>* reader,
                                       v1::UploadResponse* response) {
  auto caller = access_->Caller(context);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  GrpcUploadStream stream(context, reader);
  return Reply(ingestor_->Upload(stream, *caller), response);
}

grpc::Status IngestServiceImpl::GetUploadState(grpc::ServerContext* context, const v1::GetUploadStateRequest* request,
                                               v1::UploadState* response) {
  auto caller = access_->Caller(context);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(ingestor_->GetUploadState(request->upload_id(), *caller), response);
}

}  // namespace fleetprof
