#pragma once
// The agent's clock against the server's (agent_sync), as its link's probes measure it:
// the server's time = the agent's + offset_ns, within ± uncertainty_ns (half the round trip
// of the probe that measured it). Labels carrying it on profiles: common/clock_sync_labels.h.

#include <cstdint>

namespace fleetprof {

struct ClockSync {
  int64_t offset_ns = 0;
  int64_t uncertainty_ns = 0;
};

}  // namespace fleetprof
