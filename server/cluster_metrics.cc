#include "server/cluster_metrics.h"

#include <string>

namespace fleetprof {
namespace {

const prometheus::Histogram::BucketBoundaries& RequestBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                                   0.1,   0.25,   0.5,   1,    2.5,   10};
  return kBuckets;
}

}  // namespace

ClusterMetrics::ClusterMetrics(prometheus::Registry& registry)
    : object_requests_(prometheus::BuildCounter()
                           .Name("fleetprof_server_object_store_requests_total")
                           .Help("Requests to the object store by operation (GET, PUT, HEAD, DELETE, LIST, multipart "
                                 "steps) and result (ok, retried: succeeded after retries, not_found, error)")
                           .Register(registry)),
      object_seconds_(prometheus::BuildHistogram()
                          .Name("fleetprof_server_object_store_request_seconds")
                          .Help("Object-store request latency by operation, retries included")
                          .Register(registry)),
      catalog_requests_(prometheus::BuildCounter()
                            .Name("fleetprof_server_catalog_requests_total")
                            .Help("Requests to the catalog (etcd) by operation (range, txn, compact, lease_*) and "
                                  "result (ok, retried, error)")
                            .Register(registry)),
      catalog_seconds_(prometheus::BuildHistogram()
                           .Name("fleetprof_server_catalog_request_seconds")
                           .Help("Catalog (etcd) request latency by operation, retries included")
                           .Register(registry)),
      leader_(prometheus::BuildGauge()
                  .Name("fleetprof_server_cluster_leader")
                  .Help("1 while this replica leads the cluster (runs schedules, retention and collection), "
                        "read from its lease at scrape time")
                  .Register(registry)
                  .Add({})),
      cache_lookups_(prometheus::BuildCounter()
                         .Name("fleetprof_server_object_cache_lookups_total")
                         .Help("Reads of write-once objects (summaries, event ranges) by where they were found: hit "
                               "(the replica's cache under --data_dir), miss (read from the object store)")
                         .Register(registry)),
      cache_hits_(cache_lookups_.Add({{"result", "hit"}})),
      cache_misses_(cache_lookups_.Add({{"result", "miss"}})),
      cache_working_(prometheus::BuildGauge()
                         .Name("fleetprof_server_object_cache_working")
                         .Help("1 while the replica's object cache works; 0 while it is put aside (a full disk, "
                               "a failed write): every read then goes to the object store, and /healthz says why")
                         .Register(registry)
                         .Add({})) {}

void ClusterMetrics::RecordObjectStore(std::string_view op, std::string_view result, double seconds) {
  object_requests_.Add({{"op", std::string(op)}, {"result", std::string(result)}}).Increment();
  object_seconds_.Add({{"op", std::string(op)}}, RequestBuckets()).Observe(seconds);
}

void ClusterMetrics::RecordCatalog(std::string_view op, std::string_view result, double seconds) {
  catalog_requests_.Add({{"op", std::string(op)}, {"result", std::string(result)}}).Increment();
  catalog_seconds_.Add({{"op", std::string(op)}}, RequestBuckets()).Observe(seconds);
}

}  // namespace fleetprof
