#pragma once
// An engine in memory, for unit tests of everything above storage: the same catalog and blob
// store contracts as RocksDB (tests/storage/storage_contract_test.cc runs both), no disk.

#include <memory>

#include "storage/storage_engine.h"

namespace fleetprof {

std::unique_ptr<StorageEngine> NewMemoryEngine();

}  // namespace fleetprof
