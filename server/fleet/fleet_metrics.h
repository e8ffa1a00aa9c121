#pragma once
// The server's fleet view for Prometheus: the device samples every connected agent forwards
// in its heartbeats, exposed with node labels. Built at scrape time from the registry, so a
// node that disconnects simply stops appearing (bounded cardinality, nothing stale).

#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "server/fleet/agent_registry.h"

namespace fleetprof {

class FleetMetrics : public prometheus::Collectable {
 public:
  // At most `max_job_series` job label values in the per-job family (the rest: job="other").
  explicit FleetMetrics(AgentRegistry* registry, size_t max_job_series = 1000)
      : registry_(registry), max_job_series_(max_job_series) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  AgentRegistry* registry_;
  size_t max_job_series_;
};

}  // namespace fleetprof
