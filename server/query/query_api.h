#pragma once
// The read side of fleetprof, free of any transport: gRPC (server/query_service.h) and the
// HTTP API (server/http_api.h) are thin callers of these methods, so they cannot disagree.
// Breakdowns come from the summaries stored at ingest; the trace viewer's windows from the
// event store, through a cache of loaded directories.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/byte_source.h"
#include "analysis/trace_summary.h"
#include "fleetprof/v1/query.pb.h"
#include "querier/v1/querier.pb.h"
#include "server/query/label_selector.h"
#include "common/concurrency_slots.h"
#include "server/server_metrics.h"
#include "flame/call_tree_sum.h"
#include "flame/flame_graph.h"
#include "server/query/job_rollups.h"
#include "jobtrace/clock_alignment.h"
#include "jobtrace/collectives.h"
#include "server/query/timeline_cache.h"
#include "storage/storage.h"

namespace fleetprof {

class QueryApi {
 public:
  QueryApi(Storage* store, ServerMetrics* metrics)
      : store_(store), metrics_(metrics), timelines_(store, kTimelineCacheBytes), summaries_(store, kSummaryCacheBytes) {}

  // Profiles matching the request, newest ingest first. INVALID_ARGUMENT for a page_size
  // outside 0..1000, a negative time bound or a page_token of another query.
  absl::StatusOr<v1::ListProfilesResponse> ListProfiles(const v1::ListProfilesRequest& request);
  // Every job with a profile matching the labels, with its profile count and newest profile,
  // most recently ingested first. RESOURCE_EXHAUSTED past kMaxListedProfiles profiles.
  absl::StatusOr<v1::ListJobsResponse> ListJobs(const v1::ListJobsRequest& request);
  static constexpr int kMaxListedProfiles = 100000;
  // The profile's record and whole summary; NOT_FOUND naming the id when unknown.
  absl::StatusOr<v1::GetProfileResponse> GetProfile(const std::string& profile_id);

  // One section of a summary, at most request.limit() rows (0 = all), in stored order.
  absl::StatusOr<v1::OpBreakdownResponse> Ops(const v1::BreakdownRequest& request);
  absl::StatusOr<v1::KernelBreakdownResponse> Kernels(const v1::BreakdownRequest& request);
  absl::StatusOr<v1::TemporalBreakdownResponse> Devices(const v1::BreakdownRequest& request);
  absl::StatusOr<v1::StepBreakdownResponse> Steps(const v1::BreakdownRequest& request);
  absl::StatusOr<v1::MemoryBreakdownResponse> Memory(const v1::BreakdownRequest& request);
  absl::StatusOr<v1::XlaOpBreakdownResponse> XlaOps(const v1::BreakdownRequest& request);

  // A profile as a file. Format "original" (or empty): the bytes as uploaded, read from the
  // store as they are sent. "chrome_json": the stored events (all, or a window) as
  // Chrome-trace JSON, produced as it is sent. "pprof": the call tree as a gzipped pprof
  // profile (flame/pprof_export.h). Other formats are INVALID_ARGUMENT.
  struct Export {
    v1::ProfileInfo profile;
    std::unique_ptr<analysis::ByteSource> bytes;
  };
  absl::StatusOr<Export> ExportProfile(const v1::ExportProfileRequest& request);

  // A profile's call tree (request.profile_id), or the trees of a job's profiles added up
  // (request.job, selected as JobOps selects them), as Pyroscope's FlameGraph
  // (server/query/flame_queries.cc). INVALID_ARGUMENT for an unknown value or neither/both of
  // profile_id and job.
  // The `nsys stats` reports asked for (stats_queries.cc).
  absl::StatusOr<v1::StatsResponse> Stats(const v1::StatsRequest& request);
  absl::StatusOr<v1::FlameGraph> FlameGraph(const v1::FlameGraphRequest& request);

  // Pyroscope's query API (querier.v1, server/query/pyroscope_queries.cc): profiles selected by
  // label selectors (server/query/label_selector.h) over the labels of pyroscope_labels.h and
  // by ingest time (epoch ms; an end of 0 is no bound). INVALID_ARGUMENT for a bad selector or
  // an unknown profile type.
  absl::StatusOr<querier::v1::ProfileTypesResponse> ProfileTypes(const querier::v1::ProfileTypesRequest& request);
  absl::StatusOr<types::v1::LabelNamesResponse> LabelNames(const types::v1::LabelNamesRequest& request);
  absl::StatusOr<types::v1::LabelValuesResponse> LabelValues(const types::v1::LabelValuesRequest& request);
  // The selected profiles' call trees added up as FlameGraph() adds up a job's, drawn with at
  // most max_nodes frames when set (flame::RenderFlameGraph).
  absl::StatusOr<querier::v1::SelectMergeStacktracesResponse> SelectMergeStacktraces(
      const querier::v1::SelectMergeStacktracesRequest& request);
  // One series per distinct group_by label set, a point per profile at its ingest time (ms)
  // valued at its tree's total; with a step, the points of each step added up (or averaged).
  absl::StatusOr<querier::v1::SelectSeriesResponse> SelectSeries(const querier::v1::SelectSeriesRequest& request);

  // The trace viewer's reads, from the event store (timeline/trace_window.h).
  absl::StatusOr<v1::TraceWindow> TraceWindow(const v1::TraceWindowRequest& request);
  absl::StatusOr<v1::RangeBreakdown> RangeBreakdown(const v1::RangeBreakdownRequest& request);

  // The job timeline (server/query/job_trace_queries.cc): a capture's profiles (or named ones)
  // on the lowest rank's clock, as one window or as matched collectives.
  absl::StatusOr<v1::JobTraceWindow> JobTrace(const v1::JobTraceRequest& request);
  absl::StatusOr<v1::JobCollectivesResponse> JobCollectives(const v1::JobCollectivesRequest& request);
  static constexpr int kMaxJobTraceProfiles = 1024;

  // A selected profile of a job view across ranks, with its rank (label, trace, else place).
  struct JobMember {
    v1::ProfileInfo info;
    std::string rank;
    int place = 0;  // in the selection, oldest ingest first
  };

  // Deletes a profile and everything stored for it (Storage::DeleteProfile).
  absl::StatusOr<v1::DeleteProfileResponse> DeleteProfile(const v1::DeleteProfileRequest& request);

  // A newly stored profile's summary, kept parsed: the job views that follow read it from here.
  void Remember(const std::string& profile_id, const v1::ProfileSummary& summary) {
    summaries_.Insert(profile_id, summary);
  }

  // Drops what is kept of a profile another replica deleted; ForgetAll when some deletions may
  // have gone unheard.
  void Forget(const std::string& profile_id) {
    collectives_.Erase(profile_id);
    timelines_.Erase(profile_id);
    summaries_.Erase(profile_id);
  }
  void ForgetAll() {
    collectives_.Clear();
    timelines_.Clear();
    summaries_.Clear();
  }

  // Views across profiles (server/compare_queries.cc): compare/ and diagnosis/ do the work.
  absl::StatusOr<v1::DiffResponse> Diff(const v1::DiffRequest& request);
  absl::StatusOr<v1::JobOpsResponse> JobOps(const v1::JobRequest& request);
  absl::StatusOr<v1::JobSeriesResponse> JobSeries(const v1::JobRequest& request);
  absl::StatusOr<v1::DiagnoseResponse> Diagnose(const v1::DiagnoseRequest& request);
  // Regression records (server/ingest/regression_detector.h) of one job or all, newest first.
  absl::StatusOr<v1::ListRegressionsResponse> ListRegressions(const v1::ListRegressionsRequest& request);

  // A job view reads at most this many profiles (newest first); more is RESOURCE_EXHAUSTED
  // asking for a narrower time range or label.
  static constexpr int kMaxJobProfiles = 10000;

 private:
  // Calls `visit(info)` for every profile `list` selects, newest ingest first, a page at a time;
  // past `max` profiles it stops with RESOURCE_EXHAUSTED saying `too_many`.
  absl::Status ForEachListed(v1::ListProfilesRequest list, int64_t max, const std::string& too_many,
                             const std::function<absl::Status(const v1::ProfileInfo&)>& visit);
  // Calls `visit(info)` for every profile matching the job request, newest ingest first.
  absl::Status ForEachJobProfile(const v1::JobRequest& request,
                                 const std::function<absl::Status(const v1::ProfileInfo&)>& visit);

  // Diagnose's two halves: the findings of a job's rules, or of one profile's (without the
  // rules' descriptions, which Diagnose adds).
  absl::StatusOr<v1::DiagnoseResponse> JobDiagnosis(const v1::DiagnoseRequest& request,
                                                    const std::map<std::string, double>& thresholds);
  // The regression records of one profile (for its `regression` findings).
  absl::StatusOr<std::vector<v1::Regression>> ProfileRegressions(const std::string& profile_id);
  absl::StatusOr<v1::DiagnoseResponse> ProfileDiagnosis(const v1::DiagnoseRequest& request,
                                                        const std::map<std::string, double>& thresholds);
  // The profiles whose collectives late_rank reads, of those `job_request` selects (`points`
  // are their series).
  absl::StatusOr<std::vector<std::string>> LateRankProfiles(const v1::JobRequest& job_request,
                                                            const std::vector<v1::JobProfilePoint>& points);

  // Calls `visit(info, labels)` for every profile that one of `selectors` selects (all when
  // none) and whose ingest time is within [start_ms, end_ms] (end 0: no bound), newest first.
  absl::Status ForEachSelected(const std::vector<LabelSelector>& selectors, int64_t start_ms, int64_t end_ms,
                               const std::function<absl::Status(const v1::ProfileInfo&, const LabelSet&)>& visit);
  // The call trees of `profile_ids` added up (flame::CallTreeSum): a job's flame graph and
  // Pyroscope's merged stack traces alike, kept as a rollup under `key` (the selection, without
  // its time range: the listed ids decide) so the next call adds only new profiles.
  absl::StatusOr<analysis::CallTree> SumCallTrees(const std::string& key, const std::vector<std::string>& profile_ids);

  // The sum of `value` over the profile's call tree (flame::CallTreeTotal), read off the stored
  // columns without decoding the tree when it has one.
  absl::StatusOr<int64_t> CallTreeTotalOf(const std::string& profile_id, flame::FlameValue value);

  // The call tree stored with the profile's summary; for a profile stored before trees existed,
  // one built anew from its original upload (at most kConcurrentTreeBuilds at once), kept in the
  // summary cache. FAILED_PRECONDITION when the original cannot be read or analysed.
  absl::StatusOr<analysis::CallTree> CallTreeOf(const std::string& profile_id);

  // The job timeline's selection, in rank order (the reference first). NOT_FOUND for a capture
  // without profiles or an unknown profile; INVALID_ARGUMENT for a profile of another job.
  absl::StatusOr<std::vector<JobMember>> SelectJobMembers(const std::string& job, const std::string& capture_id,
                                                          const google::protobuf::RepeatedPtrField<std::string>& ids);
  // The members' timelines, collectives, alignment and clock answers, in the members' order.
  struct JobClocks {
    std::vector<std::shared_ptr<const timeline::Timeline>> timelines;
    std::vector<std::shared_ptr<const jobtrace::ProfileCollectives>> collectives;
    std::vector<jobtrace::RankAlignment> alignment;
    std::vector<v1::JobTraceProfile> profiles;
  };
  absl::StatusOr<JobClocks> AlignJob(const std::vector<JobMember>& members);
  // A profile's collectives, read once from its event store and kept (profiles never change).
  absl::StatusOr<std::shared_ptr<const jobtrace::ProfileCollectives>> CollectivesOf(
      const std::string& profile_id, const timeline::Timeline& timeline);

  // The stored summary of request.profile_id() after checking the request.
  absl::StatusOr<std::shared_ptr<const v1::ProfileSummary>> Summary(const v1::BreakdownRequest& request);
  // The section `rows` of the summary, timed as `query`, copied into Response's `out`.
  template <typename Response, typename Rows>
  absl::StatusOr<Response> Section(const char* query, const v1::BreakdownRequest& request,
                                   const Rows& (v1::ProfileSummary::*rows)() const, Rows* (Response::*out)());

  static constexpr size_t kTimelineCacheBytes = size_t{256} << 20;
  static constexpr size_t kSummaryCacheBytes = size_t{128} << 20;
  static constexpr size_t kCollectivesCacheBytes = size_t{64} << 20;
  // A diagnosis holds the profile's events (up to diagnosis::kMaxFactEvents): two at a time.
  static constexpr int kConcurrentDiagnoses = 2;
  static constexpr std::chrono::seconds kDiagnosisWait{30};
  // Building a missing call tree holds a whole trace's events, like a diagnosis.
  static constexpr int kConcurrentTreeBuilds = 2;

  Storage* store_;
  ServerMetrics* metrics_;
  TimelineCache timelines_;
  SummaryCache summaries_;
  ByteLru<jobtrace::ProfileCollectives> collectives_{kCollectivesCacheBytes};
  // Job ops views kept with the ids they summed (job_rollups.h): at most a million ids.
  JobRollups job_rollups_{size_t{1} << 20};
  // Merged call trees kept with the ids they summed (flame graphs of jobs and Pyroscope's).
  Rollups<flame::CallTreeSum> tree_rollups_{size_t{1} << 20};
  ConcurrencySlots diagnoses_{kConcurrentDiagnoses};
  ConcurrencySlots tree_builds_{kConcurrentTreeBuilds};
};

}  // namespace fleetprof
