#include "server/grpc/capture_service.h"

#include "server/grpc/grpc_status.h"

namespace fleetprof {

grpc::Status CaptureServiceImpl::WatchCapture(grpc::ServerContext* context,
                                              const v1::GetCaptureRequest* request,
                                              grpc::ServerWriter<v1::Capture>* writer) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  int64_t version = -1;
  v1::Capture capture;
  while (!context->IsCancelled()) {
    if (!coordinator_->WaitForChange(request->capture_id(), &version, std::chrono::seconds(1),
                                     &capture)) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "capture " + request->capture_id() + ": not found");
    }
    if (!writer->Write(capture)) return grpc::Status::CANCELLED;
    // INT64_MAX: a stored capture no longer followed in memory; it cannot change any more.
    if (capture.state() != v1::Capture::RUNNING || version == INT64_MAX) return grpc::Status::OK;
  }
  return grpc::Status::CANCELLED;
}

}  // namespace fleetprof
