#pragma once
// The cluster's storage engine: the catalog in etcd, blobs on object storage (S3 or a folder).
// Every replica that opens the same two shares one store; nothing of it lives on local disk.

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "storage/cluster/etcd_client.h"
#include "storage/cluster/object_client.h"
#include "storage/storage_engine.h"

namespace fleetprof::cluster {

struct ClusterStoreOptions {
  std::string object_store;  // s3://BUCKET[/PREFIX] or file:///DIR
  S3Settings s3;
  EtcdSettings etcd;
  std::string etcd_prefix = "/fleetprof/";
  // etcd 3.4 keeps every revision until compacted, and its 2 GiB quota then fills with history:
  // every interval the store compacts away what is older than the previous interval's revision.
  absl::Duration compact_every = absl::Minutes(5);
  // The replica's local cache of object reads (object_cache.h): --data_dir/object-cache,
  // --cache_mb. No folder: no cache.
  std::string cache_dir;
  int64_t cache_bytes = int64_t{1} << 30;
  std::function<void(bool hit)> on_cache_lookup;
  std::function<void(bool working)> on_cache_state;
  // Object-store reads that queries may wait on at once (object_read_gate.h).
  int query_object_reads = 4;
  // The replica's time: etcd's deadlines and retries, the lease, the clock this replica
  // publishes, the cache's retries (null: RealClock()). An `etcd.clock` of its own wins.
  const Clock* clock = nullptr;
};

absl::StatusOr<std::unique_ptr<StorageEngine>> OpenClusterEngine(const ClusterStoreOptions& options);

}  // namespace fleetprof::cluster
