#include "server/query/query_operations.h"

#include "absl/strings/str_cat.h"
#include "common/safe_paths.h"

namespace fleetprof {
namespace {

constexpr char kService[] = "fleetprof.v1.QueryService.";

std::string Method(const char* name) { return absl::StrCat(kService, name); }

// An export as a download: Chrome-trace JSON by the profile's id, the original bytes by the
// name they were uploaded under (which came from a client: only safe characters are kept).
absl::StatusOr<FileAnswer> ExportAsFile(QueryApi* api, const v1::ExportProfileRequest& request) {
  absl::StatusOr<QueryApi::Export> exported = api->ExportProfile(request);
  if (!exported.ok()) return exported.status();
  FileAnswer file;
  const bool chrome = request.format() == "chrome_json";
  const bool pprof = request.format() == "pprof";
  file.content_type = chrome ? "application/json" : pprof ? "application/gzip" : "application/octet-stream";
  const v1::ProfileInfo& profile = exported->profile;
  file.file_name = chrome  ? absl::StrCat(profile.profile_id(), ".trace.json")
                   : pprof ? absl::StrCat(profile.profile_id(), ".pb.gz")
                           : SafeFileName(profile.file_name().empty() ? profile.profile_id() : profile.file_name());
  file.bytes = std::move(exported->bytes);
  return file;
}

}  // namespace

void AddQueryOperations(QueryApi* api, Operations* ops) {
  using namespace v1;  // NOLINT: the message names read as in query.proto
  ops->AddUnary<ListProfilesRequest, ListProfilesResponse>(Method("ListProfiles"),
                                                           [api](const auto& r) { return api->ListProfiles(r); });
  ops->AddUnary<ListJobsRequest, ListJobsResponse>(Method("ListJobs"), [api](const auto& r) { return api->ListJobs(r); });
  ops->AddUnary<ListRegressionsRequest, ListRegressionsResponse>(Method("ListRegressions"),
                                                                 [api](const auto& r) { return api->ListRegressions(r); });
  ops->AddUnary<GetProfileRequest, GetProfileResponse>(
      Method("GetProfile"), [api](const auto& r) { return api->GetProfile(r.profile_id()); });
  ops->AddUnary<BreakdownRequest, OpBreakdownResponse>(Method("OpBreakdown"),
                                                       [api](const auto& r) { return api->Ops(r); });
  ops->AddUnary<BreakdownRequest, KernelBreakdownResponse>(Method("KernelBreakdown"),
                                                           [api](const auto& r) { return api->Kernels(r); });
  ops->AddUnary<BreakdownRequest, TemporalBreakdownResponse>(Method("TemporalBreakdown"),
                                                             [api](const auto& r) { return api->Devices(r); });
  ops->AddUnary<BreakdownRequest, StepBreakdownResponse>(Method("StepBreakdown"),
                                                         [api](const auto& r) { return api->Steps(r); });
  ops->AddUnary<BreakdownRequest, MemoryBreakdownResponse>(Method("MemoryBreakdown"),
                                                           [api](const auto& r) { return api->Memory(r); });
  ops->AddUnary<BreakdownRequest, XlaOpBreakdownResponse>(Method("XlaOpBreakdown"),
                                                          [api](const auto& r) { return api->XlaOps(r); });
  ops->AddUnary<StatsRequest, StatsResponse>(Method("GetStats"), [api](const auto& r) { return api->Stats(r); });
  ops->AddUnary<FlameGraphRequest, FlameGraph>(Method("GetFlameGraph"),
                                               [api](const auto& r) { return api->FlameGraph(r); });
  ops->AddUnary<TraceWindowRequest, TraceWindow>(Method("GetTraceWindow"),
                                                 [api](const auto& r) { return api->TraceWindow(r); });
  ops->AddUnary<RangeBreakdownRequest, RangeBreakdown>(Method("GetRangeBreakdown"),
                                                       [api](const auto& r) { return api->RangeBreakdown(r); });
  ops->AddUnary<DeleteProfileRequest, DeleteProfileResponse>(Method("DeleteProfile"),
                                                             [api](const auto& r) { return api->DeleteProfile(r); });
  ops->AddUnary<DiffRequest, DiffResponse>(Method("Diff"), [api](const auto& r) { return api->Diff(r); });
  ops->AddUnary<JobRequest, JobOpsResponse>(Method("JobOps"), [api](const auto& r) { return api->JobOps(r); });
  ops->AddUnary<JobRequest, JobSeriesResponse>(Method("JobSeries"), [api](const auto& r) { return api->JobSeries(r); });
  ops->AddUnary<JobTraceRequest, JobTraceWindow>(Method("JobTrace"), [api](const auto& r) { return api->JobTrace(r); });
  ops->AddUnary<JobCollectivesRequest, JobCollectivesResponse>(Method("JobCollectives"),
                                                               [api](const auto& r) { return api->JobCollectives(r); });
  ops->AddUnary<DiagnoseRequest, DiagnoseResponse>(Method("Diagnose"), [api](const auto& r) { return api->Diagnose(r); });
  // Pyroscope's query API (querier.v1), served over Connect on the HTTP listener and on gRPC.
  const auto pyroscope = [](const char* name) { return absl::StrCat("querier.v1.QuerierService.", name); };
  ops->AddUnary<querier::v1::ProfileTypesRequest, querier::v1::ProfileTypesResponse>(
      pyroscope("ProfileTypes"), [api](const auto& r) { return api->ProfileTypes(r); });
  ops->AddUnary<types::v1::LabelNamesRequest, types::v1::LabelNamesResponse>(
      pyroscope("LabelNames"), [api](const auto& r) { return api->LabelNames(r); });
  ops->AddUnary<types::v1::LabelValuesRequest, types::v1::LabelValuesResponse>(
      pyroscope("LabelValues"), [api](const auto& r) { return api->LabelValues(r); });
  ops->AddUnary<querier::v1::SelectMergeStacktracesRequest, querier::v1::SelectMergeStacktracesResponse>(
      pyroscope("SelectMergeStacktraces"), [api](const auto& r) { return api->SelectMergeStacktraces(r); });
  ops->AddUnary<querier::v1::SelectSeriesRequest, querier::v1::SelectSeriesResponse>(
      pyroscope("SelectSeries"), [api](const auto& r) { return api->SelectSeries(r); });
  ops->AddFile<ExportProfileRequest>(Method("ExportProfile"), [api](const auto& r) { return ExportAsFile(api, r); });
}

}  // namespace fleetprof
