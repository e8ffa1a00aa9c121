#pragma once
// Host CPU and memory, and CPU and resident memory per job, read from procfs. Jobs are the
// processes whose environ carries FLEETPROF_JOB (collectors/process_jobs.h), as far as the
// node's job owners agree (collectors/job_owners.h): a process of another uid naming a job
// does not add its CPU and memory to that job's.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "collectors/job_owners.h"
#include "collectors/process_jobs.h"

namespace fleetprof {

struct JobHostSample {
  // CPU time of the job's processes since we first saw each of them. It only grows while the
  // job has a live process: time of a process that exited stays in (a Prometheus counter).
  double cpu_seconds_total = 0;
  uint64_t resident_bytes = 0;  // summed over the job's live processes
};

struct HostSample {
  // False when /proc/stat or /proc/meminfo cannot be read; nothing else is then set.
  bool up = false;
  // Busy share of all CPUs since the previous Sample(); absent on the first one.
  std::optional<double> cpu_utilization_ratio;
  std::optional<uint64_t> memory_total_bytes;
  // MemTotal - MemAvailable: what the kernel could not hand out without swapping.
  std::optional<uint64_t> memory_used_bytes;
  // Only jobs with at least one live process; a finished job drops out.
  std::map<std::string, JobHostSample> jobs;
};

class HostCollector {
 public:
  struct Options {
    std::string proc_root = "/proc";
    // 0 means ask sysconf. Tests pin them so fake /proc files mean the same everywhere.
    long ticks_per_second = 0;
    long page_size_bytes = 0;
    // Who holds each job name (shared with the agent's target discovery); none: every
    // process's FLEETPROF_JOB is taken as it says.
    std::shared_ptr<JobOwners> job_owners;
  };

  explicit HostCollector(Options options);

  // Reads procfs once. The first failure to read it is logged; later ones are silent until it
  // succeeds again. Not thread-safe: one sampling thread owns the collector.
  HostSample Sample();

 private:
  // Aggregate CPU ticks from the first line of /proc/stat.
  struct CpuTicks {
    uint64_t busy = 0;
    uint64_t total = 0;
  };
  // What we last saw of one job process, to turn its CPU time into increments.
  struct TrackedProcess {
    uint64_t start_ticks = 0;
    uint64_t cpu_ticks = 0;
    uint64_t seen_in_scan = 0;
  };

  void SampleCpu(const std::string& stat, HostSample& sample);
  void SampleJobs(HostSample& sample);

  Options options_;
  ProcessJobCache job_cache_;
  std::optional<CpuTicks> previous_cpu_;
  std::unordered_map<int, TrackedProcess> processes_;
  std::map<std::string, uint64_t> job_cpu_ticks_;  // cumulative per job, see JobHostSample
  uint64_t scan_ = 0;
  bool logged_down_ = false;
};

}  // namespace fleetprof
