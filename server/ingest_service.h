#pragma once
// IngestService over gRPC: adapts the client stream to the transport-free Ingestor.

#include "fleetprof/v1/ingest.grpc.pb.h"
#include "server/grpc_access.h"
#include "server/ingestor.h"

namespace fleetprof {

class IngestServiceImpl final : public v1::IngestService::Service {
 public:
  IngestServiceImpl(Ingestor* ingestor, const GrpcAccess* access) : ingestor_(ingestor), access_(access) {}

  grpc::Status Upload(grpc::ServerContext* context, grpc::ServerReader<v1::UploadRequest>* reader,
                      v1::UploadResponse* response) override;
  grpc::Status GetUploadState(grpc::ServerContext* context, const v1::GetUploadStateRequest* request,
                              v1::UploadState* response) override;

 private:
  Ingestor* ingestor_;
  const GrpcAccess* access_;
};

}  // namespace fleetprof
