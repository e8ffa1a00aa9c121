#pragma once
// The slice of the NVML C API that fleetprof uses, written from the public contract in
// docs/protocols.md, NVML. We declare it ourselves so the build needs no CUDA headers and the
// binary needs no NVML at link time: the library is dlopen'ed when (and if) it exists.

#include <cstdint>

namespace fleetprof::nvml {

// Every NVML call returns one of these; 0 is success.
using Return = int;

inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorDriverNotLoaded = 9;
inline constexpr Return kErrorLibraryNotFound = 12;
inline constexpr Return kErrorGpuIsLost = 15;

// Opaque per-device handle owned by the library.
using Device = struct DeviceOpaque*;

// nvmlMemory_t: bytes.
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlUtilization_t: percent over the driver's last sample period.
struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};

// nvmlProcessInfo_t as filled by nvmlDeviceGetComputeRunningProcesses_v3.
struct ProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes, or kValueNotAvailable
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// usedGpuMemory when the driver cannot attribute memory (e.g. no permission).
inline constexpr unsigned long long kValueNotAvailable = ~0ULL;

inline constexpr unsigned int kTemperatureGpu = 0;  // nvmlTemperatureSensors_t
inline constexpr unsigned int kClockSm = 1;         // nvmlClockType_t
inline constexpr unsigned int kClockMemory = 2;

// Large enough for the v2 UUID and name strings.
inline constexpr unsigned int kStringBufferSize = 96;

// Function pointer types, one per symbol resolved with dlsym.
using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using ErrorStringFn = const char* (*)(Return);
using DeviceGetCountFn = Return (*)(unsigned int*);
using DeviceGetHandleByIndexFn = Return (*)(unsigned int, Device*);
using DeviceGetStringFn = Return (*)(Device, char*, unsigned int);  // UUID and Name
using DeviceGetMemoryInfoFn = Return (*)(Device, Memory*);
using DeviceGetUtilizationRatesFn = Return (*)(Device, Utilization*);
using DeviceGetPowerUsageFn = Return (*)(Device, unsigned int*);
using DeviceGetTemperatureFn = Return (*)(Device, unsigned int, unsigned int*);
using DeviceGetClockInfoFn = Return (*)(Device, unsigned int, unsigned int*);
using DeviceGetTotalEnergyConsumptionFn = Return (*)(Device, unsigned long long*);
using DeviceGetComputeRunningProcessesFn = Return (*)(Device, unsigned int*, ProcessInfo*);

}  // namespace fleetprof::nvml
