#pragma once
// Times one query into the query histogram, whichever transport asked.

#include "common/stopwatch.h"
#include "server/server_metrics.h"

namespace fleetprof {

class QueryTimer {
 public:
  QueryTimer(ServerMetrics* metrics, const char* query) : metrics_(metrics), query_(query) {}
  ~QueryTimer() { metrics_->RecordQuery(query_, running_.ElapsedSeconds()); }

 private:
  ServerMetrics* metrics_;
  const char* query_;
  const Stopwatch running_;
};

}  // namespace fleetprof
