// QueryApi's face for Pyroscope's query API (querier.v1): Grafana's core Pyroscope data source
// lists profile types and labels, and asks for merged flame graphs and series. Profiles are
// selected by label selectors and ingest time; their trees are summed as a job's flame graph is.
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/checked_math.h"
#include "flame/flame_graph.h"
#include "server/query/pyroscope_labels.h"
#include "server/query/query_api.h"
#include "server/query/query_timer.h"

namespace fleetprof {
namespace {

constexpr int64_t kNsPerMs = 1000000;
constexpr double kMaxStepSeconds = 100.0 * 365 * 86400;  // a century: beyond, no bucket is smaller

// The one job every selector requires (service_name= or job=), so the listing reads one job's
// index; empty when they do not agree on one.
std::string JobOfSelectors(const std::vector<LabelSelector>& selectors) {
  std::string job;
  for (const LabelSelector& selector : selectors) {
    const std::string* required = selector.RequiredValue("service_name");
    if (required == nullptr) required = selector.RequiredValue("job");
    if (required == nullptr || (!job.empty() && job != *required)) return "";
    job = *required;
  }
  return job;
}

absl::Status CheckTimeRange(int64_t start_ms, int64_t end_ms) {
  if (start_ms < 0 || end_ms < 0) return absl::InvalidArgumentError("start and end must not be negative");
  if (end_ms != 0 && end_ms < start_ms) return absl::InvalidArgumentError("end is before start");
  return absl::OkStatus();
}

}  // namespace

absl::Status QueryApi::ForEachSelected(
    const std::vector<LabelSelector>& selectors, int64_t start_ms, int64_t end_ms,
    const std::function<absl::Status(const v1::ProfileInfo&, const LabelSet&)>& visit) {
  if (absl::Status range = CheckTimeRange(start_ms, end_ms); !range.ok()) return range;
  const int64_t start_ns = start_ms > INT64_MAX / kNsPerMs ? INT64_MAX : start_ms * kNsPerMs;
  const int64_t end_ns = end_ms == 0 || end_ms > INT64_MAX / kNsPerMs ? INT64_MAX : end_ms * kNsPerMs;
  const auto consider = [&](const v1::ProfileInfo& info) {
    const LabelSet labels = PyroscopeLabels(info);
    const bool selected = selectors.empty() || std::any_of(selectors.begin(), selectors.end(),
                                                           [&](const LabelSelector& s) { return s.Matches(labels); });
    return selected ? visit(info, labels) : absl::OkStatus();
  };
  // One profile by its id (Grafana's query for one profile) is one read, not a listing.
  if (const std::string* id = selectors.size() == 1 ? selectors[0].RequiredValue("profile_id") : nullptr) {
    absl::StatusOr<v1::ProfileInfo> info = store_->profiles().Get(*id);
    if (absl::IsNotFound(info.status())) return absl::OkStatus();
    if (!info.ok()) return info.status();
    if (info->ingested_at_ns() < start_ns || info->ingested_at_ns() > end_ns) return absl::OkStatus();
    return consider(*info);
  }
  v1::ListProfilesRequest list;
  list.set_job(JobOfSelectors(selectors));
  // The listing is newest ingest first: the first profile older than start ends the walk.
  bool past_start = false;
  absl::Status s = ForEachListed(
      list, kMaxListedProfiles,
      absl::StrCat("more than ", kMaxListedProfiles, " profiles to look at; narrow the time range or select a job"),
      [&](const v1::ProfileInfo& info) {
        if (info.ingested_at_ns() < start_ns) {
          past_start = true;
          return absl::CancelledError("older than the time range");
        }
        return info.ingested_at_ns() > end_ns ? absl::OkStatus() : consider(info);
      });
  return past_start && absl::IsCancelled(s) ? absl::OkStatus() : s;
}

absl::StatusOr<int64_t> QueryApi::CallTreeTotalOf(const std::string& profile_id, flame::FlameValue value) {
  auto summary = summaries_.GetListed(profile_id);
  if (!summary.ok()) return summary.status();
  // The stored tree's column of that value, summed as it lies: no names to decode.
  const v1::CallTree& stored = (*summary)->call_tree();
  if (stored.name_size() > 0) {
    const auto& column = value == flame::FlameValue::kDeviceNs     ? stored.device_ns()
                         : value == flame::FlameValue::kHostSelfNs ? stored.host_self_ns()
                                                                   : stored.count();
    int64_t total = 0;
    for (int64_t v : column) total = SaturatingAdd(total, v);
    return total;
  }
  auto tree = CallTreeOf(profile_id);  // stored before trees existed: built once, then kept
  if (!tree.ok()) return tree.status();
  return flame::CallTreeTotal(*tree, value);
}

absl::StatusOr<querier::v1::ProfileTypesResponse> QueryApi::ProfileTypes(const querier::v1::ProfileTypesRequest&) {
  querier::v1::ProfileTypesResponse response;
  for (types::v1::ProfileType& type : PyroscopeProfileTypes()) *response.add_profile_types() = std::move(type);
  return response;
}

absl::StatusOr<types::v1::LabelNamesResponse> QueryApi::LabelNames(const types::v1::LabelNamesRequest& request) {
  QueryTimer timer(metrics_, "LabelNames");
  auto selectors = ParseLabelSelectors({request.matchers().begin(), request.matchers().end()});
  if (!selectors.ok()) return selectors.status();
  std::set<std::string> names;
  absl::Status s = ForEachSelected(*selectors, request.start(), request.end(), [&](const auto&, const LabelSet& labels) {
    for (const auto& [name, value] : labels) names.insert(name);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  types::v1::LabelNamesResponse response;
  for (const std::string& name : names) response.add_names(name);
  return response;
}

absl::StatusOr<types::v1::LabelValuesResponse> QueryApi::LabelValues(const types::v1::LabelValuesRequest& request) {
  QueryTimer timer(metrics_, "LabelValues");
  if (!IsLabelName(request.name())) {
    return absl::InvalidArgumentError(absl::StrCat("'", request.name(), "' is not a label name"));
  }
  auto selectors = ParseLabelSelectors({request.matchers().begin(), request.matchers().end()});
  if (!selectors.ok()) return selectors.status();
  std::set<std::string> values;
  absl::Status s = ForEachSelected(*selectors, request.start(), request.end(), [&](const auto&, const LabelSet& labels) {
    for (const auto& [name, value] : labels) {
      if (name == request.name() && !value.empty()) values.insert(value);
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  types::v1::LabelValuesResponse response;
  for (const std::string& value : values) response.add_names(value);
  return response;
}

absl::StatusOr<querier::v1::SelectMergeStacktracesResponse> QueryApi::SelectMergeStacktraces(
    const querier::v1::SelectMergeStacktracesRequest& request) {
  QueryTimer timer(metrics_, "SelectMergeStacktraces");
  auto value = FlameValueOfProfileType(request.profile_typeid());
  if (!value.ok()) return value.status();
  auto selector = LabelSelector::Parse(request.label_selector());
  if (!selector.ok()) return selector.status();
  if (request.has_max_nodes() && request.max_nodes() < 0) return absl::InvalidArgumentError("max_nodes must not be negative");
  std::vector<std::string> ids;
  absl::Status s = ForEachSelected({*selector}, request.start(), request.end(), [&](const v1::ProfileInfo& info, const auto&) {
    if (ids.size() >= static_cast<size_t>(kMaxJobProfiles)) {
      return absl::ResourceExhaustedError(absl::StrCat("more than ", kMaxJobProfiles,
                                                       " profiles selected; narrow the time range or the selector"));
    }
    ids.push_back(info.profile_id());
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  // The selector is the rollup's key: Grafana's range moves at every refresh, the ids decide.
  auto tree = SumCallTrees(absl::StrCat("pyroscope ", request.label_selector()), ids);
  if (!tree.ok()) return tree.status();
  querier::v1::SelectMergeStacktracesResponse response;
  *response.mutable_flamegraph() = flame::RenderFlameGraph(*tree, *value, request.max_nodes());
  return response;
}

absl::StatusOr<querier::v1::SelectSeriesResponse> QueryApi::SelectSeries(const querier::v1::SelectSeriesRequest& request) {
  QueryTimer timer(metrics_, "SelectSeries");
  auto value = FlameValueOfProfileType(request.profile_typeid());
  if (!value.ok()) return value.status();
  auto selector = LabelSelector::Parse(request.label_selector());
  if (!selector.ok()) return selector.status();
  if (!(request.step() >= 0 && request.step() <= kMaxStepSeconds)) {
    return absl::InvalidArgumentError(absl::StrCat("step must be a number of seconds from 0 to ", kMaxStepSeconds));
  }
  const int64_t step_ms = static_cast<int64_t>(request.step() * 1000);
  const bool average = request.aggregation() == types::v1::TIME_SERIES_AGGREGATION_TYPE_AVERAGE;
  struct Bucket {
    double sum = 0;
    int64_t n = 0;
  };
  // Group (the group_by labels a profile has) -> timestamp -> bucket.
  std::map<LabelSet, std::map<int64_t, Bucket>> groups;
  absl::Status s = ForEachSelected({*selector}, request.start(), request.end(), [&](const v1::ProfileInfo& info,
                                                                                   const LabelSet& labels) {
    LabelSet group;
    for (const std::string& name : request.group_by()) {
      for (const auto& label : labels) {
        if (label.first == name) group.push_back(label);
      }
    }
    auto total = CallTreeTotalOf(info.profile_id(), *value);
    if (!total.ok()) return total.status();
    int64_t t = info.ingested_at_ns() / kNsPerMs;
    if (step_ms > 0) t = request.start() + (t - request.start()) / step_ms * step_ms;
    Bucket& bucket = groups[group][t];
    bucket.sum += static_cast<double>(*total);
    ++bucket.n;
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  std::vector<std::pair<double, types::v1::Series>> series;
  for (const auto& [group, points] : groups) {
    types::v1::Series one;
    for (const auto& [name, label_value] : group) {
      types::v1::LabelPair* pair = one.add_labels();
      pair->set_name(name);
      pair->set_value(label_value);
    }
    double total = 0;
    for (const auto& [t, bucket] : points) {
      types::v1::Point* point = one.add_points();
      point->set_timestamp(t);
      point->set_value(average ? bucket.sum / static_cast<double>(bucket.n) : bucket.sum);
      total += bucket.sum;
    }
    series.emplace_back(total, std::move(one));
  }
  if (request.has_limit() && request.limit() > 0 && static_cast<int64_t>(series.size()) > request.limit()) {
    std::stable_sort(series.begin(), series.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    series.resize(static_cast<size_t>(request.limit()));
  }
  querier::v1::SelectSeriesResponse response;
  for (auto& [total, one] : series) *response.add_series() = std::move(one);
  return response;
}

}  // namespace fleetprof
