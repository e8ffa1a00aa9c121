#pragma once
// The fleet layer's flags: what the agent registry keeps and what retention deletes. Each set
// registers itself on the server's FlagSet and turns into the component's options, or into an
// INVALID_ARGUMENT naming the flag.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/retention.h"

namespace fleetprof {

class FlagSet;

struct AgentFlags {
  int64_t max_agents = 10'000;
  int64_t max_targets_per_agent = 1'024;
  int64_t max_agent_message_kb = 256;
  int64_t max_node_history_kb = 1'024;

  void AddFlags(FlagSet* flags);
  absl::StatusOr<AgentLimits> Limits() const;
};

// Days may have a fraction, hence text.
struct RetentionFlags {
  std::string retention_days = "0";
  std::string job_retention_days;
  int64_t max_disk_mb = 0;
  std::string capture_retention_days = "30";
  std::string agent_expiry_days = "7";
  int64_t retention_check_s = 60;

  void AddFlags(FlagSet* flags);
  absl::StatusOr<RetentionPolicy> Policy() const;
};

}  // namespace fleetprof
