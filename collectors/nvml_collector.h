#pragma once
// Device metrics from NVML, loaded at run time so that one agent binary runs on GPU nodes,
// TPU/Trainium nodes and laptops alike (docs/protocols.md, NVML).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "collectors/job_owners.h"
#include "collectors/nvml_api.h"

namespace fleetprof {

// One device at one instant, in base units. A field NVML does not support on this device
// (or could not read) is nullopt, so it is left out of the exposition rather than shown as 0.
struct DeviceSample {
  unsigned int index = 0;
  std::string uuid;   // "GPU-…"; empty if never read
  std::string model;  // nvmlDeviceGetName
  // NVML answered GPU_IS_LOST: the device fell off the bus or hung. No fields are set.
  bool lost = false;

  std::optional<uint64_t> memory_used_bytes;
  std::optional<uint64_t> memory_free_bytes;
  std::optional<uint64_t> memory_total_bytes;
  std::optional<double> utilization_ratio;         // 0–1
  std::optional<double> memory_utilization_ratio;  // 0–1, memory controller busy time
  std::optional<double> power_watts;
  std::optional<double> temperature_celsius;
  std::optional<double> sm_clock_hertz;
  std::optional<double> memory_clock_hertz;
  // Energy since the driver loaded. The exporter turns its increase into a counter.
  std::optional<uint64_t> energy_millijoules;

  // Device memory of compute processes summed per job (FLEETPROF_JOB, else kUnassignedJob).
  // Pids are folded away here on purpose: they are unbounded label values.
  std::map<std::string, uint64_t> job_memory_used_bytes;
};

struct NvmlSnapshot {
  // False when the library or driver is missing; `devices` is then empty.
  bool up = false;
  std::vector<DeviceSample> devices;
};

class NvmlCollector {
 public:
  struct Options {
    // Passed to dlopen: a bare soname searches the loader path, a path with '/' is used as
    // is, and an empty one turns the collector off.
    std::string library_path = "libnvidia-ml.so.1";
    // Where /proc/<pid>/environ is read to attribute device memory to jobs.
    std::string proc_root = "/proc";
    // Who holds each job name (collectors/job_owners.h): device memory of a process of
    // another uid naming a held job counts as unassigned. None: names are taken as they say.
    std::shared_ptr<JobOwners> job_owners;
  };

  explicit NvmlCollector(Options options);
  // Shuts NVML down and unloads the library.
  ~NvmlCollector();
  NvmlCollector(const NvmlCollector&) = delete;
  NvmlCollector& operator=(const NvmlCollector&) = delete;

  // Loads the library and initializes NVML. On failure (no library, no driver, a symbol
  // missing) the collector is off for its lifetime: the reason is logged once and returned.
  // REQUIRES: called at most once, before Sample().
  absl::Status Start();

  // True between a successful Start() and the driver going away.
  bool up() const { return up_; }

  // Reads every device once. A lost device is reported with `lost` set and sampling goes on
  // with the others. If NVML says the driver is gone, the collector turns off (logged once).
  // Not thread-safe: one sampling thread owns the collector.
  NvmlSnapshot Sample();

 private:
  // Entry points resolved with dlsym. The first four are required; a missing optional one
  // reads as NOT_SUPPORTED, which is how older drivers behave for newer fields.
  struct Api {
    nvml::InitFn init = nullptr;
    nvml::ShutdownFn shutdown = nullptr;
    nvml::DeviceGetCountFn get_count = nullptr;
    nvml::DeviceGetHandleByIndexFn get_handle_by_index = nullptr;
    nvml::ErrorStringFn error_string = nullptr;
    nvml::DeviceGetStringFn get_uuid = nullptr;
    nvml::DeviceGetStringFn get_name = nullptr;
    nvml::DeviceGetMemoryInfoFn get_memory_info = nullptr;
    nvml::DeviceGetUtilizationRatesFn get_utilization_rates = nullptr;
    nvml::DeviceGetPowerUsageFn get_power_usage = nullptr;
    nvml::DeviceGetTemperatureFn get_temperature = nullptr;
    nvml::DeviceGetClockInfoFn get_clock_info = nullptr;
    nvml::DeviceGetTotalEnergyConsumptionFn get_total_energy = nullptr;
    nvml::DeviceGetComputeRunningProcessesFn get_compute_processes = nullptr;
  };
  // What we remember of a device across samples, so a lost one can still be named.
  struct Identity {
    std::string uuid;
    std::string model;
  };
  using FieldReader = nvml::Return (NvmlCollector::*)(nvml::Device, DeviceSample&);

  absl::Status LoadLibrary();
  absl::Status TurnOff(absl::Status reason);
  std::string ErrorText(nvml::Return result) const;

  DeviceSample SampleDevice(unsigned int index);
  DeviceSample LostDevice(unsigned int index);
  void ReportUnexpected(unsigned int index, std::string_view field, nvml::Return result);

  nvml::Return ReadIdentity(nvml::Device device, DeviceSample& sample);
  nvml::Return ReadMemory(nvml::Device device, DeviceSample& sample);
  nvml::Return ReadUtilization(nvml::Device device, DeviceSample& sample);
  nvml::Return ReadPower(nvml::Device device, DeviceSample& sample);
  nvml::Return ReadTemperature(nvml::Device device, DeviceSample& sample);
  nvml::Return ReadSmClock(nvml::Device device, DeviceSample& sample);
  nvml::Return ReadMemoryClock(nvml::Device device, DeviceSample& sample);
  nvml::Return ReadEnergy(nvml::Device device, DeviceSample& sample);
  nvml::Return ReadJobMemory(nvml::Device device, DeviceSample& sample);

  Options options_;
  void* library_ = nullptr;
  Api api_;
  bool initialized_ = false;  // nvmlInit_v2 succeeded, so nvmlShutdown is owed
  bool up_ = false;
  bool turned_off_ = false;   // the one "device metrics are off" line was logged
  std::map<unsigned int, Identity> identities_;
  std::set<unsigned int> lost_devices_;                             // logged as lost
  std::set<std::pair<unsigned int, std::string>> reported_errors_;  // logged once each
  // Reused across samples; grows when NVML answers INSUFFICIENT_SIZE.
  std::vector<nvml::ProcessInfo> processes_;
};

}  // namespace fleetprof
