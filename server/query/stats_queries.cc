// The `nsys stats` reports of a stored profile: computed at ingest with the rest of its summary
// (analysis/stats_reports.h); a query picks the reports asked for (StatsAnswer).

#include "absl/strings/str_cat.h"
#include "proto/summary_codec.h"
#include "server/query/query_api.h"
#include "server/query/query_timer.h"

namespace fleetprof {

absl::StatusOr<v1::StatsResponse> QueryApi::Stats(const v1::StatsRequest& request) {
  QueryTimer timer(metrics_, "GetStats");
  v1::BreakdownRequest profile;
  profile.set_profile_id(request.profile_id());
  auto summary = Summary(profile);
  if (!summary.ok()) return summary.status();
  absl::StatusOr<v1::StatsResponse> answer = StatsAnswer(**summary, request.report());
  if (absl::IsFailedPrecondition(answer.status())) {
    return absl::FailedPreconditionError(absl::StrCat("profile ", request.profile_id(), ": ", answer.status().message()));
  }
  return answer;
}

}  // namespace fleetprof
