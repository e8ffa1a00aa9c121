#pragma once
// Times one query into the query histogram, whichever transport asked.

#include <chrono>

#include "server/server_metrics.h"

namespace fleetprof {

class QueryTimer {
 public:
  QueryTimer(ServerMetrics* metrics, const char* query)
      : metrics_(metrics), query_(query), start_(std::chrono::steady_clock::now()) {}
  ~QueryTimer() {
    metrics_->RecordQuery(
        query_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }

 private:
  ServerMetrics* metrics_;
  const char* query_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace fleetprof
