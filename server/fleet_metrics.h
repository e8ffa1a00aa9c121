#pragma once
// The server's fleet view for Prometheus: the device samples every connected agent forwards
// in its heartbeats, exposed with node labels. Built at scrape time from the registry, so a
// node that disconnects simply stops appearing (bounded cardinality, nothing stale).

#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "server/agent_registry.h"

namespace fleetprof {

class FleetMetrics : public prometheus::Collectable {
 public:
  explicit FleetMetrics(AgentRegistry* registry) : registry_(registry) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  AgentRegistry* registry_;
};

}  // namespace fleetprof
