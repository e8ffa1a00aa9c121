#include "server/query_api.h"

#include <chrono>


namespace fleetprof {
namespace {

// Times one query into the query histogram, whichever transport asked.
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

// Copies at most `limit` rows (0 = all).
template <typename Rows, typename Out>
void CopyRows(const Rows& rows, int limit, Out* out) {
  int n = 0;
  for (const auto& row : rows) {
    if (limit > 0 && n++ >= limit) break;
    *out->Add() = row;
  }
}

}  // namespace

absl::StatusOr<v1::ListProfilesResponse> QueryApi::ListProfiles(const v1::ListProfilesRequest& request) {
  QueryTimer timer(metrics_, "ListProfiles");
  if (request.page_size() < 0 || request.page_size() > 1000) {
    return absl::InvalidArgumentError("page_size must be between 0 (default 100) and 1000");
  }
  if (request.start_after_ns() < 0 || request.end_before_ns() < 0) {
    return absl::InvalidArgumentError("time bounds must not be negative");
  }
  auto page = store_->ListProfiles(request);
  if (!page.ok()) return page.status();
  v1::ListProfilesResponse response;
  for (auto& info : page->profiles) *response.add_profiles() = std::move(info);
  response.set_next_page_token(page->next_page_token);
  return response;
}

absl::StatusOr<v1::GetProfileResponse> QueryApi::GetProfile(const std::string& profile_id) {
  QueryTimer timer(metrics_, "GetProfile");
  if (profile_id.empty()) return absl::InvalidArgumentError("profile_id is required");
  auto info = store_->GetProfile(profile_id);
  if (!info.ok()) return info.status();
  auto summary = store_->GetSummary(profile_id);
  if (!summary.ok()) return summary.status();
  v1::GetProfileResponse response;
  *response.mutable_profile() = *std::move(info);
  *response.mutable_summary() = *std::move(summary);
  return response;
}

absl::StatusOr<v1::ProfileSummary> QueryApi::Summary(const v1::BreakdownRequest& request) {
  if (request.profile_id().empty()) return absl::InvalidArgumentError("profile_id is required");
  if (request.limit() < 0) return absl::InvalidArgumentError("limit must not be negative");
  auto summary = store_->GetSummary(request.profile_id());
  if (!summary.ok()) return summary.status();
  return summary;
}

absl::StatusOr<v1::OpBreakdownResponse> QueryApi::Ops(const v1::BreakdownRequest& request) {
  QueryTimer timer(metrics_, "OpBreakdown");
  auto summary = Summary(request);
  if (!summary.ok()) return summary.status();
  v1::OpBreakdownResponse response;
  CopyRows(summary->ops(), request.limit(), response.mutable_ops());
  return response;
}

absl::StatusOr<v1::KernelBreakdownResponse> QueryApi::Kernels(const v1::BreakdownRequest& request) {
  QueryTimer timer(metrics_, "KernelBreakdown");
  auto summary = Summary(request);
  if (!summary.ok()) return summary.status();
  v1::KernelBreakdownResponse response;
  CopyRows(summary->kernels(), request.limit(), response.mutable_kernels());
  return response;
}

absl::StatusOr<v1::TemporalBreakdownResponse> QueryApi::Devices(const v1::BreakdownRequest& request) {
  QueryTimer timer(metrics_, "TemporalBreakdown");
  auto summary = Summary(request);
  if (!summary.ok()) return summary.status();
  v1::TemporalBreakdownResponse response;
  CopyRows(summary->devices(), request.limit(), response.mutable_devices());
  return response;
}

absl::StatusOr<v1::StepBreakdownResponse> QueryApi::Steps(const v1::BreakdownRequest& request) {
  QueryTimer timer(metrics_, "StepBreakdown");
  auto summary = Summary(request);
  if (!summary.ok()) return summary.status();
  v1::StepBreakdownResponse response;
  CopyRows(summary->steps(), request.limit(), response.mutable_steps());
  return response;
}

absl::StatusOr<v1::MemoryBreakdownResponse> QueryApi::Memory(const v1::BreakdownRequest& request) {
  QueryTimer timer(metrics_, "MemoryBreakdown");
  auto summary = Summary(request);
  if (!summary.ok()) return summary.status();
  v1::MemoryBreakdownResponse response;
  CopyRows(summary->memory(), request.limit(), response.mutable_memory());
  return response;
}

absl::StatusOr<v1::XlaOpBreakdownResponse> QueryApi::XlaOps(const v1::BreakdownRequest& request) {
  QueryTimer timer(metrics_, "XlaOpBreakdown");
  auto summary = Summary(request);
  if (!summary.ok()) return summary.status();
  v1::XlaOpBreakdownResponse response;
  CopyRows(summary->xla_ops(), request.limit(), response.mutable_xla_ops());
  return response;
}

}  // namespace fleetprof
