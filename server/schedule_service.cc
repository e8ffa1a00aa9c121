#include "server/schedule_service.h"

#include "server/grpc_status.h"

namespace fleetprof {

grpc::Status ScheduleServiceImpl::CreateSchedule(grpc::ServerContext* context,
                                                 const v1::CreateScheduleRequest* request,
                                                 v1::Schedule* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(scheduler_->Create(*request), response);
}

grpc::Status ScheduleServiceImpl::ListSchedules(grpc::ServerContext* context,
                                                const v1::ListSchedulesRequest* request,
                                                v1::ListSchedulesResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(scheduler_->List(*request), response);
}

grpc::Status ScheduleServiceImpl::DeleteSchedule(grpc::ServerContext* context,
                                                 const v1::DeleteScheduleRequest* request,
                                                 v1::DeleteScheduleResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  return Reply(scheduler_->Delete(*request), response);
}

}  // namespace fleetprof
