#pragma once
// The fleet's operations (captures, schedules, agents), added to the table every edge serves
// from (api/operations.h).

#include "api/operations.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/capture_coordinator.h"
#include "server/fleet/capture_scheduler.h"

namespace fleetprof {

// REQUIRES: each outlives `operations`' use.
void AddFleetOperations(CaptureCoordinator* captures, CaptureScheduler* schedules, AgentRegistry* agents,
                        Operations* operations);

}  // namespace fleetprof
