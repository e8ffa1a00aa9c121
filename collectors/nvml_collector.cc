#include "collectors/nvml_collector.h"

#include <dlfcn.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "collectors/process_jobs.h"
#include "common/safe_paths.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

// Room for processes that start between NVML's size answer and our retry.
constexpr unsigned int kInitialProcessCapacity = 16;
constexpr int kProcessQueryAttempts = 4;

template <typename Fn>
Fn Resolve(void* library, const char* symbol) {
  return reinterpret_cast<Fn>(::dlsym(library, symbol));
}

// NVML fills fixed-size char buffers; guard against a missing terminator anyway.
std::string FromBuffer(const char* buffer, size_t size) {
  size_t length = 0;
  while (length < size && buffer[length] != '\0') ++length;
  return std::string(buffer, length);
}

bool TurnsCollectorOff(nvml::Return result) {
  return result == nvml::kErrorDriverNotLoaded || result == nvml::kErrorLibraryNotFound;
}

}  // namespace

NvmlCollector::NvmlCollector(Options options) : options_(std::move(options)) {}

NvmlCollector::~NvmlCollector() {
  if (initialized_) api_.shutdown();
  if (library_ != nullptr) ::dlclose(library_);
}

absl::Status NvmlCollector::Start() {
  if (absl::Status loaded = LoadLibrary(); !loaded.ok()) return TurnOff(loaded);
  nvml::Return result = api_.init();
  if (result != nvml::kSuccess) {
    return TurnOff(absl::UnavailableError(
        absl::StrCat("nvmlInit_v2 failed: ", ErrorText(result), " (", result, ")")));
  }
  initialized_ = true;
  up_ = true;
  spdlog::info("nvml: loaded {}", options_.library_path);
  return absl::OkStatus();
}

absl::Status NvmlCollector::LoadLibrary() {
  // dlopen("") would hand back the main program, so an empty path has to mean "off".
  if (options_.library_path.empty()) return absl::CancelledError("disabled (empty library path)");
  library_ = ::dlopen(options_.library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    const char* why = ::dlerror();
    return absl::NotFoundError(absl::StrCat("cannot load ", options_.library_path, ": ",
                                            why != nullptr ? why : "unknown error"));
  }
  api_.init = Resolve<nvml::InitFn>(library_, "nvmlInit_v2");
  api_.shutdown = Resolve<nvml::ShutdownFn>(library_, "nvmlShutdown");
  api_.get_count = Resolve<nvml::DeviceGetCountFn>(library_, "nvmlDeviceGetCount_v2");
  api_.get_handle_by_index =
      Resolve<nvml::DeviceGetHandleByIndexFn>(library_, "nvmlDeviceGetHandleByIndex_v2");
  const std::pair<const char*, bool> required[] = {
      {"nvmlInit_v2", api_.init != nullptr},
      {"nvmlShutdown", api_.shutdown != nullptr},
      {"nvmlDeviceGetCount_v2", api_.get_count != nullptr},
      {"nvmlDeviceGetHandleByIndex_v2", api_.get_handle_by_index != nullptr},
  };
  for (const auto& [symbol, found] : required) {
    if (!found) {
      return absl::FailedPreconditionError(
          absl::StrCat(options_.library_path, " has no symbol ", symbol, " (driver too old?)"));
    }
  }
  api_.error_string = Resolve<nvml::ErrorStringFn>(library_, "nvmlErrorString");
  api_.get_uuid = Resolve<nvml::DeviceGetStringFn>(library_, "nvmlDeviceGetUUID");
  api_.get_name = Resolve<nvml::DeviceGetStringFn>(library_, "nvmlDeviceGetName");
  api_.get_memory_info = Resolve<nvml::DeviceGetMemoryInfoFn>(library_, "nvmlDeviceGetMemoryInfo");
  api_.get_utilization_rates =
      Resolve<nvml::DeviceGetUtilizationRatesFn>(library_, "nvmlDeviceGetUtilizationRates");
  api_.get_power_usage = Resolve<nvml::DeviceGetPowerUsageFn>(library_, "nvmlDeviceGetPowerUsage");
  api_.get_temperature =
      Resolve<nvml::DeviceGetTemperatureFn>(library_, "nvmlDeviceGetTemperature");
  api_.get_clock_info = Resolve<nvml::DeviceGetClockInfoFn>(library_, "nvmlDeviceGetClockInfo");
  api_.get_total_energy = Resolve<nvml::DeviceGetTotalEnergyConsumptionFn>(
      library_, "nvmlDeviceGetTotalEnergyConsumption");
  api_.get_compute_processes = Resolve<nvml::DeviceGetComputeRunningProcessesFn>(
      library_, "nvmlDeviceGetComputeRunningProcesses_v3");
  return absl::OkStatus();
}

absl::Status NvmlCollector::TurnOff(absl::Status reason) {
  up_ = false;
  if (!turned_off_) {
    turned_off_ = true;
    spdlog::warn("nvml: {}; device metrics are off", std::string(reason.message()));
  }
  return reason;
}

std::string NvmlCollector::ErrorText(nvml::Return result) const {
  if (api_.error_string != nullptr) {
    if (const char* text = api_.error_string(result); text != nullptr) return text;
  }
  return absl::StrCat("NVML error ", result);
}

NvmlSnapshot NvmlCollector::Sample() {
  NvmlSnapshot snapshot;
  if (!up_) return snapshot;
  unsigned int count = 0;
  nvml::Return result = api_.get_count(&count);
  if (TurnsCollectorOff(result)) {
    TurnOff(absl::UnavailableError(absl::StrCat("driver went away: ", ErrorText(result))))
        .IgnoreError();
    return snapshot;
  }
  snapshot.up = true;
  if (result != nvml::kSuccess) {
    ReportUnexpected(~0u, "device count", result);
    return snapshot;
  }
  for (unsigned int index = 0; index < count; ++index) {
    snapshot.devices.push_back(SampleDevice(index));
  }
  return snapshot;
}

DeviceSample NvmlCollector::SampleDevice(unsigned int index) {
  DeviceSample sample;
  sample.index = index;
  nvml::Device device = nullptr;
  nvml::Return result = api_.get_handle_by_index(index, &device);
  if (result == nvml::kErrorGpuIsLost) return LostDevice(index);
  if (result != nvml::kSuccess) {
    ReportUnexpected(index, "handle", result);
    return sample;
  }
  static constexpr std::pair<std::string_view, FieldReader> kFields[] = {
      {"identity", &NvmlCollector::ReadIdentity},
      {"memory", &NvmlCollector::ReadMemory},
      {"utilization", &NvmlCollector::ReadUtilization},
      {"power", &NvmlCollector::ReadPower},
      {"temperature", &NvmlCollector::ReadTemperature},
      {"sm clock", &NvmlCollector::ReadSmClock},
      {"memory clock", &NvmlCollector::ReadMemoryClock},
      {"energy", &NvmlCollector::ReadEnergy},
      {"compute processes", &NvmlCollector::ReadJobMemory},
  };
  for (const auto& [field, read] : kFields) {
    result = (this->*read)(device, sample);
    // Every further call on a lost GPU fails too, and may block for a while: stop here.
    if (result == nvml::kErrorGpuIsLost) return LostDevice(index);
    if (result != nvml::kSuccess && result != nvml::kErrorNotSupported) {
      ReportUnexpected(index, field, result);
    }
  }
  if (lost_devices_.erase(index) > 0) spdlog::info("nvml: device {} answers again", index);
  return sample;
}

DeviceSample NvmlCollector::LostDevice(unsigned int index) {
  DeviceSample sample;
  sample.index = index;
  sample.lost = true;
  if (auto it = identities_.find(index); it != identities_.end()) {
    sample.uuid = it->second.uuid;
    sample.model = it->second.model;
  }
  if (lost_devices_.insert(index).second) {
    spdlog::error("nvml: device {} ({}) is lost (GPU_IS_LOST); other devices are still sampled",
                  index, sample.uuid.empty() ? "uuid unknown" : sample.uuid);
  }
  return sample;
}

void NvmlCollector::ReportUnexpected(unsigned int index, std::string_view field,
                                     nvml::Return result) {
  // Once per device and field: a persistent failure must not flood the log every interval.
  if (reported_errors_.emplace(index, std::string(field)).second) {
    spdlog::warn("nvml: reading {} of device {} failed: {} ({}); leaving it out", field,
                 static_cast<int>(index), ErrorText(result), result);
  }
}

nvml::Return NvmlCollector::ReadIdentity(nvml::Device device, DeviceSample& sample) {
  // UUID and name never change while NVML is initialized, so read them once.
  if (auto it = identities_.find(sample.index); it != identities_.end()) {
    sample.uuid = it->second.uuid;
    sample.model = it->second.model;
    return nvml::kSuccess;
  }
  if (api_.get_uuid == nullptr || api_.get_name == nullptr) return nvml::kErrorNotSupported;
  char uuid[nvml::kStringBufferSize] = {};
  char name[nvml::kStringBufferSize] = {};
  nvml::Return result = api_.get_uuid(device, uuid, sizeof(uuid));
  if (result != nvml::kSuccess) return result;
  result = api_.get_name(device, name, sizeof(name));
  if (result != nvml::kSuccess) return result;
  sample.uuid = FromBuffer(uuid, sizeof(uuid));
  sample.model = FromBuffer(name, sizeof(name));
  identities_[sample.index] = Identity{sample.uuid, sample.model};
  return nvml::kSuccess;
}

nvml::Return NvmlCollector::ReadMemory(nvml::Device device, DeviceSample& sample) {
  if (api_.get_memory_info == nullptr) return nvml::kErrorNotSupported;
  nvml::Memory memory{};
  nvml::Return result = api_.get_memory_info(device, &memory);
  if (result != nvml::kSuccess) return result;
  sample.memory_total_bytes = memory.total;
  sample.memory_free_bytes = memory.free;
  sample.memory_used_bytes = memory.used;
  return nvml::kSuccess;
}

nvml::Return NvmlCollector::ReadUtilization(nvml::Device device, DeviceSample& sample) {
  if (api_.get_utilization_rates == nullptr) return nvml::kErrorNotSupported;
  nvml::Utilization utilization{};
  nvml::Return result = api_.get_utilization_rates(device, &utilization);
  if (result != nvml::kSuccess) return result;
  sample.utilization_ratio = utilization.gpu / 100.0;
  sample.memory_utilization_ratio = utilization.memory / 100.0;
  return nvml::kSuccess;
}

nvml::Return NvmlCollector::ReadPower(nvml::Device device, DeviceSample& sample) {
  if (api_.get_power_usage == nullptr) return nvml::kErrorNotSupported;
  unsigned int milliwatts = 0;
  nvml::Return result = api_.get_power_usage(device, &milliwatts);
  if (result == nvml::kSuccess) sample.power_watts = milliwatts / 1000.0;
  return result;
}

nvml::Return NvmlCollector::ReadTemperature(nvml::Device device, DeviceSample& sample) {
  if (api_.get_temperature == nullptr) return nvml::kErrorNotSupported;
  unsigned int celsius = 0;
  nvml::Return result = api_.get_temperature(device, nvml::kTemperatureGpu, &celsius);
  if (result == nvml::kSuccess) sample.temperature_celsius = celsius;
  return result;
}

nvml::Return NvmlCollector::ReadSmClock(nvml::Device device, DeviceSample& sample) {
  if (api_.get_clock_info == nullptr) return nvml::kErrorNotSupported;
  unsigned int megahertz = 0;
  nvml::Return result = api_.get_clock_info(device, nvml::kClockSm, &megahertz);
  if (result == nvml::kSuccess) sample.sm_clock_hertz = megahertz * 1e6;
  return result;
}

nvml::Return NvmlCollector::ReadMemoryClock(nvml::Device device, DeviceSample& sample) {
  if (api_.get_clock_info == nullptr) return nvml::kErrorNotSupported;
  unsigned int megahertz = 0;
  nvml::Return result = api_.get_clock_info(device, nvml::kClockMemory, &megahertz);
  if (result == nvml::kSuccess) sample.memory_clock_hertz = megahertz * 1e6;
  return result;
}

nvml::Return NvmlCollector::ReadEnergy(nvml::Device device, DeviceSample& sample) {
  if (api_.get_total_energy == nullptr) return nvml::kErrorNotSupported;
  unsigned long long millijoules = 0;
  nvml::Return result = api_.get_total_energy(device, &millijoules);
  if (result == nvml::kSuccess) sample.energy_millijoules = millijoules;
  return result;
}

nvml::Return NvmlCollector::ReadJobMemory(nvml::Device device, DeviceSample& sample) {
  if (api_.get_compute_processes == nullptr) return nvml::kErrorNotSupported;
  if (processes_.empty()) processes_.resize(kInitialProcessCapacity);
  unsigned int count = 0;
  nvml::Return result = nvml::kErrorInsufficientSize;
  for (int attempt = 0; attempt < kProcessQueryAttempts; ++attempt) {
    count = static_cast<unsigned int>(processes_.size());
    result = api_.get_compute_processes(device, &count, processes_.data());
    if (result != nvml::kErrorInsufficientSize) break;
    // NVML put the number it needs in `count`; leave headroom for processes starting now.
    processes_.resize(std::max<size_t>(count + count / 2 + 4, processes_.size() * 2));
  }
  if (result != nvml::kSuccess) return result;
  for (unsigned int i = 0; i < count && i < processes_.size(); ++i) {
    const nvml::ProcessInfo& process = processes_[i];
    // Without permission (or under some virtualization) NVML cannot attribute memory.
    if (process.usedGpuMemory == nvml::kValueNotAvailable) continue;
    // NVML gives host pids: an agent in a container needs the host's /proc (hostPID).
    const int pid = static_cast<int>(process.pid);
    std::string job = ReadProcessJob(options_.proc_root, pid).value_or(std::string(kUnassignedJob));
    if (options_.job_owners && !options_.job_owners->Claim(job, ProcessUid(options_.proc_root, pid), pid)) {
      job = std::string(kUnassignedJob);  // another uid's name: not that job's memory
    }
    sample.job_memory_used_bytes[job] += process.usedGpuMemory;
  }
  return nvml::kSuccess;
}

}  // namespace fleetprof
