#pragma once
// Shared by the RocksDB engine's files only: column families and status conversion.

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "rocksdb/status.h"

namespace fleetprof::rocks {

// Column family order; handles[i] belongs to kFamilies[i]. Never reorder: names are on disk.
enum Family { kDefault, kProfiles, kSummaries, kIndex, kRaw, kUploads, kAgents, kCaptures, kEvents, kSchedules };
inline constexpr const char* kFamilies[] = {"default", "profiles", "summaries", "index",  "raw",
                                            "uploads", "agents",   "captures",  "events", "schedules"};
inline constexpr int kFamilyCount = sizeof(kFamilies) / sizeof(kFamilies[0]);

absl::Status ToStatus(const rocksdb::Status& s, absl::string_view what);

// The smallest key greater than every key starting with `prefix`; empty when there is none.
std::string PrefixEnd(std::string_view prefix);

}  // namespace fleetprof::rocks

#include <memory>
#include <vector>

#include "storage/blob_store.h"
#include "storage/catalog.h"

namespace rocksdb {
class ColumnFamilyHandle;
class DB;
class OptimisticTransactionDB;
}  // namespace rocksdb

namespace fleetprof::rocks {

// `handles` indexed by Family; both outlive what these return.
std::unique_ptr<Catalog> NewCatalog(rocksdb::OptimisticTransactionDB* db,
                                    const std::vector<rocksdb::ColumnFamilyHandle*>& handles);
std::unique_ptr<BlobStore> NewBlobStore(rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& handles);

}  // namespace fleetprof::rocks
