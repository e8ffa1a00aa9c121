#pragma once
// Turns NVML and host samples into Prometheus series (names and units in docs/protocols.md,
// Prometheus names, and the device-metrics issue). Series whose device or job is gone are removed,
// so label cardinality stays bounded by what is on the node now.

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "collectors/host_collector.h"
#include "collectors/nvml_collector.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/labels.h"
#include "prometheus/registry.h"

namespace fleetprof {

// Returns the `fleetprof_collector_up{collector=…}` gauge (1 = collecting, 0 = off), registering
// the family on first use. Any component may call it on the same registry (families merge by
// name), e.g. the Kineto endpoint: CollectorUpGauge(registry, "kineto").Set(0). Thread-safe.
prometheus::Gauge& CollectorUpGauge(prometheus::Registry& registry, std::string_view collector);

// The series of one family that an exporter currently owns. Each round touches the series it
// still has data for; RemoveUntouched() then drops the rest from the family.
template <typename Metric>
class SeriesSet {
 public:
  explicit SeriesSet(prometheus::Family<Metric>& family) : family_(family) {}

  Metric& Touch(const prometheus::Labels& labels) {
    touched_.insert(labels);
    auto it = series_.find(labels);
    if (it == series_.end()) it = series_.emplace(labels, &family_.Add(labels)).first;
    return *it->second;
  }

  bool Contains(const prometheus::Labels& labels) const { return series_.contains(labels); }

  void RemoveUntouched() {
    for (auto it = series_.begin(); it != series_.end();) {
      if (touched_.contains(it->first)) {
        ++it;
      } else {
        family_.Remove(it->second);
        it = series_.erase(it);
      }
    }
    touched_.clear();
  }

 private:
  prometheus::Family<Metric>& family_;
  std::map<prometheus::Labels, Metric*> series_;
  std::set<prometheus::Labels> touched_;
};

class DeviceMetricsExporter {
 public:
  // Registers the families in `registry`. `node` is the value of every series' node label.
  // At most `max_job_series` job label values per family (the rest: job="other").
  DeviceMetricsExporter(std::shared_ptr<prometheus::Registry> registry, std::string node,
                        size_t max_job_series = 100);

  // Publishes one NVML round: sets collector_up{collector="nvml"}, every device field that
  // is present, per-job device memory and fleetprof_device_lost; removes all other device
  // series. Call from one thread (the sampler's).
  void ExportDevices(const NvmlSnapshot& snapshot);

  // Publishes one host round the same way (collector_up{collector="host"}, host and job series).
  void ExportHost(const HostSample& sample);

 private:
  prometheus::Labels DeviceLabels(const DeviceSample& device) const;
  void ExportDeviceFields(const DeviceSample& device, const prometheus::Labels& labels);
  void ExportEnergy(uint64_t millijoules, const prometheus::Labels& labels);

  std::shared_ptr<prometheus::Registry> registry_;
  std::set<std::string> kept_device_jobs_;  // this round's job label values of device memory
  std::string node_;
  size_t max_job_series_;

  SeriesSet<prometheus::Gauge> device_info_;
  SeriesSet<prometheus::Gauge> device_lost_;
  SeriesSet<prometheus::Gauge> memory_used_;
  SeriesSet<prometheus::Gauge> memory_free_;
  SeriesSet<prometheus::Gauge> memory_total_;
  SeriesSet<prometheus::Gauge> utilization_;
  SeriesSet<prometheus::Gauge> memory_utilization_;
  SeriesSet<prometheus::Gauge> power_;
  SeriesSet<prometheus::Gauge> temperature_;
  SeriesSet<prometheus::Gauge> clock_;
  SeriesSet<prometheus::Counter> energy_;
  SeriesSet<prometheus::Gauge> job_device_memory_;
  // NVML's cumulative mJ at the previous round, per energy series.
  std::map<prometheus::Labels, uint64_t> last_energy_millijoules_;

  SeriesSet<prometheus::Gauge> host_cpu_utilization_;
  SeriesSet<prometheus::Gauge> host_memory_used_;
  SeriesSet<prometheus::Gauge> host_memory_total_;
  SeriesSet<prometheus::Counter> job_cpu_seconds_;
  SeriesSet<prometheus::Gauge> job_resident_memory_;
};

}  // namespace fleetprof
