#pragma once
// The embedded engine: one RocksDB database under --data_dir, one column family per catalog
// table and per blob kind (layout in storage.h). Its on-disk format is the one every earlier
// release wrote (tests/data/store_52e8783 keeps it honest).

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "storage/storage_engine.h"

namespace rocksdb {
class Env;
}  // namespace rocksdb

namespace fleetprof {

struct StoreOptions {
  // Files RocksDB keeps open at once (its table cache). -1, RocksDB's default, opens every
  // table file and keeps it: a large database then meets the process's fd limit.
  int max_open_files = 512;
  // Hears each background error's reason (flush, compaction, …), on RocksDB's thread.
  std::function<void(const std::string& reason)> on_background_error;
  // Tests: a file system that fails on demand. Not owned; outlives the engine.
  rocksdb::Env* env = nullptr;
};

// Opens (creating if needed) the database under `dir`.
absl::StatusOr<std::unique_ptr<StorageEngine>> OpenRocksEngine(const std::string& dir, const StoreOptions& options);

}  // namespace fleetprof
