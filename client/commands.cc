#include "client/commands.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "analysis/trace_limits.h"
#include "client/declared_call.h"
#include "common/clock.h"

namespace fleetprof::cli {
namespace {

constexpr size_t kUsageColumn = 37;  // where the descriptions start in --help

}  // namespace

const std::vector<Command>& Commands() {
  static const auto* commands = new std::vector<Command>{
      {"analyze", "FILE", "analyse a trace file locally (no server)", RunAnalyze, nullptr, "limit @limits",
       /*local=*/true},
      {"stats", "PROFILE|FILE [--report R[,R…]] [--format csv]",
       "the nsys stats reports (kernels, memory ops by time and size,\nCUDA API, NVTX) of a profile, or of a file analysed here",
       RunStats, nullptr, "report format limit @limits"},
      {"upload", "FILE --job J [--node N] [--label k=v]... [--format F]",
       "store a trace on the server; prints its profile id", RunUpload, nullptr, "job node label format upload_id"},
      {"profiles", "[--job J] [--label k=v]", "list stored profiles, newest first", RunProfiles, nullptr, "job label limit"},
      {"jobs", "[--label k=v]", "jobs with stored profiles, most recently profiled first", nullptr,
       "fleetprof.v1.QueryService.ListJobs"},
      {"profile", "PROFILE_ID", "everything stored about one profile (steps, memory,\ndevice samples of a capture window)",
       RunProfile, nullptr, "limit"},
      {"ops", "PROFILE_ID [--limit N]", "op breakdown (the key_averages() view)", RunOps, nullptr, "limit"},
      {"kernels", "PROFILE_ID [--limit N]", "kernel breakdown, merged across devices", RunKernels, nullptr, "limit"},
      {"breakdown", "PROFILE_ID", "per-device busy/idle/compute/communication/memory time", RunBreakdown, nullptr, ""},
      {"agents", "", "node agents and the targets they see", RunAgents, nullptr, ""},
      {"cluster", "", "the server's replicas, the leader, agents per replica,\ncatalog and object-store health",
       nullptr, "fleetprof.v1.ClusterService.GetCluster"},
      {"capture", "--job J [--node N] [--target T] [--duration_ms MS | --iterations N] [--wait]",
       "capture running jobs now; --wait follows progress\n(stderr) and exits 0 when all indexed, 3 if partial",
       [](const CliOptions& options) { return RunCapture(options, RealClock()); }, nullptr,
       "job node target duration_ms iterations start_delay_ms wait capture_timeout_ms record_shapes profile_memory with_stack"},
      {"captures", "[--job J]", "recent captures, newest first", RunCaptures, nullptr, "job limit"},
      {"delete", "PROFILE_ID", "remove a profile and all stored for it (admin)", RunDelete, nullptr, ""},
      {"trace", "PROFILE_ID [--start_ns N --end_ns N] [--resolution_ns N] [--track ID]... [--search S] [--args]",
       "the events of a time window (default: all of it), exact\ndown to the resolution, shorter ones counted in "
       "blocks",
       RunTrace, nullptr, "start_ns end_ns resolution_ns track search args"},
      {"export", "PROFILE_ID -o FILE [--format original|chrome_json|pprof] [--start_ns N --end_ns N]",
       "the profile as a file: the trace exactly as uploaded, its\nevents (a window of them) as Chrome-trace JSON "
       "for\nPerfetto / chrome://tracing, or its call tree as a gzipped\npprof profile (go tool pprof, speedscope)",
       RunExport, nullptr, "o format start_ns end_ns"},
      {"diff", "BASE PROFILE [PROFILE...] [--by op|kernel|scope]",
       "profiles side by side against BASE; --by scope pairs work\nby its enclosing record_function / user annotation",
       RunDiff, nullptr, "by limit"},
      {"job-ops", "JOB [--label k=v] [--since_ns A] [--until_ns B]",
       "ops and kernels of every matching profile added up", RunJobOps, nullptr, "label since_ns until_ns limit"},
      {"job-series", "JOB [--label k=v] [--since_ns A] [--until_ns B]",
       "per profile: rank, step time, busy ratio, peak memory", RunJobSeries, nullptr, "label since_ns until_ns"},
      {"job-trace", "JOB (--capture_id C | --profile ID...) [window flags of trace]",
       "every rank of a capture in one trace window, on the lowest\nrank's clock (offsets from the ranks' collectives)",
       RunJobTrace, nullptr, "capture_id profile start_ns end_ns resolution_ns track search args"},
      {"collectives", "JOB (--capture_id C | --profile ID...) [--limit N]",
       "collectives matched across ranks: each rank's wait, who\narrives last, communication no compute covers",
       RunCollectives, nullptr, "capture_id profile limit"},
      {"diagnose", "PROFILE | --job J [--threshold RULE=VALUE]...",
       "named rules (idle device, tiny kernels, syncs, compiles,\nmemory, stragglers...) with evidence and suggestions",
       RunDiagnose, nullptr, "job label since_ns until_ns threshold"},
      {"schedule", "--job J --every DURATION [--duration_ms MS] [--node N]",
       "capture the job every DURATION (30m, 2h, 45s), kept by the\nserver across restarts; a run while a capture of "
       "the job\nis still running, or a missed one, is skipped",
       RunSchedule, nullptr, "job every duration_ms node"},
      {"regressions", "[--job J]",
       "profiles slower than their job's last 20 (step time, top\nkernels and ops past 3 scaled MADs and 5%), newest first",
       nullptr, "fleetprof.v1.QueryService.ListRegressions"},
      {"sampling", "[set --every D --duration_ms MS --max_overhead P% [--label k=v]... [--max_concurrent N] | off]",
       "always-on profiling: each period capture live targets at random,\nevery target with the same probability, "
       "within P% of the\nfleet's device-time; without set/off: the policy and its counters",
       RunSampling, nullptr, "every duration_ms max_overhead label max_concurrent"},
      {"fleet", "top [--by kernel|op|job|node|device_type] [--since D] [--label k=v]... [--limit N]",
       "where the fleet's device-time went, estimated from the sampled\nprofiles: device-time, 95% interval, share and "
       "samples per\nrow, with busy and idle totals (default --by kernel, --since 24h)",
       RunFleet, nullptr, "by since label limit"},
      {"schedules", "[--job J]", "the schedules, next run and last outcome", RunSchedules, nullptr, "job"},
      {"trigger", "add --job J --when EXPR [--duration_ms MS] [--cooldown D] | rm TRIGGER_ID",
       "capture the job when EXPR holds: device_utilization < N% for D,\ndevice_memory > N% for D (on the agents' "
       "NVML samples),\nrule NAME (a diagnosis rule on a new profile), regression;\nat most once per cooldown "
       "(default 10m)",
       RunTrigger, nullptr, "job when duration_ms cooldown"},
      {"triggers", "[--job J]", "the triggers, how often each fired and what fired it last", RunTriggers, nullptr, "job"},
      {"unschedule", "SCHEDULE_ID", "stop a schedule", RunUnschedule, nullptr, ""},
  };
  return *commands;
}

std::string CommandsHelp() {
  std::string help =
      "fleetprof: query and feed a fleetprof-server, or analyse a trace offline.\n"
      "\n"
      "Usage: fleetprof COMMAND [ARGS] [--server HOST:PORT] [--json]   (fleetprof COMMAND --help: its flags)\n"
      "\n"
      "Commands:\n";
  const std::string indent(kUsageColumn, ' ');
  for (const Command& command : Commands()) {
    std::string head = "  " + std::string(command.name) + (*command.usage != '\0' ? " " : "") + command.usage;
    // A long synopsis takes its own line; the description starts below it.
    head += head.size() + 1 <= kUsageColumn ? std::string(kUsageColumn - head.size(), ' ') : "\n" + indent;
    help += head;
    for (const char* c = command.what; *c != '\0'; ++c) help += *c == '\n' ? "\n" + indent : std::string(1, *c);
    help += "\n";
  }
  help +=
      "\n"
      "Traces: PyTorch/Kineto JSON (.json, .json.gz) and XSpace (.xplane.pb).\n"
      "The server address can also come from $FLEETPROF_SERVER, the token from $FLEETPROF_TOKEN.";
  return help;
}

int FailUsage(const std::string& name) {
  for (const Command& command : Commands()) {
    if (name == command.name) {
      return Fail("usage: fleetprof " + name + (*command.usage != '\0' ? " " : "") + command.usage + " [--json]");
    }
  }
  return Fail("usage: fleetprof " + name);
}

const Command* FindCommand(const std::string& name) {
  const auto& commands = Commands();
  auto it = std::find_if(commands.begin(), commands.end(), [&](const Command& c) { return name == c.name; });
  return it == commands.end() ? nullptr : &*it;
}

std::set<std::string> CommandFlags(const Command& command, const FlagSet& all) {
  std::set<std::string> names;
  if (command.method != nullptr) {
    for (const std::string& name : DeclaredCallFlags(command.method)) names.insert(name);
    return names;
  }
  for (const std::string& name : std::vector<std::string>(absl::StrSplit(command.flags, ' ', absl::SkipEmpty()))) {
    if (name != "@limits") {
      names.insert(name);
      continue;
    }
    FlagSet limits("");
    analysis::TraceLimits unused;
    unused.AddFlags(&limits);
    for (const std::string& limit : limits.names()) names.insert(limit);
  }
  return names;
}

std::string CommandHelp(const Command& command, const FlagSet& all) {
  std::string help = absl::StrCat("Usage: fleetprof ", command.name, *command.usage != '\0' ? " " : "", command.usage,
                                  " [--json]\n\n");
  for (const char* c = command.what; *c != '\0'; ++c) help += *c == '\n' ? ' ' : *c;
  const std::set<std::string> own = CommandFlags(command, all);
  absl::StrAppend(&help, "\n\nFlags:\n", own.empty() ? "  (none of its own)\n" : all.FlagLines(own),
                  "\nCommon flags:\n", all.FlagLines(std::set<std::string>(std::begin(kCommonFlags), std::end(kCommonFlags))));
  return help;
}

absl::Status CheckCommandFlags(const Command& command, const FlagSet& all) {
  const std::set<std::string> own = CommandFlags(command, all);
  const std::set<std::string> common(std::begin(kCommonFlags), std::end(kCommonFlags));
  for (const std::string& name : all.given()) {
    if (own.contains(name) || common.contains(name)) continue;
    std::vector<std::string> spelled;
    for (const std::string& flag : own) spelled.push_back("--" + flag);
    return absl::InvalidArgumentError(absl::StrCat(
        command.name, " does not take --", name, ": ",
        spelled.empty() ? absl::StrCat(command.name, " takes only the common flags")
                        : absl::StrCat("its flags are ", absl::StrJoin(spelled, ", ")),
        " (and --server, --json, --timeout_s, --token_file, --tls_*; see fleetprof ", command.name, " --help)"));
  }
  return absl::OkStatus();
}

int RunCommand(const std::string& name, const CliOptions& options) {
  const Command* command = FindCommand(name);
  if (command == nullptr) return Fail("unknown command '" + name + "' (see fleetprof --help)");
  return command->run != nullptr ? command->run(options) : RunDeclaredCall(command->name, command->method, options);
}

}  // namespace fleetprof::cli
