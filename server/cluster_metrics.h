#pragma once
// A replica's requests to its shared stores, by store, operation and result, with their
// latency: fleetprof_server_object_store_requests_total{op,result},
// fleetprof_server_object_store_request_seconds{op}, and the same for the catalog (etcd); and
// fleetprof_server_cluster_leader, 1 while this replica leads; and the local object cache's
// lookups, fleetprof_server_object_cache_lookups_total{result="hit|miss"}, and whether it works,
// fleetprof_server_object_cache_working.

#include <memory>
#include <string_view>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace fleetprof {

class ClusterMetrics {
 public:
  explicit ClusterMetrics(prometheus::Registry& registry);
  void RecordObjectStore(std::string_view op, std::string_view result, double seconds);
  void RecordCatalog(std::string_view op, std::string_view result, double seconds);
  void SetLeader(bool leader) { leader_.Set(leader ? 1 : 0); }
  void RecordCacheLookup(bool hit) { (hit ? cache_hits_ : cache_misses_).Increment(); }
  void SetCacheWorking(bool working) { cache_working_.Set(working ? 1 : 0); }

 private:
  prometheus::Family<prometheus::Counter>& object_requests_;
  prometheus::Family<prometheus::Histogram>& object_seconds_;
  prometheus::Family<prometheus::Counter>& catalog_requests_;
  prometheus::Family<prometheus::Histogram>& catalog_seconds_;
  prometheus::Gauge& leader_;
  prometheus::Family<prometheus::Counter>& cache_lookups_;
  prometheus::Counter& cache_hits_;
  prometheus::Counter& cache_misses_;
  prometheus::Gauge& cache_working_;
};

}  // namespace fleetprof
