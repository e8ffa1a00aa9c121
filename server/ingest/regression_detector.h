#pragma once
// Regressions (issue 42, item 4): when a profile of a job is committed, its step time and its
// largest kernels and ops (per step; per second of span without steps) are compared with a
// robust baseline of the job's previous profiles: the median and the MAD of each value over the
// job's last 20 profiles (at least 5). A value above median + 3 scaled MADs (1.4826 x MAD) and
// at least 5% of the median above the baseline's upper quartile makes a regression record (the
// quartile, so that a median of a few noisy profiles sitting low cannot lend a value its 5%). The baseline comes from a compact point per
// profile kept at commit (storage/regression_store.h), never from events. Same inputs (points,
// clock), same records.

#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "fleetprof/v1/profile.pb.h"
#include "fleetprof/v1/regression.pb.h"
#include "server/server_metrics.h"
#include "storage/regression_store.h"

namespace fleetprof {

inline constexpr int kRegressionMinBaseline = 5;
inline constexpr int kRegressionTopNames = 20;    // kernels and ops compared per profile
inline constexpr double kRegressionMadScale = 1.4826;
inline constexpr double kRegressionMads = 3;      // scaled MADs a value must exceed
inline constexpr double kRegressionMinChange = 0.05;

// The values of one profile the detector compares and keeps: step time; the 20 largest kernels
// (total device time) and ops (total time, the op's own span: a slower kernel moves its kernel,
// not the op that launched it), per step or per second of the span.
v1::RegressionPoint RegressionPointOf(const v1::ProfileInfo& info, const v1::ProfileSummary& summary);

// The records `now` makes against `baseline` (the job's previous points, newest first; only
// those in `now`'s unit count, and only the newest 20): none with fewer than 5. A kernel or op
// is judged against the baseline points that have it, at least 5. Records are numbered
// "<profile_id>/<n>" in the order step time, kernels, ops (each by name).
std::vector<v1::Regression> FindRegressions(const std::string& job, const v1::RegressionPoint& now,
                                            const std::vector<v1::RegressionPoint>& baseline, int64_t detected_ns);

class RegressionDetector {
 public:
  // Called with each new record, after it is stored (the webhook); must not block.
  using Notify = std::function<void(const v1::Regression&)>;

  // None of the pointers is owned; `clock` stamps detected_ns.
  RegressionDetector(RegressionStore* store, ServerMetrics* metrics, Clock* clock, Notify notify)
      : store_(store), metrics_(metrics), clock_(clock), notify_(std::move(notify)) {}

  // Runs once `info` is committed: compares it with its job's kept points, stores its records
  // and its own point. A profile without a job is not judged. Returns the records made.
  absl::StatusOr<std::vector<v1::Regression>> Observe(const v1::ProfileInfo& info, const v1::ProfileSummary& summary);

 private:
  RegressionStore* store_;
  ServerMetrics* metrics_;
  Clock* clock_;
  Notify notify_;
  // Orders this process's read-compare-write of a job's points, so two commits of one job
  // do not both miss each other. Nothing reads under it.
  absl::Mutex write_mu_;
};

}  // namespace fleetprof
