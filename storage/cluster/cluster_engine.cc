#include "storage/cluster/cluster_engine.h"

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"
#include "storage/cluster/etcd_catalog.h"
#include "storage/cluster/etcd_membership.h"
#include "storage/cluster/object_blob_store.h"
#include "storage/cluster/object_cache.h"
#include "storage/cluster/object_read_gate.h"

namespace fleetprof::cluster {
namespace {

class ClusterEngine : public StorageEngine {
 public:
  ClusterEngine(std::unique_ptr<EtcdClient> etcd, std::unique_ptr<ObjectClient> objects, const ClusterStoreOptions& options)
      : etcd_(std::move(etcd)), objects_(std::move(objects)), prefix_(options.etcd_prefix),
        catalog_(NewEtcdCatalog(etcd_.get(), options.etcd_prefix)), blobs_(NewObjectBlobStore(objects_.get())),
        compact_every_(options.compact_every) {
    compactor_ = std::thread([this] { CompactLoop(); });
  }
  ~ClusterEngine() override {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    compactor_.join();
  }

  Catalog& catalog() override { return *catalog_; }
  BlobStore& blobs() override { return *blobs_; }

  StoreHealth Health() const override {
    // Never "not serving": every replica shares etcd, and a Service that dropped them all at once
    // would stop the reads that still answer. The trouble is a warning instead.
    std::vector<std::string> warnings;
    if (!etcd_->healthy()) warnings.push_back("the catalog (etcd) does not answer: writes fail until it does");
    if (!objects_->healthy()) {
      warnings.push_back("the object store does not answer: uploads and uncached reads fail until it does");
    }
    if (const auto* cache = dynamic_cast<const ObjectCacheUsage*>(objects_.get()); cache != nullptr) {
      if (std::string problem = cache->Problem(); !problem.empty()) warnings.push_back(std::move(problem));
    }
    StoreHealth health;
    health.warning = absl::StrJoin(warnings, "; ");
    return health;
  }
  bool TryResume() override { return true; }
  // Every write is durable when it returns (etcd's raft log, the object store's PUT).
  absl::Status Flush() override { return absl::OkStatus(); }

  StorageUsage Usage() override {
    StorageUsage usage;
    etcdserverpb::RangeRequest request;
    request.set_key(absl::StrCat(prefix_, "profiles/"));
    request.set_range_end(EtcdPrefixEnd(request.key()));
    request.set_count_only(true);
    if (auto counted = etcd_->Range(request); counted.ok()) usage.profiles = counted->count();
    return usage;
  }
  std::unique_ptr<Membership> NewMembership() override {
    return NewEtcdMembership(etcd_.get(), prefix_, etcd_->clock());
  }
  void DescribeStores(v1::GetClusterResponse* out) override {
    out->mutable_catalog()->set_kind("etcd");
    out->mutable_catalog()->set_url(etcd_->Describe());
    out->mutable_catalog()->set_healthy(etcd_->healthy());
    out->mutable_object_store()->set_kind(objects_->Describe().starts_with("s3://") ? "s3" : "file");
    out->mutable_object_store()->set_url(objects_->Describe());
    out->mutable_object_store()->set_healthy(objects_->healthy());
  }

  // --max_disk_mb bounds the embedded store; a replica keeps only its cache here, which
  // bounds itself (--cache_mb), and the server refuses --max_disk_mb with the cluster's flags.
  int64_t FolderBytes() const override { return 0; }
  int64_t CountEventBlocks() override {
    auto blocks = CountSegmentBlocks(objects_.get());
    return blocks.ok() ? *blocks : -1;
  }

 private:
  void CompactLoop() {
    int64_t previous = 0;
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (mu_.AwaitWithTimeout(absl::Condition(&stop_), compact_every_)) return;
      }
      etcdserverpb::RangeRequest probe;
      probe.set_key(absl::StrCat(prefix_, "profiles/"));
      probe.set_limit(1);
      probe.set_keys_only(true);
      auto now = etcd_->Range(probe);
      if (!now.ok()) continue;
      if (previous > 0) {
        absl::Status s = etcd_->Compact(previous);
        if (!s.ok() && !absl::IsOutOfRange(s)) spdlog::warn("etcd compaction at revision {}: {}", previous, std::string(s.message()));
      }
      previous = now->header().revision();
    }
  }

  std::unique_ptr<EtcdClient> etcd_;
  std::unique_ptr<ObjectClient> objects_;
  const std::string prefix_;
  std::unique_ptr<Catalog> catalog_;
  std::unique_ptr<BlobStore> blobs_;
  const absl::Duration compact_every_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread compactor_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<StorageEngine>> OpenClusterEngine(const ClusterStoreOptions& options) {
  const Clock* clock = options.clock != nullptr ? options.clock : RealClock();
  auto objects = OpenObjectStore(options.object_store, options.s3);
  if (!objects.ok()) return objects.status();
  // Below the cache: a cached read never waits for a slot.
  ObjectReadGateOptions gate;
  gate.slots = options.query_object_reads;
  objects = NewObjectReadGate(*std::move(objects), gate);
  if (!options.cache_dir.empty()) {
    ObjectCacheOptions cache;
    cache.dir = options.cache_dir;
    cache.max_bytes = options.cache_bytes;
    cache.prefixes = WriteOnceObjectPrefixes();
    cache.on_lookup = options.on_cache_lookup;
    cache.on_state = options.on_cache_state;
    cache.clock = clock;
    objects = NewCachedObjectClient(*std::move(objects), cache);
    if (!objects.ok()) return objects.status();
  }
  EtcdSettings etcd_settings = options.etcd;
  if (etcd_settings.clock == nullptr) etcd_settings.clock = clock;
  auto etcd = EtcdClient::Connect(std::move(etcd_settings));
  if (!etcd.ok()) return etcd.status();
  // Both must answer before the server says it serves: a wrong endpoint or bucket is an error
  // at start, not on the first upload.
  etcdserverpb::RangeRequest probe;
  probe.set_key(options.etcd_prefix);
  probe.set_count_only(true);
  if (auto reached = (*etcd)->Range(probe); !reached.ok()) return reached.status();
  if (absl::Status s = (*objects)->List("summaries/", [](std::string_view, int64_t) { return false; }); !s.ok()) {
    return absl::UnavailableError(absl::StrCat("object store ", (*objects)->Describe(), ": ", s.message()));
  }
  return std::unique_ptr<StorageEngine>(new ClusterEngine(*std::move(etcd), *std::move(objects), options));
}

}  // namespace fleetprof::cluster
