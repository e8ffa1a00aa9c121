#pragma once
// IngestService over gRPC's callback API: each upload is a reactor that feeds the client's
// messages to a transport-free UploadSession (server/upload_session.h). An upload holds no
// thread while it waits for its client; storing a chunk, handing it to the analysis and
// committing run on a small pool of workers, one step at a time per upload.

#include <memory>

#include "common/worker_pool.h"
#include "fleetprof/v1/ingest.grpc.pb.h"
#include "server/grpc/grpc_access.h"
#include "server/ingest/ingestor.h"

namespace fleetprof {

class IngestServiceImpl final : public v1::IngestService::CallbackService {
 public:
  // `workers` run the uploads' steps; they must outlive every call (the gRPC server's Wait).
  IngestServiceImpl(Ingestor* ingestor, const GrpcAccess* access, WorkerPool* workers)
      : ingestor_(ingestor), access_(access), workers_(workers) {}

  grpc::ServerReadReactor<v1::UploadRequest>* Upload(grpc::CallbackServerContext* context,
                                                     v1::UploadResponse* response) override;
  grpc::ServerUnaryReactor* GetUploadState(grpc::CallbackServerContext* context,
                                           const v1::GetUploadStateRequest* request,
                                           v1::UploadState* response) override;

 private:
  Ingestor* ingestor_;
  const GrpcAccess* access_;
  WorkerPool* workers_;
};

}  // namespace fleetprof
