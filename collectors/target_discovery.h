#pragma once
// Finds the profiling targets on this node: XLA jobs (processes whose environment carries
// FLEETPROF_JOB and FLEETPROF_XPROF_ADDR), jobs under an Nsight Systems session (FLEETPROF_JOB
// and FLEETPROF_NSYS_SESSION=NAME, as `nsys launch --session-new=NAME` was given) and static
// `--target job=J,xprof=HOST:PORT` flags. Kineto clients are added by the agent from its
// Kineto endpoint.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "collectors/job_owners.h"
#include "fleetprof/v1/agent.pb.h"

namespace fleetprof {

// Parses "job=J,xprof=HOST:PORT" (keys in any order).
absl::StatusOr<v1::Target> ParseTargetFlag(const std::string& flag);

// Finds XLA jobs in `proc_root`: processes with FLEETPROF_JOB and FLEETPROF_XPROF_ADDR, each
// pinned to its start time (Target.start_ticks); and, the same way, nsys sessions: processes
// with FLEETPROF_JOB and FLEETPROF_NSYS_SESSION (a safe file name, IsSafeFileName), targets of
// kind nsys whose address is the session name (one per session, uid and job: `nsys launch`
// and the program it runs are one target, the first pid seen). A job name is the uid's that holds it in
// `owners`: a process of another uid naming it is no target. A parent and child (one uid, one
// job) with the same address are one target (the first pid seen); another uid's process
// naming that address is a target of its own (its capture then finds the listener is not its
// uid's), so it cannot hide the job's.
//
// Every process's environment is its owner's to size, and scans come every
// --discover_interval_ms: each process's two variables are remembered between scans, keyed
// as ProcessJobCache keys them (pid, start time and command name, since a launcher's exec of
// the job keeps the first two; an exec that keeps the command name too is not noticed), so an
// unchanged process costs a read of its stat and status, never of its environ again; and at
// most kMaxEnvironBytes of an environ is read. Not thread-safe: one thread scans.
// (Named for the XLA jobs it found first; it finds nsys sessions as well.)
class XprofTargetDiscovery {
 public:
  // `owners` must outlive this object.
  XprofTargetDiscovery(std::string proc_root, JobOwners* owners);

  // The targets on the node now.
  std::vector<v1::Target> Scan();

  // Environ files read so far (a process new to the cache costs one).
  int64_t environ_reads() const { return environ_reads_; }
  // Processes remembered (those seen at the last scan).
  size_t cached() const { return cache_.size(); }

 private:
  // What one process's environment says; empty strings when it names no valid XLA job or
  // nsys session (job is set when either is).
  struct Entry {
    uint64_t start_ticks = 0;
    std::string command;
    std::string job;
    std::string address;       // FLEETPROF_XPROF_ADDR
    std::string nsys_session;  // FLEETPROF_NSYS_SESSION
    uint64_t scan = 0;  // the last scan that saw the process
  };
  // The process's entry, its environ read when the process is new to the cache; null when
  // the process is gone (or was replaced while it was read).
  const Entry* Lookup(int pid);

  const std::string proc_root_;
  JobOwners* owners_;
  std::unordered_map<int, Entry> cache_;
  uint64_t scan_ = 0;
  int64_t environ_reads_ = 0;
};

// Looks up one variable in a NUL-separated environ block ("" when absent).
std::string EnvironValue(const std::string& environ, const std::string& name);

}  // namespace fleetprof
