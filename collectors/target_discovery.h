#pragma once
// Finds the profiling targets on this node: XLA jobs (processes whose environment carries
// FLEETPROF_JOB and FLEETPROF_XPROF_ADDR) and static `--target job=J,xprof=HOST:PORT` flags.
// Kineto clients are added by the agent from its Kineto endpoint.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "collectors/job_owners.h"
#include "fleetprof/v1/agent.pb.h"

namespace fleetprof {

// Parses "job=J,xprof=HOST:PORT" (keys in any order).
absl::StatusOr<v1::Target> ParseTargetFlag(const std::string& flag);

// Scans `proc_root` for processes with FLEETPROF_JOB and FLEETPROF_XPROF_ADDR, each pinned
// to its start time (Target.start_ticks). A job name is the uid's that holds it in `owners`:
// a process of another uid naming it is no target. A parent and child (one uid, one job) with
// the same address are one target (the first pid seen); another uid's process naming that
// address is a target of its own (its capture then finds the listener is not its uid's), so
// it cannot hide the job's.
std::vector<v1::Target> DiscoverXprofTargets(const std::string& proc_root, JobOwners& owners);

// Looks up one variable in a NUL-separated environ block ("" when absent).
std::string EnvironValue(const std::string& environ, const std::string& name);

}  // namespace fleetprof
