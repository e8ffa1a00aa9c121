#include "agent/xprof_backend.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "collectors/job_network.h"
#include "collectors/process_jobs.h"
#include "collectors/xprof_client.h"
#include "common/text_checks.h"

namespace fleetprof {
namespace {

constexpr int64_t kNanosPerMs = 1'000'000;
constexpr int64_t kDefaultDurationMs = 2000;

// Each connection to an address a job gave is made from inside the job's network namespace,
// and only while the pid is still the process discovered (checked on both sides of the
// connect: a process alive at both ends was the same throughout, its pid cannot be reused).
std::function<absl::StatusOr<int>()> ConnectThroughJob(const v1::Target& target, CaptureContext& context) {
  return [&context, target]() -> absl::StatusOr<int> {
    if (absl::Status s = context.CheckSameProcess(target); !s.ok()) return s;
    absl::StatusOr<int> fd =
        ConnectInJobNetwork(context.settings().proc_root, target.pid(), target.address(), 5000);
    if (!fd.ok()) return fd;
    if (absl::Status s = context.CheckSameProcess(target); !s.ok()) {
      ::close(*fd);
      return s;
    }
    return fd;
  };
}

// The job's own file: reached beneath its folder without following a link anywhere (the job
// could swap its session folder for one), owned by the job's user, of a size we take.
absl::StatusOr<CheckedFile> OpenJobsTrace(const std::string& job_root, const std::string& trace, int64_t job_uid,
                                          const v1::Target& target, const CaptureSettings& settings) {
  absl::StatusOr<CheckedFile> file = CheckedFile::OpenBeneath(job_root, trace.substr(job_root.size() + 1), {job_uid});
  if (!file.ok()) return file.status();
  if (file->size_bytes() > settings.max_trace_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("the trace ", target.address(), " wrote is ", file->size_bytes(),
                                                     " bytes, more than this agent takes (--max_trace_mb=",
                                                     settings.max_trace_bytes >> 20, ")"));
  }
  return file;
}

}  // namespace

std::unique_ptr<CaptureBackend> XprofCaptureBackend::Make(const CaptureBackendDeps& deps) {
  return std::make_unique<XprofCaptureBackend>(deps.xprof);
}

absl::StatusOr<CheckedFile> XprofCaptureBackend::Capture(const v1::CaptureCommand& command,
                                                         CaptureContext& context) {
  const v1::Target& target = command.target();
  const CaptureSettings& settings = context.settings();
  if (!call_) return absl::FailedPreconditionError("this agent has no XLA profiler service client");
  if (!IsHostPort(target.address())) {
    return absl::InvalidArgumentError(absl::StrCat("refusing xprof address '", absl::CHexEscape(target.address()),
                                                   "': want HOST:PORT"));
  }
  XprofCaptureOptions xprof;
  xprof.address = target.address();
  xprof.duration_ms = command.duration_ms() > 0 ? command.duration_ms() : kDefaultDurationMs;
  xprof.start_timestamp_ns = command.start_time_unix_ns();
  xprof.delay_ms = std::max<int64_t>(0, (command.start_time_unix_ns() - context.clock().Now()) / kNanosPerMs);
  xprof.repository_root = settings.xprof_dir;
  // One session folder per target, so two XLA jobs on one node never share a file. Its
  // name comes from the server and another process's environment: only safe characters
  // reach the path, so it stays one folder directly under the agent's xprof folder.
  xprof.session_id = SafeFileName(absl::StrCat(command.capture_id(), "_", target.address()));
  xprof.host_name = settings.node;
  xprof.clock = &context.clock();
  // Written by this agent (the trace came in the response) or by the job's profiler
  // server (older servers write the file themselves): then it must be the job's user's.
  std::vector<int64_t> owners = {static_cast<int64_t>(::geteuid())};
  if (target.pid() > 0) {
    // The address came from the job's environment: only its own profiler server, reached
    // from inside its network namespace (collectors/job_network.h), and only while the pid
    // is still the process discovered: checked before the address check and the uid are read.
    if (absl::Status s = context.CheckSameProcess(target); !s.ok()) return s;
    const int64_t uid = ProcessUid(settings.proc_root, target.pid());
    if (absl::Status s = CheckJobProfilerAddress(settings.proc_root, target.pid(), target.address()); !s.ok()) {
      return s;
    }
    if (absl::Status s = context.CheckSameProcess(target); !s.ok()) return s;
    if (uid >= 0) owners.push_back(uid);
    xprof.connect = ConnectThroughJob(target, context);
  }
  // A job that sees our files writes its trace itself, into its user's own folder, and the
  // agent reads that file (bounded, streamed to the server) instead of taking the whole trace
  // as one message. The agent writes nothing there: an answer that carries the trace anyway
  // is saved in the agent's own folder.
  std::string job_root;
  if (target.pid() > 0 && owners.size() == 2 && SharesOurFilesystem(settings.proc_root, target.pid())) {
    absl::StatusOr<std::string> folder = context.JobFolderFor(owners[1]);
    if (!folder.ok()) return folder.status();
    job_root = absl::StrCat(settings.kineto_dir, "/", *folder);
    xprof.save_root = xprof.repository_root;
    xprof.repository_root = job_root;
    xprof.emit_xspace = false;
  }
  absl::StatusOr<int64_t> budget = context.ReserveTraceBytes();
  if (!budget.ok()) return budget.status();
  xprof.max_trace_bytes = *budget;
  absl::StatusOr<std::string> trace = call_(xprof, [&context] { return context.cancelled(); });
  if (!trace.ok()) return trace.status();
  if (job_root.empty() || !trace->starts_with(job_root + "/")) return CheckedFile::Open(*trace, owners);
  return OpenJobsTrace(job_root, *trace, owners[1], target, settings);
}

}  // namespace fleetprof
