// fleetprof-agent: runs on every node; keeps a link to fleetprof-server, captures jobs on
// demand, uploads finished traces from watched folders, and serves metrics for Prometheus.

#include <filesystem>
#include <fstream>
#include <iostream>

#include "agent/agent.h"
#include "agent/agent_flags.h"
#include "common/flags.h"
#include "common/runtime.h"
#include "spdlog/spdlog.h"

namespace {

// {"metrics":…,"dynolog":…} through a rename, so a reader never sees half of it.
void WriteReadyFile(const std::string& path, const fleetprof::Agent& agent) {
  std::ofstream(path + ".tmp") << "{\"metrics\":\"" << agent.metrics_addr() << "\",\"dynolog\":\""
                               << agent.dynolog_addr() << "\"}\n";
  std::error_code ec;
  std::filesystem::rename(path + ".tmp", path, ec);
}

}  // namespace

int main(int argc, char** argv) {
  fleetprof::TuneMalloc();
  fleetprof::BlockShutdownSignals();
  fleetprof::AgentFlags flags;
  fleetprof::FlagSet set(fleetprof::kAgentUsage);
  fleetprof::AddAgentFlags(set, &flags);
  if (absl::Status s = set.Parse(argc, argv); !s.ok()) {
    std::cerr << "fleetprof-agent: " << s.message() << "\n";
    return 2;
  }
  if (set.help_requested()) {
    std::cout << set.HelpText();
    return 0;
  }
  if (!set.positional().empty()) {
    std::cerr << "fleetprof-agent: unexpected argument '" << set.positional()[0] << "'\n";
    return 2;
  }
  fleetprof::SetUpLogging("agent", flags.log_level);
  if (absl::Status s = fleetprof::LoadAgentSecrets(&flags); !s.ok()) {
    spdlog::error("{}", std::string(s.message()));
    return 2;
  }
  fleetprof::Agent agent(flags.config);
  if (absl::Status s = agent.Start(); !s.ok()) {
    spdlog::error("{}", std::string(s.message()));
    return 1;
  }
  if (!flags.ready_file.empty()) WriteReadyFile(flags.ready_file, agent);
  int sig = fleetprof::WaitForShutdownSignal();
  spdlog::info("signal {} received: stopping", sig);
  agent.Stop();
  spdlog::info("fleetprof-agent stopped");
  return 0;
}
