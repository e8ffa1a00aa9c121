#pragma once
// CaptureService: the gRPC face of the CaptureCoordinator.

#include "fleetprof/v1/capture.grpc.pb.h"
#include "server/capture_coordinator.h"
#include "server/grpc_access.h"

namespace fleetprof {

class CaptureServiceImpl final : public v1::CaptureService::Service {
 public:
  CaptureServiceImpl(CaptureCoordinator* coordinator, const GrpcAccess* access)
      : coordinator_(coordinator), access_(access) {}

  grpc::Status StartCapture(grpc::ServerContext*, const v1::StartCaptureRequest* request,
                            v1::Capture* response) override;
  grpc::Status GetCapture(grpc::ServerContext*, const v1::GetCaptureRequest* request,
                          v1::Capture* response) override;
  grpc::Status ListCaptures(grpc::ServerContext*, const v1::ListCapturesRequest* request,
                            v1::ListCapturesResponse* response) override;
  grpc::Status WatchCapture(grpc::ServerContext* context, const v1::GetCaptureRequest* request,
                            grpc::ServerWriter<v1::Capture>* writer) override;

 private:
  CaptureCoordinator* coordinator_;
  const GrpcAccess* access_;
};

}  // namespace fleetprof
