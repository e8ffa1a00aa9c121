/* A stand-in for libnvidia-ml.so.1 that the collector tests dlopen by path. It exports the NVML
 * entry points fleetprof uses (docs/protocols.md, NVML) and answers from the fixed script below,
 * so the tests can check every exported value against it.
 *
 * Script (units as NVML reports them):
 *   device 0  uuid GPU-00000000-fake-4000-8000-000000000000, name "Fake H100 80GB HBM3"
 *             memory total 81559 MiB, used 10240 MiB, free = total - used
 *             utilization gpu 87 %, memory 42 %; power 312500 mW; temperature 64 C
 *             clocks SM 1980 MHz, memory 2619 MHz
 *             energy 5000000 mJ + 125000 mJ per nvmlDeviceGetTotalEnergyConsumption call
 *             processes: pid 4242 6144 MiB, pid 4343 3072 MiB, pid 5555 512 MiB,
 *                        pid 6666 memory not available (NVML_VALUE_NOT_AVAILABLE)
 *   device 1  uuid GPU-11111111-fake-4000-8000-000000000001, name "Fake A100-SXM4-40GB"
 *             memory total 40960 MiB, used 2048 MiB; utilization 5 %, 1 %
 *             power NOT_SUPPORTED; temperature 41 C; clocks SM 1410 MHz, memory 1215 MHz
 *             energy 2000000 mJ + 50000 mJ per call
 *             processes: pid 4242 1024 MiB
 *
 * Environment, read by nvmlInit_v2 (which also resets all counters):
 *   FAKE_NVML_INIT_RESULT=N         nvmlInit_v2 returns N (default 0; 9 = driver not loaded)
 *   FAKE_NVML_LOSE_DEVICE1_AFTER=N  after N calls of nvmlDeviceGetCount_v2, every call on
 *                                   device 1 answers GPU_IS_LOST (15); 0 or unset: never
 *   FAKE_NVML_EXTRA_PROCESSES=N     N more processes on device 0, pids 100000.., 1 MiB each
 *   FAKE_NVML_DRIVER_GONE_AFTER=N   after N calls, nvmlDeviceGetCount_v2 answers DRIVER_NOT_LOADED
 *   FAKE_NVML_UTILIZATION_FILE=F    device 0's gpu utilization is the number in file F, read at each
 *                                   call (a test changes it to make a drop); unreadable: the script's
 *
 * Test hooks (not NVML): fake_nvml_insufficient_size_answers(), fake_nvml_shutdown_calls().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

enum {
  kSuccess = 0,
  kUninitialized = 1,
  kInvalidArgument = 2,
  kNotSupported = 3,
  kInsufficientSize = 7,
  kDriverNotLoaded = 9,
  kGpuIsLost = 15,
};

#define MIB (1024ULL * 1024ULL)
#define NOT_AVAILABLE (~0ULL)

typedef struct {
  unsigned long long total, free, used;
} FakeMemory;

typedef struct {
  unsigned int gpu, memory;
} FakeUtilization;

typedef struct {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
} FakeProcess;

typedef struct {
  const char* uuid;
  const char* name;
  unsigned long long total_mib, used_mib;
  unsigned int gpu_percent, memory_percent;
  int power_supported;
  unsigned int power_mw, temperature_c, sm_mhz, memory_mhz;
  unsigned long long energy_base_mj, energy_step_mj;
  FakeProcess processes[4];
  unsigned int process_count;
} FakeDevice;

static FakeDevice devices[2] = {
    {"GPU-00000000-fake-4000-8000-000000000000", "Fake H100 80GB HBM3", 81559, 10240, 87, 42, 1,
     312500, 64, 1980, 2619, 5000000, 125000,
     {{4242, 6144 * MIB, 0, 0}, {4343, 3072 * MIB, 0, 0}, {5555, 512 * MIB, 0, 0},
      {6666, NOT_AVAILABLE, 0, 0}},
     4},
    {"GPU-11111111-fake-4000-8000-000000000001", "Fake A100-SXM4-40GB", 40960, 2048, 5, 1, 0, 0,
     41, 1410, 1215, 2000000, 50000, {{4242, 1024 * MIB, 0, 0}}, 1},
};

static int initialized;
static int init_result;
static unsigned long lose_device1_after;
static unsigned int extra_processes;
static unsigned long driver_gone_after;
static unsigned long count_calls;
static unsigned long long energy_calls[2];
static int insufficient_size_answers;
static int shutdown_calls;

static unsigned long EnvNumber(const char* name) {
  const char* value = getenv(name);
  return value != NULL ? strtoul(value, NULL, 10) : 0;
}

/* Resolves a handle; returns an NVML code, so lost and uninitialized read like the real one. */
static int Lookup(void* handle, FakeDevice** device) {
  if (!initialized) return kUninitialized;
  if (handle != &devices[0] && handle != &devices[1]) return kInvalidArgument;
  *device = (FakeDevice*)handle;
  if (*device == &devices[1] && lose_device1_after > 0 && count_calls > lose_device1_after) {
    return kGpuIsLost;
  }
  return kSuccess;
}

static int CopyString(const char* value, char* out, unsigned int length) {
  if (out == NULL || strlen(value) + 1 > length) return kInsufficientSize;
  memcpy(out, value, strlen(value) + 1);
  return kSuccess;
}

FAKE_EXPORT int nvmlInit_v2(void) {
  init_result = (int)EnvNumber("FAKE_NVML_INIT_RESULT");
  lose_device1_after = EnvNumber("FAKE_NVML_LOSE_DEVICE1_AFTER");
  extra_processes = (unsigned int)EnvNumber("FAKE_NVML_EXTRA_PROCESSES");
  driver_gone_after = EnvNumber("FAKE_NVML_DRIVER_GONE_AFTER");
  count_calls = 0;
  energy_calls[0] = energy_calls[1] = 0;
  insufficient_size_answers = 0;
  shutdown_calls = 0;
  initialized = init_result == kSuccess;
  return init_result;
}

FAKE_EXPORT int nvmlShutdown(void) {
  ++shutdown_calls;
  initialized = 0;
  return kSuccess;
}

FAKE_EXPORT const char* nvmlErrorString(int result) {
  switch (result) {
    case kSuccess: return "Success";
    case kNotSupported: return "Not Supported";
    case kInsufficientSize: return "Insufficient Size";
    case kDriverNotLoaded: return "Driver Not Loaded";
    case kGpuIsLost: return "GPU is lost";
    default: return "Unknown Error";
  }
}

FAKE_EXPORT int nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!initialized) return kUninitialized;
  ++count_calls;
  if (driver_gone_after > 0 && count_calls > driver_gone_after) return kDriverNotLoaded;
  *count = 2;
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** handle) {
  if (index > 1) return kInvalidArgument;
  FakeDevice* device = NULL;
  int result = Lookup(&devices[index], &device);
  if (result == kSuccess) *handle = device;
  return result;
}

FAKE_EXPORT int nvmlDeviceGetUUID(void* handle, char* uuid, unsigned int length) {
  FakeDevice* device = NULL;
  int result = Lookup(handle, &device);
  return result != kSuccess ? result : CopyString(device->uuid, uuid, length);
}

FAKE_EXPORT int nvmlDeviceGetName(void* handle, char* name, unsigned int length) {
  FakeDevice* device = NULL;
  int result = Lookup(handle, &device);
  return result != kSuccess ? result : CopyString(device->name, name, length);
}

FAKE_EXPORT int nvmlDeviceGetMemoryInfo(void* handle, FakeMemory* memory) {
  FakeDevice* device = NULL;
  int result = Lookup(handle, &device);
  if (result != kSuccess) return result;
  memory->total = device->total_mib * MIB;
  memory->used = device->used_mib * MIB;
  memory->free = memory->total - memory->used;
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetUtilizationRates(void* handle, FakeUtilization* utilization) {
  FakeDevice* device = NULL;
  int result = Lookup(handle, &device);
  if (result != kSuccess) return result;
  utilization->gpu = device->gpu_percent;
  utilization->memory = device->memory_percent;
  const char* path = getenv("FAKE_NVML_UTILIZATION_FILE");
  if (device == &devices[0] && path != NULL) {
    FILE* file = fopen(path, "r");
    unsigned int percent = 0;
    if (file != NULL) {
      if (fscanf(file, "%u", &percent) == 1 && percent <= 100) utilization->gpu = percent;
      fclose(file);
    }
  }
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetPowerUsage(void* handle, unsigned int* milliwatts) {
  FakeDevice* device = NULL;
  int result = Lookup(handle, &device);
  if (result != kSuccess) return result;
  if (!device->power_supported) return kNotSupported;
  *milliwatts = device->power_mw;
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetTemperature(void* handle, unsigned int sensor, unsigned int* celsius) {
  FakeDevice* device = NULL;
  int result = Lookup(handle, &device);
  if (result != kSuccess) return result;
  if (sensor != 0) return kInvalidArgument;
  *celsius = device->temperature_c;
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetClockInfo(void* handle, unsigned int type, unsigned int* megahertz) {
  FakeDevice* device = NULL;
  int result = Lookup(handle, &device);
  if (result != kSuccess) return result;
  if (type == 1) {
    *megahertz = device->sm_mhz;
  } else if (type == 2) {
    *megahertz = device->memory_mhz;
  } else {
    return kInvalidArgument;
  }
  return kSuccess;
}

FAKE_EXPORT int nvmlDeviceGetTotalEnergyConsumption(void* handle, unsigned long long* millijoules) {
  FakeDevice* device = NULL;
  int result = Lookup(handle, &device);
  if (result != kSuccess) return result;
  unsigned long long* calls = &energy_calls[device - devices];
  *millijoules = device->energy_base_mj + device->energy_step_mj * (*calls)++;
  return kSuccess;
}

/* Like NVML: too small a buffer gets INSUFFICIENT_SIZE and the needed count in *count. */
FAKE_EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(void* handle, unsigned int* count,
                                                        FakeProcess* infos) {
  FakeDevice* device = NULL;
  int result = Lookup(handle, &device);
  if (result != kSuccess) return result;
  unsigned int needed = device->process_count + (device == &devices[0] ? extra_processes : 0);
  if (*count < needed) {
    *count = needed;
    ++insufficient_size_answers;
    return kInsufficientSize;
  }
  for (unsigned int i = 0; i < needed; ++i) {
    if (i < device->process_count) {
      infos[i] = device->processes[i];
    } else {
      FakeProcess extra = {100000 + (i - device->process_count), MIB, 0, 0};
      infos[i] = extra;
    }
  }
  *count = needed;
  return kSuccess;
}

FAKE_EXPORT int fake_nvml_insufficient_size_answers(void) { return insufficient_size_answers; }
FAKE_EXPORT int fake_nvml_shutdown_calls(void) { return shutdown_calls; }
