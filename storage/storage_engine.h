#pragma once
// One storage engine: a catalog, a blob store, and what the server reports about them (health,
// sizes). Embedded: RocksDB under --data_dir (rocks_engine.h); unit tests: memory (memory_engine.h).

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "fleetprof/v1/cluster.pb.h"
#include "storage/membership.h"
#include "storage/blob_store.h"
#include "storage/catalog.h"

namespace fleetprof {

// Whether the engine takes writes (RocksDB stops after a background error).
struct StoreHealth {
  bool serving = true;            // writes are taken
  std::string error;              // while not serving: the engine's reason
  int64_t background_errors = 0;  // since the engine opened
  // A shared store's trouble that this process rides out (a cluster replica whose etcd lost
  // quorum: reads answer, writes fail fast): said on /healthz, which stays 200.
  std::string warning;
};

// For metrics: counts are estimates where the engine only estimates.
struct StorageUsage {
  int64_t profiles = 0;
  int64_t disk_bytes = 0;        // everything stored, compressed
  int64_t event_disk_bytes = 0;  // event segments
  int64_t raw_disk_bytes = 0;    // uploads' original bytes
};

class StorageEngine {
 public:
  virtual ~StorageEngine() = default;
  virtual Catalog& catalog() = 0;
  virtual BlobStore& blobs() = 0;

  virtual StoreHealth Health() const = 0;
  // After a background error, asks the engine to take writes again; returns whether it does.
  virtual bool TryResume() = 0;
  // Makes buffered writes durable and lets the engine drop its logs (shutdown, retention).
  virtual absl::Status Flush() = 0;
  virtual StorageUsage Usage() = 0;
  // What --max_disk_mb bounds: the disk space of everything the engine keeps on this machine,
  // as du counts it (each file at its allocated blocks, or its size where that is more; the
  // folders too). Embedded: the whole --data_dir, RocksDB's logs and manifest included.
  virtual int64_t FolderBytes() const = 0;
  // Waits a bounded while for the engine's flushes and compactions in flight, whose inputs and
  // outputs are both on disk until they end, so that FolderBytes then counts what stays.
  virtual void AwaitBackgroundWork() {}
  // Blocks of every event segment (tests: nothing left behind).
  virtual int64_t CountEventBlocks() = 0;
  // Who else serves this store (a cluster's replicas) and who leads; embedded: this process.
  virtual std::unique_ptr<Membership> NewMembership() { return std::make_unique<LocalMembership>(); }
  // The catalog's and the object store's kind, place and health, for /api/v1/cluster.
  virtual void DescribeStores(v1::GetClusterResponse* out) {
    out->mutable_catalog()->set_kind("embedded");
    out->mutable_catalog()->set_healthy(Health().serving);
    out->mutable_object_store()->set_healthy(Health().serving);
  }
};

}  // namespace fleetprof
