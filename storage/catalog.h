#pragma once
// The catalog seam: small, consistent records and their indexes (profiles, index entries,
// uploads, agents, captures, schedules), in ordered tables of bytes, with a compare-and-set
// commit. The embedded implementation is RocksDB (one column family per table, the layout in
// storage.h); the cluster puts the same tables in etcd. Everything too big for a catalog
// record (raw bytes, summaries, event blocks) lives in the blob store (blob_store.h).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fleetprof {

enum class CatalogTable { kProfiles, kIndex, kUploads, kAgents, kCaptures, kSchedules };
// The table's name (the RocksDB column family; the etcd key prefix).
const char* CatalogTableName(CatalogTable table);

// Keys of one table that start with `prefix`, in key order or reversed. `after`, when not
// empty, resumes a scan: only keys strictly after it in the scan's order (a page token).
struct CatalogScan {
  std::string prefix;
  std::string after;
  bool reverse = false;
  // About how many keys the visitor will take (0: unknown). A store that reads in pages sizes
  // its first page by it, so a page of 100 profiles costs one read and a whole job few.
  int64_t expected_keys = 0;
};
// Sees one record; returns false to stop the scan.
using CatalogVisitor = std::function<bool(std::string_view key, std::string_view value)>;

// A commit that may or may not have been applied: the store's reply was lost and it could not
// be asked again in time. UNAVAILABLE with a mark that says so; the caller must keep whatever
// the commit would have made live (a profile's events), since it may be live now.
absl::Status CommitOutcomeUnknown(std::string_view message);
bool IsCommitOutcomeUnknown(const absl::Status& status);

// Mutations applied together, and only if every condition holds at that moment.
struct CatalogWrite {
  struct Condition {
    CatalogTable table;
    std::string key;
    std::optional<std::string> value;  // nullopt: the key must be absent
  };
  struct Mutation {
    CatalogTable table;
    std::string key;
    std::optional<std::string> value;  // nullopt: delete
  };
  std::vector<Condition> conditions;
  std::vector<Mutation> mutations;
  // On stable storage before Commit returns (a committed profile, a schedule survive a crash).
  bool sync = false;

  void Put(CatalogTable table, std::string key, std::string value) {
    mutations.push_back({table, std::move(key), std::move(value)});
  }
  void Delete(CatalogTable table, std::string key) { mutations.push_back({table, std::move(key), std::nullopt}); }
  void RequireAbsent(CatalogTable table, std::string key) {
    conditions.push_back({table, std::move(key), std::nullopt});
  }
  void RequireValue(CatalogTable table, std::string key, std::string value) {
    conditions.push_back({table, std::move(key), std::move(value)});
  }
};

// What other processes sharing the catalog (a cluster's replicas) change, as it happens:
// `changed` for each record written or deleted, `resync` when some changes may have been missed
// (a watch restarted past compacted history): the listener then drops all it derived.
struct CatalogWatcher {
  std::function<void(CatalogTable table, std::string_view key, bool deleted)> changed;
  std::function<void()> resync;
};

class Catalog {
 public:
  virtual ~Catalog() = default;
  // The value at `key`, or nullopt when there is none.
  virtual absl::StatusOr<std::optional<std::string>> Get(CatalogTable table, std::string_view key) = 0;
  virtual absl::Status Scan(CatalogTable table, const CatalogScan& scan, const CatalogVisitor& visit) = 0;
  // All mutations or none. ABORTED naming the key when a condition does not hold (another
  // writer got there first: the caller re-reads and decides).
  virtual absl::Status Commit(const CatalogWrite& write) = 0;
  // Starts telling `watcher` of changes (this process's own may be told too). A catalog no other
  // process writes (embedded, memory) has nothing to tell and ignores it.
  virtual void Watch(CatalogWatcher watcher) {}
  // Stops telling; when it returns the watcher is not running and is never called again.
  virtual void StopWatching() {}
};

}  // namespace fleetprof
