#pragma once
// QueryService.FleetTop (issue 42, item 3): where the fleet's device-time went over a window,
// merged from the rollup cells kept at commit (server/fleet/fleet_rollups.h), never from
// profiles: a query reads one record per (hour, job, labels) of its grouping in the window.

#include <cstdint>

#include "absl/status/statusor.h"
#include "api/operations.h"
#include "common/clock.h"
#include "fleetprof/v1/fleet.pb.h"
#include "server/server_metrics.h"
#include "storage/fleet_rollup_store.h"

namespace fleetprof {

class FleetTopQuery {
 public:
  // Nothing is owned; `clock` ends the window.
  FleetTopQuery(FleetRollupStore* store, Clock* clock, ServerMetrics* metrics)
      : store_(store), clock_(clock), metrics_(metrics) {}

  // The estimates over the last since_ms (0: 24 h), rounded out to whole hours. INVALID_ARGUMENT
  // for an unknown `by`, a negative limit, or since_ms negative or past the kept days.
  absl::StatusOr<v1::FleetTopResponse> Top(const v1::FleetTopRequest& request) const;

 private:
  FleetRollupStore* store_;
  Clock* clock_;
  ServerMetrics* metrics_;
};

// Adds QueryService.FleetTop to the table every edge serves (gRPC, HTTP, Connect).
// REQUIRES: `query` outlives `operations`' use.
void AddFleetTopOperation(const FleetTopQuery* query, Operations* operations);

}  // namespace fleetprof
