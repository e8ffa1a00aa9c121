#pragma once
// A replica's local cache of object reads: summaries and event-store ranges are read at every
// query, and each read from S3 costs a request and tens of milliseconds. The cache wraps the
// ObjectClient, so the blob store above does not know it is there.
//
// Only write-once objects may be cached: every key under a cached prefix is written once
// (profile ids are unique: time + randomness) and never rewritten, so a cached copy is never
// stale. A deleted object's copy may linger until it ages out, but nothing reads it: readers
// find the profile in the catalog first. Deletes through this client drop the copies at once.
//
// The cache is a RocksDB under its folder with FIFO compaction: when its files pass the bound,
// the oldest file goes (oldest written, not least used: no bookkeeping on reads). Writes skip
// the write-ahead log; after a crash the cache is simply colder. Deleting the folder loses
// nothing.
//
// Only a cache, so it never stops the replica: a folder that does not open is started over
// empty; a disk without room for two memtables (RocksDB aborts on a full disk at open) or a
// write that fails puts the cache aside, and every read goes to the object store until a
// retry (every `retry_every`, on the next read) finds room and opens it again, empty. Its
// state is said once in the log, in Problem() (/healthz) and through `on_state` (metrics).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "storage/cluster/object_client.h"

namespace fleetprof::cluster {

struct ObjectCacheOptions {
  std::string dir;                    // created when missing
  int64_t max_bytes = int64_t{1} << 30;  // --cache_mb
  std::vector<std::string> prefixes;  // keys cached: write-once objects only
  // Hears each lookup of a cached key: found here or not.
  std::function<void(bool hit)> on_lookup;
  // Hears each change between working (true) and put aside (false), and the state at open.
  std::function<void(bool working)> on_state;
  // Time, for when to try a put-aside cache again; null: RealClock().
  const Clock* clock = nullptr;
  int64_t retry_every_ns = int64_t{30} * 1'000'000'000;
  // Free bytes on the folder's disk; null: statvfs. A seam for tests of a full disk.
  std::function<absl::StatusOr<int64_t>(const std::string& dir)> free_bytes;
};

// The files the cache keeps on disk now (for metrics and tests).
class ObjectCacheUsage {
 public:
  virtual ~ObjectCacheUsage() = default;
  virtual int64_t CacheBytes() const = 0;
  // Empty while the cache works; else why every read goes to the object store now.
  virtual std::string Problem() const = 0;
};

// `inner` with reads of `options.prefixes` kept under `options.dir`. The returned client is
// also an ObjectCacheUsage. Never fails for the cache's sake: a cache that cannot open is put aside.
absl::StatusOr<std::unique_ptr<ObjectClient>> NewCachedObjectClient(std::unique_ptr<ObjectClient> inner,
                                                                     const ObjectCacheOptions& options);

}  // namespace fleetprof::cluster
