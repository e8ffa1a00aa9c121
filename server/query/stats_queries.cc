// The `nsys stats` reports of a stored profile: computed at ingest with the rest of its summary
// (analysis/stats_reports.h); a query picks the reports asked for.

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analysis/stats_rows.h"
#include "server/query/query_api.h"
#include "server/query/query_timer.h"

namespace fleetprof {
namespace {

std::string KnownReports() {
  std::string names;
  for (std::string_view name : analysis::kStatsReportNames) absl::StrAppend(&names, names.empty() ? "" : ", ", std::string(name));
  return names;
}

// Which reports `spec` ("a,b"; empty: all) names, in StatsReport order.
absl::StatusOr<std::array<bool, analysis::kStatsReportCount>> WantedReports(const std::string& spec) {
  std::array<bool, analysis::kStatsReportCount> wanted{};
  if (spec.empty()) {
    wanted.fill(true);
    return wanted;
  }
  for (absl::string_view name : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    analysis::StatsReport report;
    if (!analysis::ParseStatsReport(std::string_view(name.data(), name.size()), &report)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown report '", std::string(name.substr(0, 64)),
                                                     "': want one of ",
                                                     KnownReports()));
    }
    wanted[static_cast<size_t>(report)] = true;
  }
  return wanted;
}

}  // namespace

absl::StatusOr<v1::StatsResponse> QueryApi::Stats(const v1::StatsRequest& request) {
  QueryTimer timer(metrics_, "GetStats");
  absl::StatusOr<std::array<bool, analysis::kStatsReportCount>> wanted = WantedReports(request.report());
  if (!wanted.ok()) return wanted.status();
  v1::BreakdownRequest profile;
  profile.set_profile_id(request.profile_id());
  auto summary = Summary(profile);
  if (!summary.ok()) return summary.status();
  if (!(**summary).has_stats()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "profile ", request.profile_id(),
        " was stored before fleetprof computed nsys stats reports; upload its file again to get them"));
  }
  const v1::StatsReports& all = (**summary).stats();
  v1::StatsResponse response;
  v1::StatsReports* out = response.mutable_reports();
  using analysis::StatsReport;
  const auto want = [&](StatsReport r) { return (*wanted)[static_cast<size_t>(r)]; };
  if (want(StatsReport::kKernSum)) *out->mutable_cuda_gpu_kern_sum() = all.cuda_gpu_kern_sum();
  if (want(StatsReport::kMemTimeSum)) *out->mutable_cuda_gpu_mem_time_sum() = all.cuda_gpu_mem_time_sum();
  if (want(StatsReport::kMemSizeSum)) *out->mutable_cuda_gpu_mem_size_sum() = all.cuda_gpu_mem_size_sum();
  if (want(StatsReport::kApiSum)) *out->mutable_cuda_api_sum() = all.cuda_api_sum();
  if (want(StatsReport::kNvtxSum)) *out->mutable_nvtx_sum() = all.nvtx_sum();
  response.set_nvtx_open_ranges((**summary).nvtx_open_ranges());
  return response;
}

}  // namespace fleetprof
