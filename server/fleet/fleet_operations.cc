#include "server/fleet/fleet_operations.h"

namespace fleetprof {

void AddFleetOperations(CaptureCoordinator* captures, CaptureScheduler* schedules, AgentRegistry* agents,
                        Operations* ops) {
  using namespace v1;  // NOLINT: the message names read as in the .proto files
  ops->AddUnary<StartCaptureRequest, Capture>("fleetprof.v1.CaptureService.StartCapture",
                                              [captures](const auto& r) { return captures->Start(r); });
  ops->AddUnary<GetCaptureRequest, Capture>("fleetprof.v1.CaptureService.GetCapture",
                                            [captures](const auto& r) { return captures->Get(r.capture_id()); });
  ops->AddUnary<ListCapturesRequest, ListCapturesResponse>("fleetprof.v1.CaptureService.ListCaptures",
                                                           [captures](const auto& r) { return captures->List(r); });
  ops->AddUnary<CreateScheduleRequest, Schedule>("fleetprof.v1.ScheduleService.CreateSchedule",
                                                 [schedules](const CreateScheduleRequest& r, const Principal& caller) { return schedules->Create(r, caller); });
  ops->AddUnary<ListSchedulesRequest, ListSchedulesResponse>("fleetprof.v1.ScheduleService.ListSchedules",
                                                             [schedules](const auto& r) { return schedules->List(r); });
  ops->AddUnary<DeleteScheduleRequest, DeleteScheduleResponse>(
      "fleetprof.v1.ScheduleService.DeleteSchedule",
      [schedules](const DeleteScheduleRequest& r, const Principal& caller) { return schedules->Delete(r, caller); });
  ops->AddUnary<ListAgentsRequest, ListAgentsResponse>(
      "fleetprof.v1.AgentService.ListAgents",
      [agents](const auto&) { return agents->ListAgents(); });
}

}  // namespace fleetprof
