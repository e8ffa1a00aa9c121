#pragma once
// CaptureService over gRPC: the watch stream. Starting, getting and listing captures are
// served from the operation table by GrpcOperations (server/grpc_operations.h).

#include "fleetprof/v1/capture.grpc.pb.h"
#include "server/fleet/capture_coordinator.h"
#include "server/grpc/grpc_access.h"
#include "server/grpc/grpc_operations.h"

namespace fleetprof {

class CaptureServiceImpl final : public v1::CaptureService::Service {
 public:
  CaptureServiceImpl(CaptureCoordinator* coordinator, const GrpcAccess* access, const Operations& operations)
      : coordinator_(coordinator), access_(access) {
    ServeFromTable(v1::CaptureService::service_full_name(), operations, [this](int i) { MarkMethodGeneric(i); });
  }

  grpc::Status WatchCapture(grpc::ServerContext* context, const v1::GetCaptureRequest* request,
                            grpc::ServerWriter<v1::Capture>* writer) override;

 private:
  CaptureCoordinator* coordinator_;
  const GrpcAccess* access_;
};

}  // namespace fleetprof
