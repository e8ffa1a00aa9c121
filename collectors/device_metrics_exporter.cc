#include "collectors/device_metrics_exporter.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/label_cap.h"

namespace fleetprof {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Labels;

Family<Gauge>& GaugeFamily(prometheus::Registry& registry, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}

Family<Counter>& CounterFamily(prometheus::Registry& registry, const char* name,
                               const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

Labels With(Labels labels, const std::string& name, std::string value) {
  labels[name] = std::move(value);
  return labels;
}

template <typename T>
void SetIfPresent(SeriesSet<Gauge>& series, const Labels& labels, const std::optional<T>& value) {
  if (value) series.Touch(labels).Set(static_cast<double>(*value));
}

}  // namespace

prometheus::Gauge& CollectorUpGauge(prometheus::Registry& registry, std::string_view collector) {
  return GaugeFamily(registry, "fleetprof_collector_up",
                     "1 while the collector is collecting, 0 when it is off (see the agent log)")
      .Add({{"collector", std::string(collector)}});
}

DeviceMetricsExporter::DeviceMetricsExporter(std::shared_ptr<prometheus::Registry> registry,
                                             std::string node, size_t max_job_series)
    : registry_(std::move(registry)),
      node_(std::move(node)),
      max_job_series_(max_job_series),
      device_info_(GaugeFamily(*registry_, "fleetprof_device_info",
                               "Always 1; labels name each accelerator on the node")),
      device_lost_(GaugeFamily(*registry_, "fleetprof_device_lost",
                               "1 when NVML reports the device lost (GPU_IS_LOST), else 0")),
      memory_used_(GaugeFamily(*registry_, "fleetprof_device_memory_used_bytes",
                               "Device memory in use")),
      memory_free_(GaugeFamily(*registry_, "fleetprof_device_memory_free_bytes",
                               "Device memory free")),
      memory_total_(GaugeFamily(*registry_, "fleetprof_device_memory_total_bytes",
                                "Device memory installed")),
      utilization_(GaugeFamily(*registry_, "fleetprof_device_utilization_ratio",
                               "Share of the last sample period a kernel was running (0-1)")),
      memory_utilization_(GaugeFamily(
          *registry_, "fleetprof_device_memory_utilization_ratio",
          "Share of the last sample period device memory was read or written (0-1)")),
      power_(GaugeFamily(*registry_, "fleetprof_device_power_watts", "Device power draw")),
      temperature_(GaugeFamily(*registry_, "fleetprof_device_temperature_celsius",
                               "Device core temperature")),
      clock_(GaugeFamily(*registry_, "fleetprof_device_clock_hertz",
                         "Current device clock; clock is sm or memory")),
      energy_(CounterFamily(*registry_, "fleetprof_device_energy_joules_total",
                            "Energy used by the device since the agent first saw it")),
      job_device_memory_(GaugeFamily(*registry_, "fleetprof_job_device_memory_used_bytes",
                                     "Device memory used by a job's processes")),
      host_cpu_utilization_(GaugeFamily(*registry_, "fleetprof_host_cpu_utilization_ratio",
                                        "Busy share of all host CPUs since the last sample")),
      host_memory_used_(GaugeFamily(*registry_, "fleetprof_host_memory_used_bytes",
                                    "Host memory not available to new allocations")),
      host_memory_total_(GaugeFamily(*registry_, "fleetprof_host_memory_total_bytes",
                                     "Host memory installed")),
      job_cpu_seconds_(CounterFamily(*registry_, "fleetprof_job_cpu_seconds_total",
                                     "CPU time used by a job's processes on this node")),
      job_resident_memory_(GaugeFamily(*registry_, "fleetprof_job_resident_memory_bytes",
                                       "Resident host memory of a job's processes")) {}

Labels DeviceMetricsExporter::DeviceLabels(const DeviceSample& device) const {
  return {{"node", node_},
          {"device", absl::StrCat(device.index)},
          {"uuid", device.uuid},
          {"model", device.model}};
}

void DeviceMetricsExporter::ExportDevices(const NvmlSnapshot& snapshot) {
  CollectorUpGauge(*registry_, "nvml").Set(snapshot.up ? 1 : 0);
  std::map<std::string, double> job_bytes;  // over all devices: which jobs keep their label
  for (const DeviceSample& device : snapshot.devices) {
    for (const auto& [job, bytes] : device.job_memory_used_bytes) job_bytes[job] += static_cast<double>(bytes);
  }
  kept_device_jobs_ = KeptLabelValues(job_bytes, max_job_series_);
  for (const DeviceSample& device : snapshot.devices) {
    Labels labels = DeviceLabels(device);
    device_lost_.Touch(labels).Set(device.lost ? 1 : 0);
    // A lost device keeps only its lost marker: stale readings would look like live ones.
    if (device.lost) continue;
    device_info_.Touch(labels).Set(1);
    ExportDeviceFields(device, labels);
  }
  for (SeriesSet<Gauge>* series :
       {&device_info_, &device_lost_, &memory_used_, &memory_free_, &memory_total_,
        &utilization_, &memory_utilization_, &power_, &temperature_, &clock_,
        &job_device_memory_}) {
    series->RemoveUntouched();
  }
  energy_.RemoveUntouched();
  std::erase_if(last_energy_millijoules_,
                [this](const auto& item) { return !energy_.Contains(item.first); });
}

void DeviceMetricsExporter::ExportDeviceFields(const DeviceSample& device,
                                               const Labels& labels) {
  SetIfPresent(memory_used_, labels, device.memory_used_bytes);
  SetIfPresent(memory_free_, labels, device.memory_free_bytes);
  SetIfPresent(memory_total_, labels, device.memory_total_bytes);
  SetIfPresent(utilization_, labels, device.utilization_ratio);
  SetIfPresent(memory_utilization_, labels, device.memory_utilization_ratio);
  SetIfPresent(power_, labels, device.power_watts);
  SetIfPresent(temperature_, labels, device.temperature_celsius);
  SetIfPresent(clock_, With(labels, "clock", "sm"), device.sm_clock_hertz);
  SetIfPresent(clock_, With(labels, "clock", "memory"), device.memory_clock_hertz);
  if (device.energy_millijoules) ExportEnergy(*device.energy_millijoules, labels);
  std::map<std::string, double> by_label;  // jobs past the cap add up under "other"
  for (const auto& [job, bytes] : device.job_memory_used_bytes) {
    by_label[CappedLabelValue(kept_device_jobs_, job)] += static_cast<double>(bytes);
  }
  for (const auto& [job, bytes] : by_label) {
    job_device_memory_.Touch({{"job", job}, {"node", node_}, {"device", labels.at("device")}}).Set(bytes);
  }
}

void DeviceMetricsExporter::ExportEnergy(uint64_t millijoules, const Labels& labels) {
  Counter& counter = energy_.Touch(labels);
  auto [last, first_sight] = last_energy_millijoules_.try_emplace(labels, millijoules);
  if (first_sight) return;  // NVML's value is since driver load; we count from here on
  // A smaller value means the driver was reloaded and NVML counts from 0 again.
  uint64_t increase = millijoules >= last->second ? millijoules - last->second : millijoules;
  counter.Increment(static_cast<double>(increase) / 1000.0);
  last->second = millijoules;
}

void DeviceMetricsExporter::ExportHost(const HostSample& sample) {
  CollectorUpGauge(*registry_, "host").Set(sample.up ? 1 : 0);
  const Labels node = {{"node", node_}};
  SetIfPresent(host_cpu_utilization_, node, sample.cpu_utilization_ratio);
  SetIfPresent(host_memory_used_, node, sample.memory_used_bytes);
  SetIfPresent(host_memory_total_, node, sample.memory_total_bytes);
  // Jobs past --max_job_series add up under "other" (the largest CPU users keep their own).
  std::map<std::string, double> cpu_by_job;
  for (const auto& [job, usage] : sample.jobs) cpu_by_job[job] = usage.cpu_seconds_total;
  const std::set<std::string> kept = KeptLabelValues(cpu_by_job, max_job_series_);
  std::map<std::string, std::pair<double, double>> by_label;  // cpu seconds, resident bytes
  for (const auto& [job, usage] : sample.jobs) {
    auto& sums = by_label[CappedLabelValue(kept, job)];
    sums.first += usage.cpu_seconds_total;
    sums.second += static_cast<double>(usage.resident_bytes);
  }
  for (const auto& [job, sums] : by_label) {
    const Labels labels = {{"job", job}, {"node", node_}};
    // The collector keeps the job's total monotonic; the counter follows it. (An "other" made
    // of changing jobs may fall back: the counter then waits until it passes its value again.)
    Counter& cpu = job_cpu_seconds_.Touch(labels);
    if (sums.first > cpu.Value()) cpu.Increment(sums.first - cpu.Value());
    job_resident_memory_.Touch(labels).Set(sums.second);
  }
  for (SeriesSet<Gauge>* series :
       {&host_cpu_utilization_, &host_memory_used_, &host_memory_total_, &job_resident_memory_}) {
    series->RemoveUntouched();
  }
  job_cpu_seconds_.RemoveUntouched();
}

}  // namespace fleetprof
