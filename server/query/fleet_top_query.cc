#include "server/query/fleet_top_query.h"

#include "absl/strings/str_cat.h"
#include "server/fleet/fleet_accounting.h"
#include "server/query/query_timer.h"

namespace fleetprof {

absl::StatusOr<v1::FleetTopResponse> FleetTopQuery::Top(const v1::FleetTopRequest& request) const {
  QueryTimer timer(metrics_, "FleetTop");
  absl::StatusOr<FleetDimension> by = ParseFleetDimension(request.by());
  if (!by.ok()) return by.status();
  if (request.limit() < 0) return absl::InvalidArgumentError(absl::StrCat("limit ", request.limit(), " is negative"));
  if (request.since_ms() < 0 || request.since_ms() > kFleetMaxSinceMs) {
    return absl::InvalidArgumentError(absl::StrCat("since_ms ", request.since_ms(), " is outside 0..",
                                                   kFleetMaxSinceMs, " (fleet rollups are kept at most ",
                                                   kFleetMaxKeepDays, " days)"));
  }
  const int64_t first_hour = FleetFirstHour(request, clock_->Now());
  FleetTopBuilder builder(request, first_hour * kFleetHourNs);
  absl::Status s = store_->Scan(FleetDimensionName(*by), first_hour, [&](const v1::FleetRollupCell& record) {
    if (FleetLabelsMatch(record.labels(), request)) builder.Add(record);
    return true;
  });
  if (!s.ok()) return s;
  return builder.Finish();
}

void AddFleetTopOperation(const FleetTopQuery* query, Operations* operations) {
  operations->AddUnary<v1::FleetTopRequest, v1::FleetTopResponse>(
      "fleetprof.v1.QueryService.FleetTop", [query](const auto& r) { return query->Top(r); });
}

}  // namespace fleetprof
