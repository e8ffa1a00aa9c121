// fleetprof: the command-line client. `fleetprof COMMAND [ARGS] [--flags]`; flags may stand
// before or after the command and its arguments.

#include <cstdlib>
#include <iostream>

#include "client/cli.h"
#include "common/flags.h"

namespace fleetprof::cli {
namespace {

constexpr char kUsage[] =
    "fleetprof: query and feed a fleetprof-server, or analyse a trace offline.\n"
    "\n"
    "Usage: fleetprof COMMAND [ARGS] [--server HOST:PORT] [--json]\n"
    "\n"
    "Commands:\n"
    "  analyze FILE                       analyse a trace file locally (no server)\n"
    "  upload FILE --job J [--node N] [--label k=v]...\n"
    "                                     store a trace on the server; prints its profile id\n"
    "  profiles [--job J] [--label k=v]   list stored profiles, newest first\n"
    "  profile PROFILE                    everything stored about one profile (steps, memory,\n"
    "                                     device samples of a capture window)\n"
    "  ops PROFILE                        op breakdown (the key_averages() view)\n"
    "  kernels PROFILE                    kernel breakdown, merged across devices\n"
    "  breakdown PROFILE                  per-device busy/idle/compute/communication/memory time\n"
    "  agents                             node agents and the targets they see\n"
    "  capture --job J [--node N] [--target T] [--duration_ms MS | --iterations N] [--wait]\n"
    "                                     capture running jobs now; --wait follows progress\n"
    "                                     (stderr) and exits 0 when all indexed, 3 if partial\n"
    "  captures [--job J]                 recent captures, newest first\n"
    "  delete PROFILE                     remove a profile and all stored for it (admin)\n"
    "  trace PROFILE [--start_ns N --end_ns N] [--resolution_ns N] [--track ID]... [--search S] [--args]\n"
    "                                     the events of a time window (default: all of it), exact\n"
    "                                     down to the resolution, shorter ones counted in blocks\n"
    "  export PROFILE -o FILE [--format original|chrome_json] [--start_ns N --end_ns N]\n"
    "                                     the profile as a file: the trace exactly as uploaded, or\n"
    "                                     its events (a window of them) as Chrome-trace JSON for\n"
    "                                     Perfetto / chrome://tracing\n"
    "  diff BASE PROFILE [PROFILE...] [--by op|kernel|scope]\n"
    "                                     profiles side by side against BASE; --by scope pairs work\n"
    "                                     by its enclosing record_function / user annotation\n"
    "  job-ops JOB [--label k=v] [--since_ns A] [--until_ns B]\n"
    "                                     ops and kernels of every matching profile added up\n"
    "  job-series JOB [...same filters]   per profile: rank, step time, busy ratio, peak memory\n"
    "  diagnose PROFILE | --job J [--threshold RULE=VALUE]...\n"
    "                                     named rules (idle device, tiny kernels, syncs, compiles,\n"
    "                                     memory, stragglers...) with evidence and suggestions\n"
    "  schedule --job J --every DURATION [--duration_ms MS] [--node N]\n"
    "                                     capture the job every DURATION (30m, 2h, 45s), kept by the\n"
    "                                     server across restarts; a run while a capture of the job\n"
    "                                     is still running, or a missed one, is skipped\n"
    "  schedules [--job J]                the schedules, next run and last outcome\n"
    "  unschedule SCHEDULE_ID             stop a schedule\n"
    "\n"
    "Traces: PyTorch/Kineto JSON (.json, .json.gz) and XSpace (.xplane.pb).\n"
    "The server address can also come from $FLEETPROF_SERVER, the token from $FLEETPROF_TOKEN.";

int Dispatch(const std::string& command, const CliOptions& options) {
  if (command == "analyze") return RunAnalyze(options);
  if (command == "upload") return RunUpload(options);
  if (command == "profiles") return RunProfiles(options);
  if (command == "ops") return RunOps(options);
  if (command == "kernels") return RunKernels(options);
  if (command == "breakdown") return RunBreakdown(options);
  if (command == "agents") return RunAgents(options);
  if (command == "capture") return RunCapture(options);
  if (command == "captures") return RunCaptures(options);
  if (command == "profile") return RunProfile(options);
  if (command == "export") return RunExport(options);
  if (command == "trace") return RunTrace(options);
  if (command == "delete") return RunDelete(options);
  if (command == "diff") return RunDiff(options);
  if (command == "job-ops") return RunJobOps(options);
  if (command == "job-series") return RunJobSeries(options);
  if (command == "diagnose") return RunDiagnose(options);
  if (command == "schedule") return RunSchedule(options);
  if (command == "schedules") return RunSchedules(options);
  if (command == "unschedule") return RunUnschedule(options);
  return Fail("unknown command '" + command + "' (see fleetprof --help)");
}

}  // namespace

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

}  // namespace fleetprof::cli

int main(int argc, char** argv) {
  using fleetprof::cli::CliOptions;
  CliOptions options;
  if (const char* env = std::getenv("FLEETPROF_SERVER"); env != nullptr && *env != '\0') {
    options.server = env;
  }
  fleetprof::FlagSet flags(fleetprof::cli::kUsage);
  flags.AddString("server", &options.server, "fleetprof-server gRPC address");
  flags.AddBool("json", &options.json, "print one JSON object instead of a table");
  flags.AddString("job", &options.job, "job name (upload: the profile's job; profiles: filter)");
  flags.AddString("node", &options.node, "node name for upload (default: this host)");
  flags.AddString("format", &options.format,
                  "upload: kineto_json or xspace (default: detect); export: original (default) or chrome_json");
  flags.AddString("o", &options.output, "export: the file to write");
  flags.AddInt("start_ns", &options.start_ns, "trace, export: window start in the trace's ns (default: its start)");
  flags.AddInt("end_ns", &options.end_ns, "trace, export: window end, exclusive (default: the trace's end)");
  flags.AddInt("resolution_ns", &options.resolution_ns,
               "trace: events shorter than this are counted in merged blocks (default: window / 2000)");
  flags.AddRepeated("track", &options.tracks, "trace: only this track id (see the tracks of a first query)");
  flags.AddString("search", &options.search, "trace: only events whose name contains this (any case)");
  flags.AddBool("args", &options.args_wanted, "trace: each event's arguments (category, kind, correlation)");
  flags.AddString("by", &options.by, "diff: op (default), kernel or scope (enclosing user annotation)");
  flags.AddInt("since_ns", &options.since_ns, "job-ops, job-series, diagnose --job: profiles ending at or after this");
  flags.AddInt("until_ns", &options.until_ns, "job-ops, job-series, diagnose --job: profiles starting at or before this");
  options.trace_limits.AddFlags(&flags);
  flags.AddString("every", &options.every, "schedule: how often to capture, e.g. 30m, 2h, 45s");
  flags.AddRepeated("threshold", &options.thresholds, "diagnose: RULE=VALUE replaces a rule's default threshold");
  flags.AddString("upload_id", &options.upload_id,
                  "upload id; the same id twice stores the file once (default: random)");
  flags.AddRepeated("label", &options.labels, "key=value label (upload: attach; profiles: filter)");
  flags.AddInt("limit", &options.limit, "rows to print in tables (0: 30)");
  flags.AddInt("timeout_s", &options.timeout_s, "deadline of each query, seconds");
  flags.AddString("target", &options.target, "capture: only this target (xprof:HOST:PORT, kineto:pid=N)");
  flags.AddInt("duration_ms", &options.duration_ms, "capture: how long to trace (default 2000)");
  flags.AddInt("iterations", &options.iterations, "capture: trace this many iterations (Kineto)");
  flags.AddInt("start_delay_ms", &options.start_delay_ms, "capture: shared start this far in the future");
  flags.AddBool("wait", &options.wait, "capture: follow progress until every target is done");
  flags.AddInt("capture_timeout_ms", &options.capture_timeout_ms,
               "capture: give up on a target this long after the start (default max(60 s, 2 x duration))");
  flags.AddBool("record_shapes", &options.record_shapes, "capture: record input shapes (Kineto)");
  flags.AddBool("profile_memory", &options.profile_memory, "capture: record allocations (Kineto)");
  flags.AddBool("with_stack", &options.with_stack, "capture: record Python stacks (Kineto)");
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

  if (flags.help_requested() || flags.positional().empty()) {
    std::cout << flags.HelpText();
    return flags.help_requested() ? 0 : 2;
  }
  const std::string command = flags.positional()[0];
  if (absl::Status s = fleetprof::CheckTokenStaysPrivate(options.server, options.security);
      !s.ok() && command != "analyze") {
    return fleetprof::cli::Fail(std::string(s.message()));
  }
  options.args.assign(flags.positional().begin() + 1, flags.positional().end());
  return fleetprof::cli::Dispatch(command, options);
}
