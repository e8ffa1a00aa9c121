#pragma once
// ScheduleService: the gRPC face of the CaptureScheduler.

#include "fleetprof/v1/schedule.grpc.pb.h"
#include "server/capture_scheduler.h"
#include "server/grpc_access.h"

namespace fleetprof {

class ScheduleServiceImpl final : public v1::ScheduleService::Service {
 public:
  ScheduleServiceImpl(CaptureScheduler* scheduler, const GrpcAccess* access)
      : scheduler_(scheduler), access_(access) {}

  grpc::Status CreateSchedule(grpc::ServerContext* context, const v1::CreateScheduleRequest* request,
                              v1::Schedule* response) override;
  grpc::Status ListSchedules(grpc::ServerContext* context, const v1::ListSchedulesRequest* request,
                             v1::ListSchedulesResponse* response) override;
  grpc::Status DeleteSchedule(grpc::ServerContext* context, const v1::DeleteScheduleRequest* request,
                              v1::DeleteScheduleResponse* response) override;

 private:
  CaptureScheduler* scheduler_;
  const GrpcAccess* access_;
};

}  // namespace fleetprof
