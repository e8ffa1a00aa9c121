#include "server/ingest/job_metrics.h"

#include <algorithm>

#include "prometheus/client_metric.h"

namespace fleetprof {

void JobMetrics::Observe(const std::string& job, const v1::ProfileSummary& summary) {
  int64_t busy = 0, span = 0, peak = 0;
  for (const auto& d : summary.devices()) {
    busy += d.busy_ns();
    span += d.span_ns();
  }
  for (const auto& m : summary.memory()) peak = std::max(peak, m.peak_bytes());
  absl::MutexLock lock(&mu_);
  if (!jobs_.contains(job) && jobs_.size() >= max_jobs_ && max_jobs_ > 0) {
    auto oldest = std::min_element(jobs_.begin(), jobs_.end(),
                                   [](const auto& a, const auto& b) { return a.second.at_ns < b.second.at_ns; });
    jobs_.erase(oldest);
  }
  Latest& latest = jobs_[job];
  latest.busy_ratio = span > 0 ? static_cast<double>(busy) / static_cast<double>(span) : 0;
  latest.has_memory = summary.memory_size() > 0;
  latest.peak_memory_bytes = static_cast<double>(peak);
  latest.at_ns = clock_->MonotonicNanos();
}

std::vector<prometheus::MetricFamily> JobMetrics::Collect() const {
  prometheus::MetricFamily busy;
  busy.name = "fleetprof_job_profile_device_busy_ratio";
  busy.help = "Device busy time over span (all devices) in the job's latest profile";
  busy.type = prometheus::MetricType::Gauge;
  prometheus::MetricFamily memory;
  memory.name = "fleetprof_job_profile_peak_memory_bytes";
  memory.help = "Peak device memory allocated in the job's latest profile";
  memory.type = prometheus::MetricType::Gauge;
  const int64_t now = clock_->MonotonicNanos();
  absl::MutexLock lock(&mu_);
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (now - it->second.at_ns > idle_after_ns_) {
      it = jobs_.erase(it);
      continue;
    }
    prometheus::ClientMetric m;
    m.label = {{"job", it->first}};
    m.gauge.value = it->second.busy_ratio;
    busy.metric.push_back(m);
    if (it->second.has_memory) {
      m.gauge.value = it->second.peak_memory_bytes;
      memory.metric.push_back(m);
    }
    ++it;
  }
  std::vector<prometheus::MetricFamily> out;
  if (!busy.metric.empty()) out.push_back(std::move(busy));
  if (!memory.metric.empty()) out.push_back(std::move(memory));
  return out;
}

}  // namespace fleetprof
