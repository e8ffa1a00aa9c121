#pragma once
// agent_sync (docs/using.md, Job timeline): where a captured profile's clock sits against
// the server's, from what the capturing agent measured (common/clock_sync_labels.h). Traces
// whose clock is wall time (XSpace, Kineto in epoch µs) map as they are; others (Kineto's
// monotonic clock) through the capture window, with that window added to the uncertainty.

#include <cstdint>
#include <optional>
#include <string>

#include "google/protobuf/map.h"

namespace fleetprof::jobtrace {

struct TraceToServer {
  int64_t to_server_ns = 0;    // the trace's time + this = the server's wall clock
  int64_t uncertainty_ns = 0;
};

// A trace clock within this of the capture's start is taken to be the node's wall clock.
inline constexpr int64_t kWallClockSlackNs = int64_t{86400} * 1'000'000'000;

// nullopt for a profile without (valid) agent_sync labels.
std::optional<TraceToServer> AgentClockOf(const google::protobuf::Map<std::string, std::string>& labels,
                                          int64_t trace_start_ns);

}  // namespace fleetprof::jobtrace
