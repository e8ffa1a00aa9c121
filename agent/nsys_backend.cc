#include "agent/nsys_backend.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "collectors/trace_file_waiter.h"
#include "common/runtime.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

constexpr int64_t kNanosPerMs = 1'000'000;
constexpr int64_t kDefaultDurationMs = 2000;
constexpr int64_t kPollNs = 100 * kNanosPerMs;  // how often a wait looks at cancellation

// Waits `ns` on the capture's clock; false when the agent stops first.
bool WaitFor(CaptureContext& context, int64_t ns) {
  const Clock& clock = context.clock();
  const int64_t until = clock.MonotonicNanos() + ns;
  while (clock.MonotonicNanos() < until) {
    if (context.cancelled()) return false;
    SleepUntil(clock, std::min(until, clock.MonotonicNanos() + kPollNs));
  }
  return !context.cancelled();
}

}  // namespace

std::unique_ptr<CaptureBackend> NsysCaptureBackend::Make(const CaptureBackendDeps& deps) {
  return std::make_unique<NsysCaptureBackend>(deps.nsys.empty() ? NsysCli() : NsysCli(deps.nsys, deps.run_command));
}

absl::StatusOr<CheckedFile> NsysCaptureBackend::Capture(const v1::CaptureCommand& command, CaptureContext& context) {
  const v1::Target& target = command.target();
  const std::string& session = target.address();
  if (!nsys_.available()) {
    return absl::FailedPreconditionError(
        "this agent has no nsys to run the session with: install Nsight Systems on the node and start "
        "fleetprof-agent with --nsys=PATH");
  }
  // The name goes on nsys's command line: as discovery took it, safe characters only.
  if (!IsSafeFileName(session)) {
    return absl::InvalidArgumentError(absl::StrCat("refusing nsys session '", absl::CHexEscape(session),
                                                   "': want 1 to 128 of A-Z a-z 0-9 . _ -"));
  }
  if (command.iterations() > 0) {
    return absl::InvalidArgumentError("an nsys session is captured for a duration (--duration_ms), not by iterations");
  }
  // The user is the discovered process's: read between two checks that the pid still is it.
  if (absl::Status s = context.CheckSameProcess(target); !s.ok()) return s;
  absl::StatusOr<NsysUser> user = NsysUserOfProcess(context.settings().proc_root, target.pid());
  if (!user.ok()) return user.status();
  if (absl::Status s = context.CheckSameProcess(target); !s.ok()) return s;
  // The session writes its report as the job's user: into that user's private folder (0700,
  // a name nobody can guess), which only that user and the agent may enter.
  absl::StatusOr<std::string> folder = context.JobFolderFor(user->uid);
  if (!folder.ok()) return folder.status();
  return Record(command, context, *user, *folder);
}

absl::StatusOr<CheckedFile> NsysCaptureBackend::Record(const v1::CaptureCommand& command, CaptureContext& context,
                                                       const NsysUser& user, const std::string& folder) {
  const std::string& session = command.target().address();
  const std::string& root = context.settings().kineto_dir;
  const std::string dir = absl::StrCat(root, "/", folder);
  const std::string base = absl::StrCat(SafeFileName(command.capture_id()), "-", RandomHex(8));
  const std::string report = absl::StrCat(dir, "/", base, ".nsys-rep");
  const auto cancelled = [&context] { return context.cancelled(); };
  // Every target of the capture starts together.
  const int64_t wait_ns = command.start_time_unix_ns() - context.clock().Now();
  if (wait_ns > 0 && !WaitFor(context, wait_ns)) return absl::CancelledError("the agent is stopping");
  if (absl::Status s = nsys_.Start(session, report, dir, user, cancelled); !s.ok()) return s;
  context.ReportRunning(0, absl::StrCat("nsys session ", session, " collecting"));
  const int64_t duration_ms = command.duration_ms() > 0 ? command.duration_ms() : kDefaultDurationMs;
  const bool waited = WaitFor(context, duration_ms * kNanosPerMs);
  // A session started is stopped whatever happened meanwhile, or it would trace on.
  const absl::Status stopped = nsys_.Stop(session, dir, user);
  const std::string beneath = absl::StrCat(folder, "/", base, ".nsys-rep");
  if (!waited || !stopped.ok()) {
    if (absl::StatusOr<CheckedFile> left = CheckedFile::OpenBeneath(root, beneath, {user.uid}); left.ok()) {
      (void)left->RemoveName();
    }
    if (!waited) return absl::CancelledError("the agent is stopping");
    return stopped;
  }
  // `nsys stop` returns once the report is written; a slower one gets until the deadline.
  absl::StatusOr<std::string> written = WaitForTraceFile(report, context.deadline_ns(), context.clock(), cancelled);
  if (!written.ok()) return written.status();
  absl::StatusOr<CheckedFile> rep = CheckedFile::OpenBeneath(root, beneath, {user.uid});
  if (!rep.ok()) return rep.status();
  context.ReportRunning(0, "exporting the nsys report to SQLite");
  absl::StatusOr<CheckedFile> sqlite = nsys_.ExportAndOpen(report, root, folder, base + ".sqlite", user,
                                                           context.settings().max_trace_bytes, cancelled);
  if (absl::Status removed = rep->RemoveName(); !removed.ok()) {
    spdlog::warn("capture {}: {}", command.capture_id(), std::string(removed.message()));
  }
  return sqlite;
}

}  // namespace fleetprof
