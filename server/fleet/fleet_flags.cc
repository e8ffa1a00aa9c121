#include "server/fleet/fleet_flags.h"

#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/flags.h"

namespace fleetprof {

void AgentFlags::AddFlags(FlagSet* flags) {
  flags->AddInt("max_agents", &max_agents, "nodes the server keeps, connected or not (a new one past it is refused)");
  flags->AddInt("max_targets_per_agent", &max_targets_per_agent, "targets one agent may report");
  flags->AddInt("max_agent_message_kb", &max_agent_message_kb, "largest agent hello or heartbeat, KiB");
  flags->AddInt("max_node_history_kb", &max_node_history_kb,
                "device samples kept per node (the last hour at most), KiB");
}

absl::StatusOr<AgentLimits> AgentFlags::Limits() const {
  for (absl::Status s : {CheckFlagRange("max_agents", max_agents, 1, 10'000'000),
                         CheckFlagRange("max_targets_per_agent", max_targets_per_agent, 1, 1'000'000),
                         CheckFlagRange("max_agent_message_kb", max_agent_message_kb, 1, int64_t{1} << 20),
                         CheckFlagRange("max_node_history_kb", max_node_history_kb, 1, int64_t{1} << 20)}) {
    if (!s.ok()) return s;
  }
  AgentLimits limits;
  limits.max_agents = max_agents;
  limits.max_targets_per_agent = max_targets_per_agent;
  limits.max_message_bytes = max_agent_message_kb << 10;
  limits.max_history_bytes = max_node_history_kb << 10;
  return limits;
}

void RetentionFlags::AddFlags(FlagSet* flags) {
  flags->AddString("retention_days", &retention_days,
                   "profiles older than this (days since ingest, fractions allowed) are deleted; 0: kept forever");
  flags->AddString("job_retention_days", &job_retention_days,
                   "per-job retention overriding --retention_days: JOB=DAYS[,JOB=DAYS...] (0: keep that job's)");
  flags->AddInt("max_disk_mb", &max_disk_mb,
                "MiB of disk that everything under --data_dir may take, as du counts it (tables, blob files, "
                "write-ahead logs, RocksDB's LOG and MANIFEST, uploads in progress); over it, the oldest profiles "
                "are deleted one at a time until it is not (after each upload and every --retention_check_s). The "
                "newest profile stays and an upload in progress is never cut: the folder may be over while uploads "
                "land. 0: no limit");
  flags->AddString("capture_retention_days", &capture_retention_days, "captures older than this are deleted; 0: kept");
  flags->AddString("agent_expiry_days", &agent_expiry_days,
                   "disconnected agents not seen for this long are forgotten; 0: kept");
  flags->AddInt("retention_check_s", &retention_check_s,
                "how often retention looks for old profiles, captures and agents (it also looks after each upload)");
}

absl::StatusOr<RetentionPolicy> RetentionFlags::Policy() const {
  RetentionPolicy policy;
  for (auto [name, text, out] : {std::tuple{"retention_days", &retention_days, &policy.retention_days},
                                 {"capture_retention_days", &capture_retention_days, &policy.capture_retention_days},
                                 {"agent_expiry_days", &agent_expiry_days, &policy.agent_expiry_days}}) {
    if (!absl::SimpleAtod(*text, out) || !(*out >= 0) || *out > 1e6) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, "=", *text, ": want a number of days >= 0 (0: keep)"));
    }
  }
  auto jobs = RetentionPolicy::ParseJobDays(job_retention_days);
  if (!jobs.ok()) return jobs.status();
  policy.job_days = *std::move(jobs);
  if (max_disk_mb < 0 || max_disk_mb > (int64_t{1} << 40)) {
    return absl::InvalidArgumentError(absl::StrCat("--max_disk_mb=", max_disk_mb, ": want 0 (no limit) or more"));
  }
  policy.max_disk_bytes = max_disk_mb << 20;
  if (absl::Status s = CheckFlagRange("retention_check_s", retention_check_s, 1, 86400); !s.ok()) return s;
  policy.check_every_s = retention_check_s;
  return policy;
}

}  // namespace fleetprof
