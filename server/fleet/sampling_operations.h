#pragma once
// SamplingService's operations (set, get, disable the policy), added to the table every edge
// serves from (api/operations.h): gRPC and HTTP (POST/GET/DELETE /api/v1/sampling).

#include "api/operations.h"
#include "server/fleet/sampler.h"

namespace fleetprof {

// REQUIRES: `sampler` outlives `operations`' use.
void AddSamplingOperations(Sampler* sampler, Operations* operations);

}  // namespace fleetprof
