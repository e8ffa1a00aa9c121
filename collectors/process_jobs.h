#pragma once
// Which job a process belongs to. Jobs announce themselves through FLEETPROF_JOB in the
// environment they were started with, which Linux exposes as /proc/<pid>/environ (docs/using.md,
// Captures). The proc root is a parameter so tests can use a fake tree.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/statusor.h"

namespace fleetprof {

inline constexpr std::string_view kJobEnvironmentVariable = "FLEETPROF_JOB";
// Job label for processes that carry no FLEETPROF_JOB (or whose environ we cannot read).
inline constexpr std::string_view kUnassignedJob = "unassigned";

// Reads a procfs file to EOF, or its first `max_bytes` (procfs reports size 0 for most files,
// so stat() says nothing). NotFound when the file (or its process) is gone.
absl::StatusOr<std::string> ReadProcFile(const std::string& path, size_t max_bytes = SIZE_MAX);

// The most of a process's environment the agent reads. Its owner sizes it (5 MiB is legal)
// and the agent, as root, reads every process's: the bound keeps that cost ours. A variable
// that starts past it is not seen, so FLEETPROF_JOB and FLEETPROF_XPROF_ADDR must lie in the
// first 256 KiB of the environment (launchers put them near the start; docs/using.md, "Captures").
inline constexpr size_t kMaxEnvironBytes = 256 << 10;

// The environ block of process `pid` (NUL-separated entries), at most kMaxEnvironBytes of it.
// Whole entries only: one the bound cuts is dropped, never seen shortened (a job name cut to
// a prefix could be another job's).
absl::StatusOr<std::string> ReadProcessEnviron(const std::string& proc_root, int pid);

// The fields of /proc/<pid>/stat that we use.
struct ProcessStat {
  std::string command;
  uint64_t cpu_ticks = 0;    // utime + stime
  uint64_t start_ticks = 0;  // field 22, clock ticks since boot: with the pid, names one process
  uint64_t resident_pages = 0;
};

// Parses the text of /proc/<pid>/stat; nullopt when malformed.
std::optional<ProcessStat> ParseProcessStat(std::string_view text);

// The start time of process `pid` under `proc_root` (ParseProcessStat's start_ticks), nullopt
// when it is gone or unreadable. A pid is reused once its process ends; the pair is not.
std::optional<uint64_t> ReadProcessStartTicks(const std::string& proc_root, int32_t pid);

// Returns the value of FLEETPROF_JOB in a NUL-separated environ block, or nullopt when it is
// absent or empty.
std::optional<std::string> FindJobInEnviron(std::string_view environ);

// Returns FLEETPROF_JOB of process `pid` under `proc_root` (normally "/proc"). A process that
// exited, or whose environ we may not read (another user, no CAP_SYS_PTRACE), has no job.
std::optional<std::string> ReadProcessJob(const std::string& proc_root, int pid);

// Remembers each process's job between scans so a full scan of /proc does not re-read every
// environ (they can be tens of KiB) each interval. Entries are keyed by pid, start time and
// command name: a recycled pid has a new start time, and a launcher that exec's the job
// (`env FLEETPROF_JOB=x python ...`, or a shell that exports then exec's) keeps its pid and
// start time but changes its command name, so both are read afresh. Not thread-safe.
class ProcessJobCache {
 public:
  explicit ProcessJobCache(std::string proc_root);

  // Returns the job of the process, reading environ only when the process is new to us.
  std::optional<std::string> JobOf(int pid, uint64_t start_ticks, std::string_view command);

  // Forgets processes not asked about since the previous Sweep(); call once per scan.
  void Sweep();

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t start_ticks = 0;
    std::string command;
    std::optional<std::string> job;
    uint64_t seen_in_scan = 0;
  };

  std::string proc_root_;
  std::unordered_map<int, Entry> entries_;
  uint64_t scan_ = 0;
};

}  // namespace fleetprof
