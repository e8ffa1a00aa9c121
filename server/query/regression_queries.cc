// QueryApi's regression queries: the records the detector kept at commit
// (server/ingest/regression_detector.h, storage/regression_store.h).
#include "server/query/query_api.h"
#include "server/query/query_timer.h"

namespace fleetprof {

absl::StatusOr<v1::ListRegressionsResponse> QueryApi::ListRegressions(const v1::ListRegressionsRequest& request) {
  QueryTimer timer(metrics_, "ListRegressions");
  absl::StatusOr<std::vector<v1::Regression>> records = store_->regressions().List(request.job());
  if (!records.ok()) return records.status();
  v1::ListRegressionsResponse response;
  for (v1::Regression& r : *records) *response.add_regressions() = std::move(r);
  return response;
}

absl::StatusOr<std::vector<v1::Regression>> QueryApi::ProfileRegressions(const std::string& profile_id) {
  absl::StatusOr<v1::ProfileInfo> info = store_->profiles().Get(profile_id);
  if (!info.ok()) return info.status();
  if (info->job().empty()) return std::vector<v1::Regression>();
  return store_->regressions().ForProfile(info->job(), profile_id);
}

}  // namespace fleetprof
