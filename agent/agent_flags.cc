#include "agent/agent_flags.h"

#include <cstdlib>

#include "common/runtime.h"

namespace fleetprof {

const char kAgentUsage[] =
    "fleetprof-agent: node agent of fleetprof.\n"
    "Usage: fleetprof-agent [--server=HOST:PORT] [--trace_dir=DIR]... [--target job=J,xprof=HOST:PORT]...\n"
    "Keeps a live link to the server and runs the captures it asks for: XLA jobs (JAX,\n"
    "TensorFlow, PyTorch/XLA) through their profiler server, PyTorch jobs started with\n"
    "KINETO_USE_DAEMON=1 through the Kineto socket (also reachable by `dyno gputrace` on\n"
    "--dynolog_addr), and jobs under an Nsight Systems session (FLEETPROF_NSYS_SESSION, with --nsys).\n"
    "Uploads every finished trace (*.json, *.json.gz, *.xplane.pb, *.sqlite, *.sqlite.gz; *.nsys-rep\n"
    "exported with --nsys) that appears under each --trace_dir, once. Device (NVML) and host metrics\n"
    "on --metrics_addr.";

void AddAgentFlags(FlagSet& flags_set, AgentFlags* flags) {
  flags->config.node = HostName();
  if (const char* dir = std::getenv("KINETO_IPC_SOCKET_DIR"); dir != nullptr) flags->config.kineto_socket_dir = dir;
  flags_set.AddString("server", &flags->config.server,
                      "fleetprof-server gRPC address: H:P, a list of replicas H1:P1,H2:P2,… or dns:///NAME:PORT "
                      "(reconnects to the next)");
  flags_set.AddString("metrics_addr", &flags->config.metrics_addr, "HTTP listen address for /metrics");
  flags_set.AddString(
      "dynolog_addr", &flags->config.dynolog_addr,
      "dynolog-compatible TCP API for `dyno gputrace` (empty: off; off loopback it needs --dynolog_token_file); "
      "a caller traces only its own user's processes (root: all), its uid taken from the kernel");
  flags_set.AddString(
      "dynolog_socket", &flags->config.dynolog_socket,
      "also serve the dynolog API on this unix socket (mode 0666, in a folder only the agent's user can write; "
      "empty: off). Any caller may trace only its own user's processes, root every process");
  flags_set.AddString("node", &flags->config.node, "this node's name");
  flags_set.AddRepeated("trace_dir", &flags->config.trace_dirs, "folder to watch for finished trace files");
  flags_set.AddRepeated("target", &flags->config.targets, "an XLA profiler server to capture: job=J,xprof=HOST:PORT");
  flags_set.AddString(
      "job", &flags->config.job,
      "job of trace-dir files (default: the first folder under the trace dir when the file's owner may use "
      "that job, see --job_owners_file; else unassigned, labelled claimed_job=FOLDER)");
  flags_set.AddString("state_dir", &flags->config.state_dir, "folder for the agent's own state (upload journal)");
  flags_set.AddString(
      "kineto_socket_dir", &flags->config.kineto_socket_dir,
      "filesystem socket folder for Kineto clients (default $KINETO_IPC_SOCKET_DIR, else the abstract socket)");
  flags_set.AddString(
      "kineto_trace_dir", &flags->config.kineto_trace_dir,
      "where PyTorch jobs write on-demand traces (PyTorch accepts /tmp/... or $KINETO_ONDEMAND_TRACE_DIR)");
  flags_set.AddString("nvml_library", &flags->config.nvml_library,
                      "NVML library to dlopen for device metrics (empty: no device metrics)");
  flags_set.AddString("proc_root", &flags->config.proc_root, "procfs mount, for target discovery and host metrics");
  flags_set.AddString(
      "nsys", &flags->config.nsys,
      "the node's Nsight Systems CLI (absolute path, root's, not group/other-writable), run as the job's user: "
      "captures of jobs with FLEETPROF_NSYS_SESSION=NAME (nsys start/stop), and *.nsys-rep reports in trace folders "
      "exported to SQLite before upload (empty: neither; such reports are refused with the reason)");
  flags_set.AddString(
      "job_owners_file", &flags->config.job_owners_file,
      "\"UID JOB\" lines a scheduler's prolog writes (root's, not group/other-writable; re-read on change): "
      "a listed job's processes are its uid's alone (empty: a name is the first claimer's, root's before others')");
  flags_set.AddInt("scan_interval_ms", &flags->config.scan_interval_ms, "how often trace folders are scanned");
  flags_set.AddInt("settle_ms", &flags->config.settle_ms, "a trace file counts as finished once unchanged this long");
  flags_set.AddInt("sample_interval_ms", &flags->config.sample_interval_ms,
                   "how often device and host metrics are sampled");
  flags_set.AddInt("max_job_series", &flags->config.max_job_series,
                   "job label values per metric family; the jobs past it add up under job=\"other\"");
  flags_set.AddInt("discover_interval_ms", &flags->config.discover_interval_ms,
                   "how often /proc is scanned for XLA jobs and nsys sessions (a process's environment is read once, "
                   "its first 256 KiB: FLEETPROF_JOB, FLEETPROF_XPROF_ADDR and FLEETPROF_NSYS_SESSION past that are "
                   "not seen)");
  flags_set.AddInt("max_trace_mb", &flags->config.max_trace_mb,
                   "largest trace an XLA profiler server may hand back in one answer, and largest SQLite file nsys "
                   "may export, MiB (larger: the capture or upload fails)");
  flags_set.AddInt("max_capture_memory_mb", &flags->config.max_capture_memory_mb,
                   "MiB that all XLA captures in flight may hold together; each reserves --max_trace_mb of it");
  AddClientSecurityFlags(flags_set, &flags->security);
  flags_set.AddString(
      "dynolog_token_file", &flags->dynolog_token_file,
      "file with the token each dynolog API request must carry as \"auth_token\" (needed off loopback)");
  flags_set.AddString("ready_file", &flags->ready_file, "write {\"metrics\":…} here once serving");
  flags_set.AddString("log_level", &flags->log_level, "trace, debug, info, warn or error");
}

absl::Status LoadAgentSecrets(AgentFlags* flags) {
  absl::StatusOr<ClientSecurity> loaded = LoadClientSecurity(flags->security, FilesFrom::kOperator);
  if (!loaded.ok()) return loaded.status();
  flags->config.security = *std::move(loaded);
  if (absl::Status s = CheckTokenStaysPrivate(flags->config.server, flags->config.security); !s.ok()) return s;
  if (!flags->dynolog_token_file.empty()) {
    absl::StatusOr<std::string> token =
        ReadTokenFile("dynolog_token_file", flags->dynolog_token_file, FilesFrom::kOperator);
    if (!token.ok()) return token.status();
    flags->config.dynolog_token = *std::move(token);
  }
  return absl::OkStatus();
}

}  // namespace fleetprof
