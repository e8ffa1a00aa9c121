#pragma once
// GET /api/v1/cluster and `fleetprof cluster`: the replicas that serve this store, the leader,
// the agents each holds, and the health of the catalog and the object store.

#include "api/operations.h"
#include "storage/membership.h"
#include "storage/storage_engine.h"

namespace fleetprof {

void AddClusterOperations(Membership* membership, StorageEngine* engine, Operations* ops);

}  // namespace fleetprof
