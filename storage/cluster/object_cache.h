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
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/cluster/object_client.h"

namespace fleetprof::cluster {

struct ObjectCacheOptions {
  std::string dir;                    // created when missing
  int64_t max_bytes = int64_t{1} << 30;  // --cache_mb
  std::vector<std::string> prefixes;  // keys cached: write-once objects only
  // Hears each lookup of a cached key: found here or not.
  std::function<void(bool hit)> on_lookup;
};

// The files the cache keeps on disk now (for metrics and tests).
class ObjectCacheUsage {
 public:
  virtual ~ObjectCacheUsage() = default;
  virtual int64_t CacheBytes() const = 0;
};

// `inner` with reads of `options.prefixes` kept under `options.dir`. The returned client is
// also an ObjectCacheUsage.
absl::StatusOr<std::unique_ptr<ObjectClient>> NewCachedObjectClient(std::unique_ptr<ObjectClient> inner,
                                                                     const ObjectCacheOptions& options);

}  // namespace fleetprof::cluster
