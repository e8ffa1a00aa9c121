#pragma once
// TriggerService's operations (add, list, remove), added to the table every edge serves from
// (api/operations.h): gRPC, HTTP and the CLI reach the same three methods.

#include "api/operations.h"
#include "server/fleet/trigger_runner.h"
#include "server/fleet/trigger_store.h"

namespace fleetprof {

// REQUIRES: both outlive `operations`' use. An add or a remove nudges `runner`, so this
// replica's agents get the device triggers at once.
void AddTriggerOperations(TriggerStore* store, TriggerRunner* runner, Operations* operations);

}  // namespace fleetprof
