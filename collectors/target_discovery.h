#pragma once
// Finds the profiling targets on this node: XLA jobs (processes whose environment carries
// FLEETPROF_JOB and FLEETPROF_XPROF_ADDR) and static `--target job=J,xprof=HOST:PORT` flags.
// Kineto clients are added by the agent from its Kineto endpoint.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fleetprof/v1/agent.pb.h"

namespace fleetprof {

// Parses "job=J,xprof=HOST:PORT" (keys in any order).
absl::StatusOr<v1::Target> ParseTargetFlag(const std::string& flag);

// Scans `proc_root` for processes with FLEETPROF_JOB and FLEETPROF_XPROF_ADDR. A parent and
// child with the same address are one target (the first pid seen).
std::vector<v1::Target> DiscoverXprofTargets(const std::string& proc_root);

// Looks up one variable in a NUL-separated environ block ("" when absent).
std::string EnvironValue(const std::string& environ, const std::string& name);

}  // namespace fleetprof
