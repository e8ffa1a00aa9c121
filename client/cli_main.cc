// fleetprof: the command-line client. `fleetprof COMMAND [ARGS] [--flags]`; flags may stand
// before or after the command and its arguments.

#include <cstdlib>
#include <iostream>

#include "client/cli.h"
#include "client/commands.h"
#include "common/flags.h"
#include "common/runtime.h"
#include "grpc/grpc.h"

namespace fleetprof::cli {

int Fail(const std::string& message) {
  std::cerr << "fleetprof: " << message << "\n";
  return 1;
}

bool ParseLabels(const std::vector<std::string>& labels, std::map<std::string, std::string>* out,
                 std::string* error) {
  for (const auto& label : labels) {
    size_t eq = label.find('=');
    if (eq == 0 || eq == std::string::npos) {
      *error = "--label wants key=value, got '" + label + "'";
      return false;
    }
    (*out)[label.substr(0, eq)] = label.substr(eq + 1);
  }
  return true;
}

namespace {

// The flags of uploads, queries, analyses and schedules, and the common ones.
void AddQueryFlags(FlagSet* flags, CliOptions* options) {
  flags->AddString("server", &options->server,
                   "fleetprof-server gRPC address: H:P, a list of replicas H1:P1,H2:P2,… or dns:///NAME:PORT (reads fail over)");
  flags->AddBool("json", &options->json, "print one JSON object instead of a table");
  flags->AddString("job", &options->job, "job name (upload: the profile's job; profiles: filter)");
  flags->AddString("node", &options->node, "node name for upload (default: this host)");
  flags->AddString("format", &options->format,
                   "upload: kineto_json, xspace or nsys_sqlite (default: detect); export: original (default), chrome_json or "
                   "pprof; stats: csv");
  flags->AddString("o", &options->output, "export: the file to write");
  flags->AddInt("start_ns", &options->start_ns, "trace, export: window start in the trace's ns (default: its start)");
  flags->AddInt("end_ns", &options->end_ns, "trace, export: window end, exclusive (default: the trace's end)");
  flags->AddInt("resolution_ns", &options->resolution_ns,
                "trace: events shorter than this are counted in merged blocks (default: window / 2000)");
  flags->AddRepeated("track", &options->tracks, "trace: only this track id (see the tracks of a first query)");
  flags->AddString("search", &options->search, "trace: only events whose name contains this (any case)");
  flags->AddBool("args", &options->args_wanted, "trace: each event's arguments (category, kind, correlation)");
  flags->AddString("by", &options->by,
                   "diff: op (default), kernel or scope (enclosing user annotation); fleet top: kernel (default), op, "
                   "job, node or device_type");
  flags->AddString("since", &options->since, "fleet top: the window back from now, e.g. 24h (default), 2h, 7d");
  flags->AddInt("since_ns", &options->since_ns, "job-ops, job-series, diagnose --job: profiles ending at or after this");
  flags->AddInt("until_ns", &options->until_ns, "job-ops, job-series, diagnose --job: profiles starting at or before this");
  flags->AddString("capture_id", &options->capture_id, "job-trace, collectives: every profile of this capture");
  flags->AddRepeated("profile", &options->profiles, "job-trace, collectives: this profile (instead of --capture_id)");
  options->trace_limits.AddFlags(flags);
  flags->AddString("every", &options->every, "schedule, sampling set: how often to capture, e.g. 30m, 2h, 45s, 7d");
  flags->AddString("max_overhead", &options->max_overhead,
                   "sampling set: the most of the fleet's device-time sampled captures may take in a period, e.g. 1%");
  flags->AddInt("max_concurrent", &options->max_concurrent, "sampling set: sampled captures in flight at once (default 16)");
  flags->AddString("when", &options->when,
                   "trigger add: the condition: device_utilization < N% for D, device_memory > N% for D, rule NAME or regression");
  flags->AddString("cooldown", &options->cooldown, "trigger add: least time between two firings, e.g. 10m (default), 45s, 2h");
  flags->AddString("report", &options->report,
                   "stats: the reports to print, comma-separated (default: all five; e.g. cuda_gpu_kern_sum,nvtx_sum)");
  flags->AddRepeated("threshold", &options->thresholds, "diagnose: RULE=VALUE replaces a rule's default threshold");
  flags->AddString("upload_id", &options->upload_id,
                   "upload id; the same id twice stores the file once (default: random)");
  flags->AddRepeated("label", &options->labels, "key=value label (upload: attach; profiles: filter)");
  flags->AddInt("limit", &options->limit, "rows to print in tables (0: 30)");
  flags->AddInt("timeout_s", &options->timeout_s, "deadline of each query, seconds");
}

void AddCaptureFlags(FlagSet* flags, CliOptions* options) {
  flags->AddString("target", &options->target, "capture: only this target (xprof:HOST:PORT, kineto:pid=N)");
  flags->AddInt("duration_ms", &options->duration_ms, "capture: how long to trace (default 2000)");
  flags->AddInt("iterations", &options->iterations, "capture: trace this many iterations (Kineto)");
  flags->AddInt("start_delay_ms", &options->start_delay_ms,
                "capture: shared start this far in the future, exactly (default: now, or 11 s for PyTorch jobs, which poll every 5 s and warm up 5 s; a job that cannot meet a given start fails with the reason)");
  flags->AddBool("wait", &options->wait, "capture: follow progress until every target is done");
  flags->AddInt("capture_timeout_ms", &options->capture_timeout_ms,
                "capture: give up on a target this long after the start (default max(60 s, 2 x duration))");
  flags->AddBool("record_shapes", &options->record_shapes, "capture: record input shapes (Kineto)");
  flags->AddBool("profile_memory", &options->profile_memory, "capture: record allocations (Kineto)");
  flags->AddBool("with_stack", &options->with_stack, "capture: record Python stacks (Kineto)");
}

// Every flag of the commands but the credentials (AddClientSecurityFlags adds those).
void AddCommandLineFlags(FlagSet* flags, CliOptions* options) {
  AddQueryFlags(flags, options);
  AddCaptureFlags(flags, options);
}

}  // namespace

}  // namespace fleetprof::cli

int main(int argc, char** argv) {
  fleetprof::TuneMalloc();
  using fleetprof::cli::CliOptions;
  CliOptions options;
  if (const char* env = std::getenv("FLEETPROF_SERVER"); env != nullptr && *env != '\0') {
    options.server = env;
  }
  fleetprof::FlagSet flags(fleetprof::cli::CommandsHelp());
  fleetprof::cli::AddCommandLineFlags(&flags, &options);
  fleetprof::ClientSecurityFlags security;
  fleetprof::AddClientSecurityFlags(flags, &security);
  if (absl::Status s = flags.Parse(argc, argv); !s.ok()) {
    return fleetprof::cli::Fail(std::string(s.message()));
  }
  if (auto loaded = fleetprof::LoadClientSecurity(security); loaded.ok()) {
    options.security = *std::move(loaded);
  } else {
    return fleetprof::cli::Fail(std::string(loaded.status().message()));
  }

  const fleetprof::cli::Command* known =
      flags.positional().empty() ? nullptr : fleetprof::cli::FindCommand(flags.positional()[0]);
  if (known != nullptr && flags.help_requested()) {
    std::cout << fleetprof::cli::CommandHelp(*known, flags);
    return 0;
  }
  if (flags.help_requested() || flags.positional().empty()) {
    std::cout << flags.HelpText();
    return flags.help_requested() ? 0 : 2;
  }
  const std::string command = flags.positional()[0];
  if (known != nullptr) {
    if (absl::Status s = fleetprof::cli::CheckCommandFlags(*known, flags); !s.ok()) {
      return fleetprof::cli::Fail(std::string(s.message()));
    }
  }
  const bool local = known != nullptr && known->local;
  if (local) {
    options.args.assign(flags.positional().begin() + 1, flags.positional().end());
    return fleetprof::cli::RunCommand(command, options);
  }
  if (absl::Status s = fleetprof::CheckTokenStaysPrivate(options.server, options.security); !s.ok()) {
    return fleetprof::cli::Fail(std::string(s.message()));
  }
  grpc_init();  // ours to end: see grpc_shutdown_blocking below
  options.args.assign(flags.positional().begin() + 1, flags.positional().end());
  const int rc = fleetprof::cli::RunCommand(command, options);
  // Every channel is gone by now; wait until gRPC has finished with them (a TLS handshake still
  // in flight on its threads when main returned was reported as a leak under ASan, 1 run in
  // ~180 against a server whose CA the CLI was not given).
  grpc_shutdown_blocking();
  return rc;
}
