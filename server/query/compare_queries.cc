// QueryApi's views across profiles: fetch from the store, then compare/ and diagnosis/.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compare/job_views.h"
#include "compare/profile_diff.h"
#include "diagnosis/profile_facts.h"
#include "diagnosis/rules.h"
#include "server/query/query_timer.h"
#include "server/query/query_api.h"

namespace fleetprof {

absl::StatusOr<v1::DiffResponse> QueryApi::Diff(const v1::DiffRequest& request) {
  QueryTimer timer(metrics_, "Diff");
  auto by = compare::ParseDiffBy(request.by());
  if (!by.ok()) return by.status();
  // The baseline given apart goes first (the HTTP API's ?base=).
  std::vector<std::string> ids;
  if (!request.base_profile_id().empty()) ids.push_back(request.base_profile_id());
  ids.insert(ids.end(), request.profile_ids().begin(), request.profile_ids().end());
  const int n = static_cast<int>(ids.size());
  if (n < compare::kMinDiffProfiles || n > compare::kMaxDiffProfiles) {
    return absl::InvalidArgumentError(absl::StrCat("a diff takes ", compare::kMinDiffProfiles, " to ",
                                                   compare::kMaxDiffProfiles,
                                                   " profiles (the first is the baseline), not ", n));
  }
  std::vector<std::shared_ptr<const v1::ProfileSummary>> summaries;  // keep the inputs alive
  std::vector<compare::DiffInput> inputs;
  for (int i = 0; i < n; ++i) {
    const std::string& id = ids[i];
    if (id.empty()) return absl::InvalidArgumentError("a profile id of the diff is empty");
    auto summary = summaries_.Get(id);
    if (!summary.ok()) return summary.status();
    summaries.push_back(*summary);
    inputs.push_back(compare::DiffInput{id, summaries.back().get()});
  }
  return compare::DiffProfiles(inputs, *by, request.limit());
}

absl::Status QueryApi::ForEachJobProfile(const v1::JobRequest& request,
                                         const std::function<absl::Status(const v1::ProfileInfo&)>& visit) {
  if (request.job().empty()) return absl::InvalidArgumentError("job is required");
  if (request.since_ns() < 0 || request.until_ns() < 0) {
    return absl::InvalidArgumentError("time bounds must not be negative");
  }
  v1::ListProfilesRequest list;
  list.set_job(request.job());
  *list.mutable_labels() = request.labels();
  list.set_start_after_ns(request.since_ns());
  list.set_end_before_ns(request.until_ns());
  return ForEachListed(list, kMaxJobProfiles,
                       absl::StrCat("job ", request.job(), " has more than ", kMaxJobProfiles,
                                    " matching profiles; narrow it with since_ns/until_ns or a label"),
                       visit);
}

absl::StatusOr<v1::JobOpsResponse> QueryApi::JobOps(const v1::JobRequest& request) {
  QueryTimer timer(metrics_, "JobOps");
  std::vector<std::string> ids;
  absl::Status s = ForEachJobProfile(request, [&](const v1::ProfileInfo& info) {
    ids.push_back(info.profile_id());
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return job_rollups_.Sum(JobRollups::Key(request), ids, [this](const std::string& id, compare::JobOpsSum* sum) {
    auto summary = summaries_.GetListed(id);
    if (!summary.ok()) return summary.status();
    sum->Add(**summary);
    return absl::OkStatus();
  });
}

absl::StatusOr<v1::JobSeriesResponse> QueryApi::JobSeries(const v1::JobRequest& request) {
  QueryTimer timer(metrics_, "JobSeries");
  v1::JobSeriesResponse response;
  response.set_job(request.job());
  absl::Status s = ForEachJobProfile(request, [&](const v1::ProfileInfo& info) {
    auto summary = summaries_.GetListed(info.profile_id());
    if (!summary.ok()) return summary.status();
    *response.add_points() = compare::JobPoint(info, **summary);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  auto* points = response.mutable_points();
  std::stable_sort(points->begin(), points->end(), [](const v1::JobProfilePoint& a, const v1::JobProfilePoint& b) {
    return a.ingested_at_ns() < b.ingested_at_ns();
  });
  return response;
}

absl::StatusOr<v1::DiagnoseResponse> QueryApi::Diagnose(const v1::DiagnoseRequest& request) {
  QueryTimer timer(metrics_, "Diagnose");
  const bool job = !request.job().empty();
  if (job == !request.profile_id().empty()) {
    return absl::InvalidArgumentError("diagnose takes a profile_id or a job, not both or neither");
  }
  const auto scope = job ? diagnosis::RuleScope::kJob : diagnosis::RuleScope::kProfile;
  auto thresholds = diagnosis::ResolveThresholds(scope, request.thresholds());
  if (!thresholds.ok()) return thresholds.status();
  absl::StatusOr<v1::DiagnoseResponse> response =
      job ? JobDiagnosis(request, *thresholds) : ProfileDiagnosis(request, *thresholds);
  if (!response.ok()) return response.status();
  diagnosis::DescribeRules(scope, *thresholds, &*response);
  return response;
}

absl::StatusOr<v1::DiagnoseResponse> QueryApi::JobDiagnosis(const v1::DiagnoseRequest& request,
                                                            const std::map<std::string, double>& thresholds) {
  v1::JobRequest job_request;
  job_request.set_job(request.job());
  *job_request.mutable_labels() = request.labels();
  job_request.set_since_ns(request.since_ns());
  job_request.set_until_ns(request.until_ns());
  auto series = JobSeries(job_request);
  if (!series.ok()) return series.status();
  diagnosis::JobFacts facts;
  facts.points.assign(series->points().begin(), series->points().end());
  absl::StatusOr<std::vector<std::string>> capture_ids = LateRankProfiles(job_request, facts.points);
  if (!capture_ids.ok()) return capture_ids.status();
  absl::StatusOr<v1::JobCollectivesResponse> collectives;
  if (capture_ids->size() >= 2 && capture_ids->size() <= static_cast<size_t>(kMaxJobTraceProfiles)) {
    v1::JobCollectivesRequest c;
    c.set_job(request.job());
    for (const std::string& id : *capture_ids) c.add_profile_ids(id);
    collectives = JobCollectives(c);
    // A profile without an event store cannot say when its collectives ran: the rule then
    // has nothing to judge, and the other rules still answer.
    if (collectives.ok()) facts.collectives = &*collectives;
  }
  v1::DiagnoseResponse response;
  for (v1::Finding& f : diagnosis::DiagnoseJob(facts, thresholds)) *response.add_findings() = std::move(f);
  response.set_job(request.job());
  return response;
}

// late_rank reads the collectives of one coherent set of ranks: the newest capture among the
// selected profiles, else each rank's newest profile.
absl::StatusOr<std::vector<std::string>> QueryApi::LateRankProfiles(
    const v1::JobRequest& job_request, const std::vector<v1::JobProfilePoint>& points) {
  std::string capture;
  std::vector<std::string> capture_ids;
  absl::Status listed = ForEachJobProfile(job_request, [&](const v1::ProfileInfo& info) {
    auto label = info.labels().find("capture_id");
    if (label == info.labels().end()) return absl::OkStatus();
    if (capture.empty()) capture = label->second;
    if (label->second == capture) capture_ids.push_back(info.profile_id());
    return absl::OkStatus();
  });
  if (!listed.ok()) return listed;
  if (capture_ids.empty()) {
    std::map<std::string, const v1::JobProfilePoint*> newest;
    for (const v1::JobProfilePoint& p : points) {
      if (p.rank().empty()) continue;
      const v1::JobProfilePoint*& slot = newest[p.rank()];
      if (slot == nullptr || p.ingested_at_ns() > slot->ingested_at_ns()) slot = &p;
    }
    for (const auto& [rank, p] : newest) capture_ids.push_back(p->profile_id());
  }
  return capture_ids;
}

absl::StatusOr<v1::DiagnoseResponse> QueryApi::ProfileDiagnosis(const v1::DiagnoseRequest& request,
                                                                const std::map<std::string, double>& thresholds) {
  auto summary = summaries_.Get(request.profile_id());
  if (!summary.ok()) return summary.status();
  ConcurrencySlots::Held slot(&diagnoses_, kDiagnosisWait);
  if (!slot.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat(kConcurrentDiagnoses, " diagnoses are running and none ended in ",
                                                     kDiagnosisWait.count(), " s; try again"));
  }
  v1::DiagnoseResponse response;
  absl::StatusOr<diagnosis::ProfileFacts> facts;
  auto timeline = timelines_.Get(request.profile_id());
  if (timeline.ok()) {
    std::unique_ptr<timeline::TimelineReader> reader = store_->events().NewReader(request.profile_id());
    facts = diagnosis::ReadProfileFacts(request.profile_id(), **summary, *timeline, *reader);
  } else if (absl::IsNotFound(timeline.status())) {
    // Ingested before the event store: the rules that read only the summary still run.
    facts = diagnosis::SummaryOnlyFacts(request.profile_id(), **summary);
    response.set_note(absl::StrCat("profile ", request.profile_id(),
                                   " has no stored events (ingested before the event store): only the rules "
                                   "that read its summary (device_idle, memory_pressure) could judge it; upload "
                                   "its file again for the others"));
  } else {
    return timeline.status();
  }
  if (!facts.ok()) return facts.status();
  if (auto regressions = ProfileRegressions(request.profile_id()); regressions.ok()) {
    facts->regressions = *std::move(regressions);
  } else {
    return regressions.status();
  }
  for (v1::Finding& f : diagnosis::DiagnoseProfile(*facts, thresholds)) *response.add_findings() = std::move(f);
  response.set_profile_id(request.profile_id());
  if (facts->truncated) {
    response.set_note(absl::StrCat("the profile has more than ", diagnosis::kMaxFactEvents,
                                   " events; rules that read events saw the first ", diagnosis::kMaxFactEvents,
                                   " only"));
  }
  return response;
}

}  // namespace fleetprof
