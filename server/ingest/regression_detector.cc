#include "server/ingest/regression_detector.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

// Points keep more names than are compared, so a kernel 20th now and 22nd before still finds
// its baseline.
constexpr int kKeptNames = 2 * kRegressionTopNames;

// The `keep` largest of `totals`, each divided by `per`, into `out`.
void KeepLargest(const std::map<std::string, double>& totals, double per, int keep,
                 google::protobuf::Map<std::string, double>* out) {
  std::vector<std::pair<std::string, double>> rows(totals.begin(), totals.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (static_cast<int>(rows.size()) > keep) rows.resize(keep);
  for (const auto& [name, total] : rows) (*out)[name] = total / per;
}

// The `n` largest names of `values` (ties by name), in name order.
std::vector<std::string> Largest(const google::protobuf::Map<std::string, double>& values, int n) {
  std::vector<std::pair<std::string, double>> rows(values.begin(), values.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (static_cast<int>(rows.size()) > n) rows.resize(n);
  std::vector<std::string> names;
  for (auto& row : rows) names.push_back(std::move(row.first));
  std::sort(names.begin(), names.end());
  return names;
}

// The q-quantile of `values` (not empty), interpolated between the two nearest ranks.
double Quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double rank = q * static_cast<double>(values.size() - 1);
  const size_t below = static_cast<size_t>(rank);
  if (below + 1 >= values.size()) return values.back();
  return values[below] + (rank - static_cast<double>(below)) * (values[below + 1] - values[below]);
}

double Median(std::vector<double> values) { return Quantile(std::move(values), 0.5); }

// One value against its baseline: appends a record when it is past the bound.
struct Judge {
  const std::string& job;
  const v1::RegressionPoint& now;
  int64_t detected_ns;
  std::vector<v1::Regression>* out;

  // `values[i]` belongs to `ids[i]` (both newest first).
  void operator()(const char* what, const std::string& name, double value, const std::vector<double>& values,
                  const std::vector<std::string>& ids) const {
    if (static_cast<int>(values.size()) < kRegressionMinBaseline || value <= 0) return;
    const double median = Median(values);
    if (median <= 0) return;
    std::vector<double> deviations;
    for (double v : values) deviations.push_back(std::fabs(v - median));
    const double scaled_mad = kRegressionMadScale * Median(deviations);
    // The 5% floor is counted from the baseline's upper quartile, not its median: the median of
    // a few noisy profiles is itself off by up to the noise (2% low for 5 draws of +-3%), and
    // that error must not count toward the 5%. A value must be 5% of the median above what a
    // quarter of the baseline already reached.
    const double floor = Quantile(values, 0.75) - median + kRegressionMinChange * median;
    const double bound = std::max(kRegressionMads * scaled_mad, floor);
    if (value - median <= bound) return;
    v1::Regression r;
    r.set_regression_id(absl::StrCat(now.profile_id(), "/", out->size() + 1));
    r.set_job(job);
    r.set_profile_id(now.profile_id());
    r.set_detected_ns(detected_ns);
    r.set_what(what);
    r.set_name(name);
    r.set_baseline_ns(std::llround(median));
    r.set_now_ns(std::llround(value));
    r.set_change((value - median) / median);
    for (auto id = ids.rbegin(); id != ids.rend(); ++id) r.add_baseline_profiles(*id);
    out->push_back(std::move(r));
  }
};

// The baseline values of one name in `which` (kernels or ops) and their profiles.
void ValuesOf(const std::vector<const v1::RegressionPoint*>& baseline, const std::string& name,
              const google::protobuf::Map<std::string, double>& (v1::RegressionPoint::*which)() const,
              std::vector<double>* values, std::vector<std::string>* ids) {
  for (const v1::RegressionPoint* p : baseline) {
    auto it = (p->*which)().find(name);
    if (it == (p->*which)().end()) continue;
    values->push_back(it->second);
    ids->push_back(p->profile_id());
  }
}

}  // namespace

v1::RegressionPoint RegressionPointOf(const v1::ProfileInfo& info, const v1::ProfileSummary& summary) {
  v1::RegressionPoint point;
  point.set_profile_id(info.profile_id());
  point.set_ingested_at_ns(info.ingested_at_ns());
  double per = 0;  // steps, or seconds of span
  if (summary.steps_size() > 0) {
    int64_t total = 0;
    for (const v1::StepStat& s : summary.steps()) total += s.duration_ns();
    point.set_per_step(true);
    per = summary.steps_size();
    point.set_step_ns(static_cast<double>(total) / per);
  } else {
    per = static_cast<double>(summary.end_ns() - summary.start_ns()) / 1e9;
  }
  if (per <= 0) return point;
  std::map<std::string, double> kernels, ops;
  for (const v1::KernelStat& k : summary.kernels()) kernels[k.name()] += static_cast<double>(k.total_ns());
  for (const v1::OpStat& o : summary.ops()) ops[o.name()] += static_cast<double>(o.total_ns());
  KeepLargest(kernels, per, kKeptNames, point.mutable_kernels());
  KeepLargest(ops, per, kKeptNames, point.mutable_ops());
  return point;
}

std::vector<v1::Regression> FindRegressions(const std::string& job, const v1::RegressionPoint& now,
                                            const std::vector<v1::RegressionPoint>& baseline, int64_t detected_ns) {
  std::vector<const v1::RegressionPoint*> same_unit;
  for (const v1::RegressionPoint& p : baseline) {
    if (static_cast<int>(same_unit.size()) == RegressionStore::kMaxPointsPerJob) break;
    if (p.per_step() == now.per_step() && p.profile_id() != now.profile_id()) same_unit.push_back(&p);
  }
  std::vector<v1::Regression> out;
  if (static_cast<int>(same_unit.size()) < kRegressionMinBaseline) return out;
  const Judge judge{job, now, detected_ns, &out};
  if (now.per_step()) {
    std::vector<double> values;
    std::vector<std::string> ids;
    for (const v1::RegressionPoint* p : same_unit) {
      if (p->step_ns() <= 0) continue;
      values.push_back(p->step_ns());
      ids.push_back(p->profile_id());
    }
    judge("step_time", "", now.step_ns(), values, ids);
  }
  for (const std::string& name : Largest(now.kernels(), kRegressionTopNames)) {
    std::vector<double> values;
    std::vector<std::string> ids;
    ValuesOf(same_unit, name, &v1::RegressionPoint::kernels, &values, &ids);
    judge("kernel", name, now.kernels().at(name), values, ids);
  }
  for (const std::string& name : Largest(now.ops(), kRegressionTopNames)) {
    std::vector<double> values;
    std::vector<std::string> ids;
    ValuesOf(same_unit, name, &v1::RegressionPoint::ops, &values, &ids);
    judge("op", name, now.ops().at(name), values, ids);
  }
  return out;
}

absl::StatusOr<std::vector<v1::Regression>> RegressionDetector::Observe(const v1::ProfileInfo& info,
                                                                        const v1::ProfileSummary& summary) {
  if (info.job().empty()) return std::vector<v1::Regression>();
  const v1::RegressionPoint point = RegressionPointOf(info, summary);
  std::vector<v1::Regression> found;
  {
    absl::MutexLock lock(&write_mu_);
    absl::StatusOr<std::vector<v1::RegressionPoint>> baseline =
        store_->RecentPoints(info.job(), RegressionStore::kMaxPointsPerJob);
    if (!baseline.ok()) return baseline.status();
    found = FindRegressions(info.job(), point, *baseline, clock_->Now());
    if (absl::Status s = store_->Add(info.job(), point, found); !s.ok()) return s;
  }
  for (const v1::Regression& r : found) {
    metrics_->RecordRegression(r.job());
    spdlog::warn("regression job={} profile_id={} what={} name={} baseline_ns={} now_ns={} change={:.3f}", r.job(),
                 r.profile_id(), r.what(), r.name(), r.baseline_ns(), r.now_ns(), r.change());
    if (notify_) notify_(r);
  }
  return found;
}

}  // namespace fleetprof
