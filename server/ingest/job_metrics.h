#pragma once
// Per-job gauges from the latest profile of each job: device busy ratio and peak device
// memory. A job with no new profile for `idle_after` drops out, so cardinality stays bounded
// by the jobs that are actually being profiled.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "fleetprof/v1/profile.pb.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace fleetprof {

class JobMetrics : public prometheus::Collectable {
 public:
  // At most `max_jobs` jobs have series: a new one past it replaces the least recently
  // profiled (ratios and peaks do not add up into an "other"). `clock` times the idleness.
  JobMetrics(const Clock* clock, std::chrono::seconds idle_after, size_t max_jobs = 1000)
      : clock_(clock), idle_after_ns_(std::chrono::nanoseconds(idle_after).count()), max_jobs_(max_jobs) {}

  // Records the summary of a newly stored profile of `job`.
  void Observe(const std::string& job, const v1::ProfileSummary& summary);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  struct Latest {
    double busy_ratio = 0;
    bool has_memory = false;
    double peak_memory_bytes = 0;
    int64_t at_ns = 0;  // the clock's MonotonicNanos
  };
  const Clock* const clock_;
  const int64_t idle_after_ns_;
  const size_t max_jobs_;
  mutable absl::Mutex mu_;
  mutable std::map<std::string, Latest> jobs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fleetprof
