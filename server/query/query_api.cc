#include "server/query/query_api.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flame/pprof_export.h"
#include "server/query/query_timer.h"
#include "timeline/chrome_trace_export.h"
#include "timeline/trace_window.h"


namespace fleetprof {
namespace {

// Copies the first `limit` rows (0 = all) of a cached summary's section into the answer.
template <typename Rows>
void CopyRows(const Rows& rows, int limit, Rows* out) {
  const int n = limit > 0 ? std::min(limit, rows.size()) : rows.size();
  out->Reserve(n);
  for (int i = 0; i < n; ++i) *out->Add() = rows.Get(i);
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
  auto page = store_->profiles().List(request);
  if (!page.ok()) return page.status();
  v1::ListProfilesResponse response;
  for (auto& info : page->profiles) *response.add_profiles() = std::move(info);
  response.set_next_page_token(page->next_page_token);
  for (const UnreadableRecord& bad : page->unreadable) {
    v1::UnreadableProfile* out = response.add_unreadable();
    out->set_profile_id(bad.key);
    out->set_error(bad.error);
  }
  return response;
}

absl::StatusOr<v1::ListJobsResponse> QueryApi::ListJobs(const v1::ListJobsRequest& request) {
  QueryTimer timer(metrics_, "ListJobs");
  v1::ListProfilesRequest list;
  *list.mutable_labels() = request.labels();
  std::map<std::string, v1::JobSummary> jobs;
  absl::Status counted = ForEachListed(
      list, kMaxListedProfiles,
      absl::StrCat("more than ", kMaxListedProfiles, " profiles to count; narrow the job list with a label"),
      [&](const v1::ProfileInfo& info) {
        v1::JobSummary& job = jobs[info.job()];
        job.set_job(info.job());
        job.set_profiles(job.profiles() + 1);
        if (job.last_profile_id().empty() || info.ingested_at_ns() > job.last_ingested_at_ns()) {
          job.set_last_ingested_at_ns(info.ingested_at_ns());
          job.set_last_profile_id(info.profile_id());
        }
        return absl::OkStatus();
      });
  if (!counted.ok()) return counted;
  std::vector<v1::JobSummary> sorted;
  for (auto& [name, job] : jobs) sorted.push_back(std::move(job));
  std::stable_sort(sorted.begin(), sorted.end(), [](const v1::JobSummary& a, const v1::JobSummary& b) {
    return a.last_ingested_at_ns() > b.last_ingested_at_ns();  // ties keep the names' order
  });
  v1::ListJobsResponse response;
  for (auto& job : sorted) *response.add_jobs() = std::move(job);
  return response;
}

absl::Status QueryApi::ForEachListed(v1::ListProfilesRequest list, int64_t max, const std::string& too_many,
                                     const std::function<absl::Status(const v1::ProfileInfo&)>& visit) {
  int64_t seen = 0;
  return store_->profiles().ForEachListed(list, [&](const v1::ProfileInfo& info) {
    if (++seen > max) return absl::ResourceExhaustedError(too_many);
    return visit(info);
  });
}

absl::StatusOr<v1::GetProfileResponse> QueryApi::GetProfile(const std::string& profile_id) {
  QueryTimer timer(metrics_, "GetProfile");
  if (profile_id.empty()) return absl::InvalidArgumentError("profile_id is required");
  auto info = store_->profiles().Get(profile_id);
  if (!info.ok()) return info.status();
  auto summary = summaries_.Get(profile_id);
  if (!summary.ok()) return summary.status();
  v1::GetProfileResponse response;
  *response.mutable_profile() = *std::move(info);
  *response.mutable_summary() = **summary;
  // The call tree is read through the flame graph and pprof export; here it would only be a
  // large block of numbers by reference.
  // The tree is the flame graph's answer and the reports GetStats's: not repeated here.
  response.mutable_summary()->clear_call_tree();
  response.mutable_summary()->clear_stats();
  response.mutable_summary()->clear_nvtx_open_ranges();
  return response;
}

absl::StatusOr<QueryApi::Export> QueryApi::ExportProfile(const v1::ExportProfileRequest& request) {
  QueryTimer timer(metrics_, "ExportProfile");
  if (request.profile_id().empty()) return absl::InvalidArgumentError("profile_id is required");
  const bool original = request.format().empty() || request.format() == "original";
  const bool pprof = request.format() == "pprof";
  if (!original && !pprof && request.format() != "chrome_json") {
    return absl::InvalidArgumentError(absl::StrCat("export format '", request.format(),
                                                   "' is not available: 'original' (the uploaded file), "
                                                   "'chrome_json' (Chrome-trace JSON for Perfetto) and 'pprof' "
                                                   "(the call tree, gzipped profile.proto) are"));
  }
  if (!(request.format() == "chrome_json") && (request.start_ns() != 0 || request.end_ns() != 0)) {
    return absl::InvalidArgumentError("a window (start_ns, end_ns) exports only as format=chrome_json");
  }
  auto info = store_->profiles().Get(request.profile_id());
  if (!info.ok()) return info.status();
  Export out;
  if (original) {
    out.bytes = store_->uploads().ReadOriginal(info->upload_id(), info->size_bytes());
  } else if (pprof) {
    auto tree = CallTreeOf(request.profile_id());
    if (!tree.ok()) return tree.status();
    auto bytes = flame::CallTreeToGzippedPprof(*tree);
    if (!bytes.ok()) return bytes.status();
    out.bytes = analysis::OpenStringSource(absl::StrCat(request.profile_id(), ".pb.gz"), *std::move(bytes));
  } else {
    auto timeline = timelines_.Get(request.profile_id());
    if (!timeline.ok()) return timeline.status();
    int64_t start = request.start_ns(), end = request.end_ns();
    if (start != 0 || end != 0) {  // one bound given: the other is the profile's
      if (start == 0) start = (*timeline)->start_ns();
      if (end == 0) end = (*timeline)->end_ns();
    }
    auto bytes = timeline::ExportChromeTrace(*timeline, store_->events().NewReader(request.profile_id()), start,
                                             end, request.profile_id());
    if (!bytes.ok()) return bytes.status();
    out.bytes = *std::move(bytes);
  }
  out.profile = *std::move(info);
  return out;
}

absl::StatusOr<v1::TraceWindow> QueryApi::TraceWindow(const v1::TraceWindowRequest& request) {
  QueryTimer timer(metrics_, "TraceWindow");
  if (request.profile_id().empty()) return absl::InvalidArgumentError("profile_id is required");
  auto timeline = timelines_.Get(request.profile_id());
  if (!timeline.ok()) return timeline.status();
  std::unique_ptr<timeline::TimelineReader> reader = store_->events().NewReader(request.profile_id());
  auto window = timeline::QueryTraceWindow(**timeline, *reader, request);
  if (window.ok()) window->set_profile_id(request.profile_id());
  return window;
}

absl::StatusOr<v1::RangeBreakdown> QueryApi::RangeBreakdown(const v1::RangeBreakdownRequest& request) {
  QueryTimer timer(metrics_, "RangeBreakdown");
  if (request.profile_id().empty()) return absl::InvalidArgumentError("profile_id is required");
  auto timeline = timelines_.Get(request.profile_id());
  if (!timeline.ok()) return timeline.status();
  std::unique_ptr<timeline::TimelineReader> reader = store_->events().NewReader(request.profile_id());
  auto range = timeline::QueryRangeBreakdown(**timeline, *reader, request);
  if (range.ok()) range->set_profile_id(request.profile_id());
  return range;
}

absl::StatusOr<v1::DeleteProfileResponse> QueryApi::DeleteProfile(const v1::DeleteProfileRequest& request) {
  QueryTimer timer(metrics_, "DeleteProfile");
  if (request.profile_id().empty()) return absl::InvalidArgumentError("profile_id is required");
  if (absl::Status s = store_->profiles().Delete(request.profile_id()); !s.ok()) return s;
  collectives_.Erase(request.profile_id());
  timelines_.Erase(request.profile_id());
  summaries_.Erase(request.profile_id());
  v1::DeleteProfileResponse response;
  response.set_profile_id(request.profile_id());
  response.set_deleted(true);
  return response;
}

absl::StatusOr<std::shared_ptr<const v1::ProfileSummary>> QueryApi::Summary(const v1::BreakdownRequest& request) {
  if (request.profile_id().empty()) return absl::InvalidArgumentError("profile_id is required");
  if (request.limit() < 0) return absl::InvalidArgumentError("limit must not be negative");
  return summaries_.Get(request.profile_id());
}

template <typename Response, typename Rows>
absl::StatusOr<Response> QueryApi::Section(const char* query, const v1::BreakdownRequest& request,
                                           const Rows& (v1::ProfileSummary::*rows)() const,
                                           Rows* (Response::*out)()) {
  QueryTimer timer(metrics_, query);
  auto summary = Summary(request);
  if (!summary.ok()) return summary.status();
  Response response;
  CopyRows(((**summary).*rows)(), request.limit(), (response.*out)());
  return response;
}

absl::StatusOr<v1::OpBreakdownResponse> QueryApi::Ops(const v1::BreakdownRequest& request) {
  return Section("OpBreakdown", request, &v1::ProfileSummary::ops, &v1::OpBreakdownResponse::mutable_ops);
}

absl::StatusOr<v1::KernelBreakdownResponse> QueryApi::Kernels(const v1::BreakdownRequest& request) {
  return Section("KernelBreakdown", request, &v1::ProfileSummary::kernels,
                 &v1::KernelBreakdownResponse::mutable_kernels);
}

absl::StatusOr<v1::TemporalBreakdownResponse> QueryApi::Devices(const v1::BreakdownRequest& request) {
  return Section("TemporalBreakdown", request, &v1::ProfileSummary::devices,
                 &v1::TemporalBreakdownResponse::mutable_devices);
}

absl::StatusOr<v1::StepBreakdownResponse> QueryApi::Steps(const v1::BreakdownRequest& request) {
  return Section("StepBreakdown", request, &v1::ProfileSummary::steps,
                 &v1::StepBreakdownResponse::mutable_steps);
}

absl::StatusOr<v1::MemoryBreakdownResponse> QueryApi::Memory(const v1::BreakdownRequest& request) {
  return Section("MemoryBreakdown", request, &v1::ProfileSummary::memory,
                 &v1::MemoryBreakdownResponse::mutable_memory);
}

absl::StatusOr<v1::XlaOpBreakdownResponse> QueryApi::XlaOps(const v1::BreakdownRequest& request) {
  return Section("XlaOpBreakdown", request, &v1::ProfileSummary::xla_ops,
                 &v1::XlaOpBreakdownResponse::mutable_xla_ops);
}

}  // namespace fleetprof
