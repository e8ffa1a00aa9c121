#include "server/fleet/fleet_metrics.h"

#include <map>
#include <set>

#include "common/label_cap.h"
#include "prometheus/client_metric.h"

namespace fleetprof {
namespace {

prometheus::MetricFamily Gauge(const char* name, const char* help) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = prometheus::MetricType::Gauge;
  return family;
}

void Add(prometheus::MetricFamily& family, std::vector<prometheus::ClientMetric::Label> labels,
         double value) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  metric.gauge.value = value;
  family.metric.push_back(std::move(metric));
}

}  // namespace

std::vector<prometheus::MetricFamily> FleetMetrics::Collect() const {
  auto used = Gauge("fleetprof_fleet_device_memory_used_bytes", "Device memory in use, per node and device");
  auto total = Gauge("fleetprof_fleet_device_memory_total_bytes", "Device memory size, per node and device");
  auto util = Gauge("fleetprof_fleet_device_utilization_ratio", "Device busy ratio (0-1), per node and device");
  auto jobs = Gauge("fleetprof_fleet_job_device_memory_used_bytes", "Device memory used by a job's processes");
  const auto samples = registry_->DeviceSamples();
  std::map<std::string, double> job_bytes;  // fleet-wide: which jobs keep their label
  for (const auto& [node, devices] : samples) {
    for (const auto& d : devices) {
      for (const auto& [job, bytes] : d.job_memory_used_bytes()) job_bytes[job] += static_cast<double>(bytes);
    }
  }
  const std::set<std::string> kept = KeptLabelValues(job_bytes, max_job_series_);
  for (const auto& [node, devices] : samples) {
    for (const auto& d : devices) {
      std::vector<prometheus::ClientMetric::Label> labels = {
          {"node", node}, {"device", d.device()}, {"uuid", d.uuid()}, {"model", d.model()}};
      Add(used, labels, static_cast<double>(d.memory_used_bytes()));
      Add(total, labels, static_cast<double>(d.memory_total_bytes()));
      if (d.has_utilization()) Add(util, labels, d.utilization_ratio());
      std::map<std::string, double> by_label;  // jobs past the cap add up under "other"
      for (const auto& [job, bytes] : d.job_memory_used_bytes()) {
        by_label[CappedLabelValue(kept, job)] += static_cast<double>(bytes);
      }
      for (const auto& [job, bytes] : by_label) Add(jobs, {{"job", job}, {"node", node}, {"device", d.device()}}, bytes);
    }
  }
  std::vector<prometheus::MetricFamily> out;
  for (auto* family : {&used, &total, &util, &jobs}) {
    if (!family->metric.empty()) out.push_back(std::move(*family));
  }
  return out;
}

}  // namespace fleetprof
