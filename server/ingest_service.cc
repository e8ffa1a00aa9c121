#include "server/ingest_service.h"

#include "server/grpc_status.h"

namespace fleetprof {
namespace {

// "ipv4:10.0.0.7:51234" -> "ipv4:10.0.0.7", "ipv6:[::1]:5000" -> "ipv6:[::1]": one peer per
// host, whatever its ports; other forms ("unix:…") stay whole.
std::string PeerHost(const std::string& peer) {
  if (!peer.starts_with("ipv4:") && !peer.starts_with("ipv6:")) return peer;
  const size_t colon = peer.rfind(':');
  return colon > 4 ? peer.substr(0, colon) : peer;
}

class GrpcUploadStream final : public UploadStream {
 public:
  GrpcUploadStream(grpc::ServerContext* context, grpc::ServerReader<v1::UploadRequest>* reader)
      : context_(context), reader_(reader) {}
  bool Read(v1::UploadRequest* message) override { return reader_->Read(message); }
  bool Cancelled() override { return context_->IsCancelled(); }
  std::string Peer() override { return PeerHost(context_->peer()); }
  void Abort() override { context_->TryCancel(); }

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
