#include "agent/kineto_backend.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "collectors/kineto_start.h"
#include "collectors/trace_file_waiter.h"
#include "common/kineto_timing.h"
#include "common/runtime.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

constexpr int64_t kNanosPerMs = 1'000'000;
// How often a pending hand-out is looked at for the agent stopping or the deadline passing.
constexpr int64_t kHandoutPollNs = 200 * kNanosPerMs;

// The config a capture hands the job: the file in its user's folder, the shared start.
KinetoTraceRequest RequestFor(const v1::CaptureCommand& command, const std::string& log_file) {
  KinetoTraceRequest request;
  request.log_file = log_file;
  request.duration_ms = command.iterations() > 0 ? 0 : command.duration_ms();
  request.iterations = command.iterations();
  request.start_time_unix_ms = command.start_time_unix_ns() / kNanosPerMs;
  // Said explicitly: the shared start and the hand-out checks plan with this warm-up.
  if (request.iterations == 0) request.warmup_secs = kKinetoWarmupSecs;
  request.record_shapes = command.record_shapes();
  request.profile_memory = command.profile_memory();
  request.with_stack = command.with_stack();
  request.trace_id = command.capture_id();
  return request;
}

}  // namespace

std::unique_ptr<CaptureBackend> KinetoCaptureBackend::Make(const CaptureBackendDeps& deps) {
  return std::make_unique<KinetoCaptureBackend>(deps.kineto);
}

absl::StatusOr<CheckedFile> KinetoCaptureBackend::Capture(const v1::CaptureCommand& command,
                                                          CaptureContext& context) {
  const v1::Target& target = command.target();
  const std::string& kineto_dir = context.settings().kineto_dir;
  if (kineto_ == nullptr) {
    return absl::FailedPreconditionError("this agent's Kineto endpoint is not running (socket held by another daemon?)");
  }
  // The target is the registration of pid (the kernel's) that started at start_ticks; its
  // uid is the kernel's too (SCM_CREDENTIALS at registration).
  std::optional<KinetoProcess> process;
  for (KinetoProcess& known : kineto_->Processes()) {
    if (known.pid == target.pid() && known.start_ticks == target.start_ticks()) process = std::move(known);
  }
  if (!process.has_value()) {
    return absl::NotFoundError(absl::StrCat("no process matched: pid ", target.pid(),
                                            " (as discovered) no longer polls this agent's Kineto endpoint"));
  }
  // The job writes the file itself, into a folder only its user and we may enter, under a
  // name nobody can predict: another user can neither read it nor put one there first.
  absl::StatusOr<std::string> folder = context.JobFolderFor(process->uid);
  if (!folder.ok()) return folder.status();
  const std::string file_name = absl::StrCat(SafeFileName(command.capture_id()), "-", RandomHex(8), ".json");
  const KinetoTraceRequest request = RequestFor(command, absl::StrCat(kineto_dir, "/", *folder, "/", file_name));
  context.ClaimTraceFile(request.log_file);  // uploaded by the runner, not adopted as a dynolog request's
  absl::StatusOr<KinetoTrigger> triggered =
      kineto_->TriggerProcess(target.pid(), target.start_ticks(), request, !command.start_time_fixed());
  absl::StatusOr<int64_t> moved_ns =
      triggered.ok() ? AwaitHandout(command, *triggered, request, context) : triggered.status();
  if (!moved_ns.ok()) return moved_ns.status();
  // libkineto's rule, on the whole path as the job applies it: with the pid the job knows
  // itself by (its pod's numbering).
  const std::string trace_path = KinetoTracePath(request.log_file, triggered->process.ns_pid);
  // A start moved later moves the end of the wait with it.
  auto trace = WaitForTraceFile(trace_path, context.deadline_ns() + *moved_ns, context.clock(),
                                [&context] { return context.cancelled(); });
  if (!trace.ok()) return trace.status();
  // Reached without following a link, and only a plain file of the traced process's user.
  return CheckedFile::OpenBeneath(kineto_dir, trace_path.substr(kineto_dir.size() + 1), {process->uid});
}

absl::Status KinetoCaptureBackend::AwaitWarmupBound(const v1::CaptureCommand& command, const KinetoTrigger& trigger,
                                                   const KinetoTraceRequest& request, CaptureContext& context) {
  std::optional<int64_t> last_ms = LastHandOutMs(request);
  if (!last_ms) return absl::OkStatus();
  const Clock& clock = context.clock();
  // The last hand-out moment is on the wall clock; the wait runs on the monotonic one.
  const int64_t until_ns =
      std::min(clock.MonotonicNanos() + (*last_ms * kNanosPerMs - clock.Now()), context.deadline_ns());
  if (trigger.handout->WaitUntil(clock, until_ns).state != KinetoHandout::State::kPending) return absl::OkStatus();
  const int32_t pid = trigger.process.pid;
  const std::string why = kineto_->WhyPending(pid);
  if (!command.start_time_fixed()) {
    context.ReportRunning(0, absl::StrCat("the job has not taken its config yet: ", why,
                                          "; its trace starts when it does, after its warm-up"));
    return absl::OkStatus();
  }
  if (!kineto_->Withdraw(pid, trigger.handout)) return absl::OkStatus();  // taken meanwhile
  return absl::FailedPreconditionError(absl::StrCat(
      "the job had not taken its config ", KinetoWarmupMs(request), " ms before the start that was asked for (",
      why,
      "): libkineto would not start tracing (insufficient time for warmup), so the agent withdrew it; without "
      "--start_delay_ms the agent moves a late job's start instead"));
}

absl::StatusOr<int64_t> KinetoCaptureBackend::AwaitHandout(const v1::CaptureCommand& command,
                                                           const KinetoTrigger& trigger,
                                                           const KinetoTraceRequest& request, CaptureContext& context) {
  if (absl::Status s = AwaitWarmupBound(command, trigger, request, context); !s.ok()) return s;
  const Clock& clock = context.clock();
  const int32_t pid = trigger.process.pid;
  KinetoHandout::Status handout;
  while (true) {
    handout = trigger.handout->WaitUntil(clock, std::min(clock.MonotonicNanos() + kHandoutPollNs, context.deadline_ns()));
    if (handout.state != KinetoHandout::State::kPending) break;
    const bool stopping = context.cancelled();
    if (!stopping && clock.MonotonicNanos() < context.deadline_ns()) continue;
    const std::string why = kineto_->WhyPending(pid);
    if (kineto_->Withdraw(pid, trigger.handout)) {
      if (stopping) return absl::CancelledError("the agent is stopping");
      return absl::DeadlineExceededError(
          absl::StrCat("the job never took its config before the capture's deadline: ", why));
    }
  }
  switch (handout.state) {
    case KinetoHandout::State::kHandedOut:
      break;
    case KinetoHandout::State::kWithdrawn:
      return absl::CancelledError("the config was withdrawn");
    default:
      return absl::FailedPreconditionError(handout.reason);
  }
  if (!handout.moved) return 0;
  const int64_t start_ns = handout.start_time_unix_ms * kNanosPerMs;
  spdlog::info("capture {} of pid {}: {}", command.capture_id(), pid, handout.reason);
  context.ReportRunning(start_ns, handout.reason);
  return std::max<int64_t>(0, start_ns - command.start_time_unix_ns());
}

}  // namespace fleetprof
