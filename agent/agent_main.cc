// fleetprof-agent: runs on every node; keeps a link to fleetprof-server, captures jobs on
// demand, uploads finished traces from watched folders, and serves metrics for Prometheus.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "agent/agent.h"
#include "common/flags.h"
#include "common/runtime.h"
#include "spdlog/spdlog.h"

namespace {

constexpr char kUsage[] =
    "fleetprof-agent: node agent of fleetprof.\n"
    "Usage: fleetprof-agent [--server=HOST:PORT] [--trace_dir=DIR]... [--target job=J,xprof=HOST:PORT]...\n"
    "Keeps a live link to the server and runs the captures it asks for: XLA jobs (JAX,\n"
    "TensorFlow, PyTorch/XLA) through their profiler server, PyTorch jobs started with\n"
    "KINETO_USE_DAEMON=1 through the Kineto socket (also reachable by `dyno gputrace` on\n"
    "--dynolog_addr). Uploads every finished trace (*.json, *.json.gz, *.xplane.pb) that appears\n"
    "under each --trace_dir, once. Device (NVML) and host metrics on --metrics_addr.";

}  // namespace

int main(int argc, char** argv) {
  fleetprof::TuneMalloc();
  fleetprof::BlockShutdownSignals();
  fleetprof::AgentConfig config;
  config.node = fleetprof::HostName();
  if (const char* dir = std::getenv("KINETO_IPC_SOCKET_DIR"); dir != nullptr) config.kineto_socket_dir = dir;
  std::string ready_file;
  std::string log_level = "info";
  fleetprof::FlagSet set(kUsage);
  set.AddString("server", &config.server,
                "fleetprof-server gRPC address: H:P, a list of replicas H1:P1,H2:P2,… or dns:///NAME:PORT (reconnects to the next)");
  set.AddString("metrics_addr", &config.metrics_addr, "HTTP listen address for /metrics");
  set.AddString("dynolog_addr", &config.dynolog_addr,
                "dynolog-compatible TCP API for `dyno gputrace` (empty: off; off loopback it needs --dynolog_token_file); "
                "a caller traces only its own user's processes (root: all), its uid taken from the kernel");
  set.AddString("dynolog_socket", &config.dynolog_socket,
                "also serve the dynolog API on this unix socket (mode 0666, in a folder only the agent's user can write; "
                "empty: off). Any caller may trace only its own user's processes, root every process");
  set.AddString("node", &config.node, "this node's name");
  set.AddRepeated("trace_dir", &config.trace_dirs, "folder to watch for finished trace files");
  set.AddRepeated("target", &config.targets, "an XLA profiler server to capture: job=J,xprof=HOST:PORT");
  set.AddString("job", &config.job,
                "job of trace-dir files (default: the first folder under the trace dir when the file's owner may use "
                "that job, see --job_owners_file; else unassigned, labelled claimed_job=FOLDER)");
  set.AddString("state_dir", &config.state_dir, "folder for the agent's own state (upload journal)");
  set.AddString("kineto_socket_dir", &config.kineto_socket_dir,
                "filesystem socket folder for Kineto clients (default $KINETO_IPC_SOCKET_DIR, else the abstract socket)");
  set.AddString("kineto_trace_dir", &config.kineto_trace_dir,
                "where PyTorch jobs write on-demand traces (PyTorch accepts /tmp/... or $KINETO_ONDEMAND_TRACE_DIR)");
  set.AddString("nvml_library", &config.nvml_library,
                "NVML library to dlopen for device metrics (empty: no device metrics)");
  set.AddString("proc_root", &config.proc_root, "procfs mount, for target discovery and host metrics");
  set.AddString("job_owners_file", &config.job_owners_file,
                "\"UID JOB\" lines a scheduler's prolog writes (root's, not group/other-writable; re-read on change): "
                "a listed job's processes are its uid's alone (empty: a name is the first claimer's, root's before others')");
  set.AddInt("scan_interval_ms", &config.scan_interval_ms, "how often trace folders are scanned");
  set.AddInt("settle_ms", &config.settle_ms, "a trace file counts as finished once unchanged this long");
  set.AddInt("sample_interval_ms", &config.sample_interval_ms, "how often device and host metrics are sampled");
  set.AddInt("max_job_series", &config.max_job_series,
             "job label values per metric family; the jobs past it add up under job=\"other\"");
  set.AddInt("discover_interval_ms", &config.discover_interval_ms,
             "how often /proc is scanned for XLA jobs (a process's environment is read once, its first 256 KiB: "
             "FLEETPROF_JOB and FLEETPROF_XPROF_ADDR past that are not seen)");
  set.AddInt("max_trace_mb", &config.max_trace_mb,
             "largest trace an XLA profiler server may hand back in one answer, MiB (larger: the capture fails)");
  set.AddInt("max_capture_memory_mb", &config.max_capture_memory_mb,
             "MiB that all XLA captures in flight may hold together; each reserves --max_trace_mb of it");
  fleetprof::ClientSecurityFlags security;
  fleetprof::AddClientSecurityFlags(set, &security);
  std::string dynolog_token_file;
  set.AddString("dynolog_token_file", &dynolog_token_file,
                "file with the token each dynolog API request must carry as \"auth_token\" (needed off loopback)");
  set.AddString("ready_file", &ready_file, "write {\"metrics\":…} here once serving");
  set.AddString("log_level", &log_level, "trace, debug, info, warn or error");
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
  fleetprof::SetUpLogging("agent", log_level);
  if (auto loaded = fleetprof::LoadClientSecurity(security, fleetprof::FilesFrom::kOperator); loaded.ok()) {
    config.security = *std::move(loaded);
  } else {
    spdlog::error("{}", std::string(loaded.status().message()));
    return 2;
  }
  if (absl::Status s = fleetprof::CheckTokenStaysPrivate(config.server, config.security); !s.ok()) {
    spdlog::error("{}", std::string(s.message()));
    return 2;
  }
  if (!dynolog_token_file.empty()) {
    auto token = fleetprof::ReadTokenFile("dynolog_token_file", dynolog_token_file, fleetprof::FilesFrom::kOperator);
    if (!token.ok()) {
      spdlog::error("{}", std::string(token.status().message()));
      return 2;
    }
    config.dynolog_token = *std::move(token);
  }
  fleetprof::Agent agent(config);
  if (absl::Status s = agent.Start(); !s.ok()) {
    spdlog::error("{}", std::string(s.message()));
    return 1;
  }
  if (!ready_file.empty()) {
    std::ofstream(ready_file + ".tmp") << "{\"metrics\":\"" << agent.metrics_addr() << "\",\"dynolog\":\""
                                        << agent.dynolog_addr() << "\"}\n";
    std::error_code ec;
    std::filesystem::rename(ready_file + ".tmp", ready_file, ec);
  }
  int sig = fleetprof::WaitForShutdownSignal();
  spdlog::info("signal {} received: stopping", sig);
  agent.Stop();
  spdlog::info("fleetprof-agent stopped");
  return 0;
}
