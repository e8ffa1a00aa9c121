#include "agent/capture_runner.h"

#include <cstdlib>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/clock_sync_labels.h"
#include "rpc/uploader.h"
#include "collectors/job_network.h"
#include "collectors/kineto_start.h"
#include "common/kineto_timing.h"
#include "collectors/process_jobs.h"
#include "collectors/trace_file_waiter.h"
#include "collectors/xprof_client.h"
#include "common/runtime.h"
#include "common/safe_paths.h"
#include "common/text_checks.h"
#include "common/threads.h"
#include "absl/strings/escaping.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

constexpr int64_t kNanosPerMs = 1'000'000;
// How long a dynolog-requested trace may take to be written after its duration ends.
constexpr int64_t kDynoTraceWriteMarginMs = 60'000;
// An iteration trace's length is the job's steps': this is the wait for one.
constexpr int64_t kDynoIterationTraceWaitMs = 5 * 60'000;

std::string TargetLabel(const v1::CaptureCommand& command) {
  return command.target_name().empty() ? command.target().address() : command.target_name();
}

}  // namespace

CaptureRunner::CaptureRunner(Options options, Uploader upload, KinetoEndpoint* kineto, Sender send)
    : options_(std::move(options)), upload_(std::move(upload)), kineto_(kineto), send_(std::move(send)) {}

CaptureRunner::~CaptureRunner() {
  std::list<Worker> workers;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    workers.swap(workers_);
  }
  for (auto& w : workers) w.thread.join();
}

bool CaptureRunner::cancelled() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

absl::Status CaptureRunner::Spawn(std::function<void()> work, std::optional<int64_t> dyno_uid) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("the agent is stopping");
  size_t captures = 0, dyno_waits = 0, dyno_waits_of_uid = 0;
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = workers_.erase(it);
      continue;
    }
    if (!it->dyno_uid.has_value()) {
      ++captures;
    } else {
      ++dyno_waits;
      if (it->dyno_uid == dyno_uid) ++dyno_waits_of_uid;
    }
    ++it;
  }
  if (!dyno_uid.has_value() && captures >= kMaxWorkers) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the agent already runs ", kMaxWorkers, " captures and trace uploads; try again later"));
  }
  if (dyno_uid.has_value() && dyno_waits_of_uid >= kMaxDynoWaitsPerUid) {
    return absl::ResourceExhaustedError(absl::StrCat("uid ", *dyno_uid, " already has ", kMaxDynoWaitsPerUid,
                                                     " dynolog-requested traces in flight"));
  }
  if (dyno_uid.has_value() && dyno_waits >= kMaxDynoWaits) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the agent already waits for ", kMaxDynoWaits, " dynolog-requested traces"));
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  auto thread = StartThread("a capture thread", [work = std::move(work), done] {
    work();
    done->store(true);
  });
  if (!thread.ok()) return thread.status();
  workers_.push_back(Worker{*std::move(thread), done, dyno_uid});
  return absl::OkStatus();
}

void CaptureRunner::Run(const v1::CaptureCommand& sent) {
  const v1::CaptureCommand command = OnThisNodesClock(sent);
  if (absl::Status s = Spawn([this, command] { Execute(command); }); !s.ok()) {
    spdlog::warn("capture {} of {} not started: {}", command.capture_id(), TargetLabel(command),
                 std::string(s.message()));
    Report(command, v1::CaptureTarget::FAILED, "", std::string(s.message()));
  }
}

v1::CaptureCommand CaptureRunner::OnThisNodesClock(const v1::CaptureCommand& sent) const {
  std::optional<ClockSync> sync = options_.clock_sync ? options_.clock_sync() : std::nullopt;
  // Within kTrustedSkewNs the times stay as sent: the nodes' own synced clocks align ranks
  // better than a probe's estimate. Beyond it the server's clock is off (a replica 300 s
  // behind would make every capture late, or past its deadline at once): its times are moved
  // onto this node's clock by the measured offset.
  if (!sync || std::abs(sync->offset_ns) <= kTrustedSkewNs) return sent;
  v1::CaptureCommand command = sent;
  if (command.start_time_unix_ns() > 0) command.set_start_time_unix_ns(command.start_time_unix_ns() - sync->offset_ns);
  if (command.deadline_unix_ns() > 0) command.set_deadline_unix_ns(command.deadline_unix_ns() - sync->offset_ns);
  spdlog::warn("capture {}: the server's clock is {} ms {} this node's; its start and deadline are moved onto this "
               "node's clock (check NTP)",
               sent.capture_id(), std::abs(sync->offset_ns) / kNanosPerMs, sync->offset_ns > 0 ? "ahead of" : "behind");
  return command;
}

void CaptureRunner::Report(const v1::CaptureCommand& command, v1::CaptureTarget::State state,
                           const std::string& profile_id, const std::string& error, int64_t start_time_unix_ns,
                           const std::string& note) {
  v1::AgentMessage message;
  v1::CaptureUpdate* update = message.mutable_capture_update();
  update->set_capture_id(command.capture_id());
  update->set_target(command.target_name());
  update->set_state(state);
  update->set_profile_id(profile_id);
  update->set_error(error);
  // A start moved onto this node's clock (OnThisNodesClock) goes back onto the server's.
  std::optional<ClockSync> sync = options_.clock_sync ? options_.clock_sync() : std::nullopt;
  if (start_time_unix_ns > 0 && sync && std::abs(sync->offset_ns) > kTrustedSkewNs) start_time_unix_ns += sync->offset_ns;
  update->set_start_time_unix_ns(start_time_unix_ns);
  update->set_note(note);
  send_(message);
}

absl::StatusOr<std::string> CaptureRunner::DynoTraceFolder(int64_t uid) {
  {
    absl::MutexLock lock(&mu_);
    size_t waits = 0;
    for (const Worker& w : workers_) waits += !w.done->load() && w.dyno_uid == uid ? 1 : 0;
    if (waits >= kMaxDynoWaitsPerUid) {
      return absl::ResourceExhaustedError(absl::StrCat("uid ", uid, " already has ", kMaxDynoWaitsPerUid,
                                                       " dynolog-requested traces in flight"));
    }
  }
  absl::StatusOr<std::string> folder = JobFolderFor(uid);
  if (!folder.ok()) return folder.status();
  return absl::StrCat(options_.kineto_dir, "/", *folder);
}

absl::StatusOr<std::string> CaptureRunner::JobFolderFor(int64_t uid) {
  absl::MutexLock lock(&mu_);
  auto known = job_folders_.find(uid);
  if (known != job_folders_.end()) {
    struct stat st {};
    const std::string path = absl::StrCat(options_.kineto_dir, "/", known->second);
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == static_cast<uid_t>(uid) &&
        (st.st_mode & 07777) == 0700) {
      return known->second;
    }
    job_folders_.erase(known);
  }
  absl::StatusOr<std::string> created = CreatePrivateFolder(options_.kineto_dir, absl::StrCat("uid", uid), uid);
  if (!created.ok()) return created.status();
  job_folders_[uid] = *created;
  return created;
}

absl::Status CaptureRunner::CheckSameProcess(const v1::Target& target) const {
  if (target.start_ticks() == 0) {
    return absl::FailedPreconditionError(absl::StrCat("target pid ", target.pid(),
                                                      " comes without its start time: not knowing which process it "
                                                      "names, the agent does not contact it"));
  }
  const std::optional<uint64_t> now = ReadProcessStartTicks(options_.proc_root, target.pid());
  if (now != target.start_ticks()) {
    return absl::NotFoundError(absl::StrCat("pid ", target.pid(),
                                            now ? " is another process now (its start time differs)" : " is gone",
                                            ": not the target that was discovered"));
  }
  return absl::OkStatus();
}

// The capture backends, one row per kind of target: the one place a profiler is added.
const CaptureRunner::Backend CaptureRunner::kBackends[] = {
    {v1::Target::xprof, &CaptureRunner::CaptureXprofTarget},
    {v1::Target::kineto, &CaptureRunner::CaptureKinetoTarget},
};

absl::StatusOr<CheckedFile> CaptureRunner::Trigger(const v1::CaptureCommand& command) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::nanoseconds(std::max<int64_t>(
                            command.deadline_unix_ns() - UnixNanos(), 1'000 * kNanosPerMs));
  for (const Backend& backend : kBackends) {
    if (backend.kind == command.target().kind()) return (this->*backend.capture)(command, deadline);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown target kind ", static_cast<int>(command.target().kind())));
}

absl::StatusOr<CheckedFile> CaptureRunner::CaptureXprofTarget(const v1::CaptureCommand& command,
                                                              std::chrono::steady_clock::time_point) {
  const v1::Target& target = command.target();
  if (!IsHostPort(target.address())) {
    return absl::InvalidArgumentError(absl::StrCat("refusing xprof address '", absl::CHexEscape(target.address()),
                                                   "': want HOST:PORT"));
  }
  XprofCaptureOptions xprof;
  xprof.address = target.address();
  xprof.duration_ms = command.duration_ms() > 0 ? command.duration_ms() : 2000;
  xprof.start_timestamp_ns = command.start_time_unix_ns();
  xprof.delay_ms = std::max<int64_t>(0, (command.start_time_unix_ns() - UnixNanos()) / kNanosPerMs);
  xprof.repository_root = options_.xprof_dir;
  // One session folder per target, so two XLA jobs on one node never share a file. Its
  // name comes from the server and another process's environment: only safe characters
  // reach the path, so it stays one folder directly under the agent's xprof folder.
  xprof.session_id = SafeFileName(absl::StrCat(command.capture_id(), "_", target.address()));
  xprof.host_name = options_.node;
  // Written by this agent (the trace came in the response) or by the job's profiler
  // server (older servers write the file themselves): then it must be the job's user's.
  std::vector<int64_t> owners = {static_cast<int64_t>(::geteuid())};
  if (target.pid() > 0) {
    // The address came from the job's environment: only its own profiler server, reached
    // from inside its network namespace (collectors/job_network.h), and only while the pid
    // is still the process discovered: checked before the address check and the uid are
    // read, and around each connection (a process alive at both ends of a step was the
    // same throughout: its pid cannot be reused while it lives).
    if (absl::Status s = CheckSameProcess(target); !s.ok()) return s;
    const int64_t uid = ProcessUid(options_.proc_root, target.pid());
    if (absl::Status s = CheckJobProfilerAddress(options_.proc_root, target.pid(), target.address()); !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckSameProcess(target); !s.ok()) return s;
    if (uid >= 0) owners.push_back(uid);
    xprof.connect = [this, target]() -> absl::StatusOr<int> {
      if (absl::Status s = CheckSameProcess(target); !s.ok()) return s;
      absl::StatusOr<int> fd = ConnectInJobNetwork(options_.proc_root, target.pid(), target.address(), 5000);
      if (!fd.ok()) return fd;
      if (absl::Status s = CheckSameProcess(target); !s.ok()) {
        ::close(*fd);
        return s;
      }
      return fd;
    };
  }
  // A job that sees our files writes its trace itself, into its user's own folder, and the
  // agent reads that file (bounded, streamed to the server) instead of taking the whole trace
  // as one message (issue 21, item 7). The agent writes nothing there: an answer that carries
  // the trace anyway is saved in the agent's own folder.
  std::string job_root;
  if (target.pid() > 0 && owners.size() == 2 && SharesOurFilesystem(options_.proc_root, target.pid())) {
    absl::StatusOr<std::string> folder = JobFolderFor(owners[1]);
    if (!folder.ok()) return folder.status();
    job_root = absl::StrCat(options_.kineto_dir, "/", *folder);
    xprof.save_root = xprof.repository_root;
    xprof.repository_root = job_root;
    xprof.emit_xspace = false;
  }
  absl::StatusOr<int64_t> budget = ReserveTraceBytes();
  if (!budget.ok()) return budget.status();
  xprof.max_trace_bytes = *budget;
  auto trace = CaptureXprof(xprof, [this] { return cancelled(); });
  ReleaseTraceBytes(*budget);
  if (!trace.ok()) return trace.status();
  if (job_root.empty() || !trace->starts_with(job_root + "/")) return CheckedFile::Open(*trace, owners);
  // The job's file: reached beneath its folder without following a link anywhere (the job
  // could swap its session folder for one), owned by the job's user, of a size we take.
  absl::StatusOr<CheckedFile> file =
      CheckedFile::OpenBeneath(job_root, trace->substr(job_root.size() + 1), {owners[1]});
  if (!file.ok()) return file.status();
  if (file->size_bytes() > options_.max_trace_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("the trace ", target.address(), " wrote is ", file->size_bytes(),
                                                     " bytes, more than this agent takes (--max_trace_mb=",
                                                     options_.max_trace_bytes >> 20, ")"));
  }
  return file;
}

absl::StatusOr<CheckedFile> CaptureRunner::CaptureKinetoTarget(const v1::CaptureCommand& command,
                                                               std::chrono::steady_clock::time_point deadline) {
  const v1::Target& target = command.target();
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
  const std::vector<int64_t> owners = {process->uid};
  absl::StatusOr<std::string> folder = JobFolderFor(process->uid);
  if (!folder.ok()) return folder.status();
  const std::string file_name = absl::StrCat(SafeFileName(command.capture_id()), "-", RandomHex(8), ".json");
  KinetoTraceRequest request;
  request.log_file = absl::StrCat(options_.kineto_dir, "/", *folder, "/", file_name);
  request.duration_ms = command.iterations() > 0 ? 0 : command.duration_ms();
  request.iterations = command.iterations();
  request.start_time_unix_ms = command.start_time_unix_ns() / kNanosPerMs;
  // Said explicitly: the shared start and the hand-out checks plan with this warm-up.
  if (request.iterations == 0) request.warmup_secs = kKinetoWarmupSecs;
  request.record_shapes = command.record_shapes();
  request.profile_memory = command.profile_memory();
  request.with_stack = command.with_stack();
  request.trace_id = command.capture_id();
  {
    absl::MutexLock lock(&mu_);
    own_log_files_.insert(request.log_file);  // Execute uploads it, not AdoptKinetoTrace
  }
  absl::StatusOr<KinetoTrigger> triggered =
      kineto_->TriggerProcess(target.pid(), target.start_ticks(), request, !command.start_time_fixed());
  absl::StatusOr<int64_t> moved_ns =
      triggered.ok() ? AwaitKinetoHandout(command, *triggered, request, deadline) : triggered.status();
  if (!moved_ns.ok()) {
    absl::MutexLock lock(&mu_);
    own_log_files_.erase(request.log_file);
    return moved_ns.status();
  }
  // libkineto's rule, on the whole path as the job applies it: with the pid the job knows
  // itself by (its pod's numbering).
  const std::string trace_path = KinetoTracePath(request.log_file, triggered->process.ns_pid);
  // A start moved later moves the end of the wait with it.
  auto trace = WaitForTraceFile(trace_path, deadline + std::chrono::nanoseconds(*moved_ns),
                                [this] { return cancelled(); });
  {
    absl::MutexLock lock(&mu_);
    own_log_files_.erase(request.log_file);  // the poll that handed it out came before the file
  }
  if (!trace.ok()) return trace.status();
  // Reached without following a link, and only a plain file of the traced process's user.
  return CheckedFile::OpenBeneath(options_.kineto_dir, trace_path.substr(options_.kineto_dir.size() + 1), owners);
}

absl::StatusOr<int64_t> CaptureRunner::AwaitKinetoHandout(const v1::CaptureCommand& command,
                                                          const KinetoTrigger& trigger,
                                                          const KinetoTraceRequest& request, Deadline deadline) {
  const int32_t pid = trigger.process.pid;
  const auto absl_time_of = [](Deadline when) {
    return absl::Now() + absl::FromChrono(when - std::chrono::steady_clock::now());
  };
  // Until start - warm-up, the last moment the job can take a fixed start: then a fixed start
  // is withdrawn with the reason at once, and a movable one says why it waits.
  if (std::optional<int64_t> last_ms = LastHandOutMs(request)) {
    const absl::Time last = std::min(absl::FromUnixMillis(*last_ms), absl_time_of(deadline));
    if (trigger.handout->WaitUntil(last).state == KinetoHandout::State::kPending) {
      const std::string why = kineto_->WhyPending(pid);
      if (command.start_time_fixed()) {
        if (kineto_->Withdraw(pid, trigger.handout)) {
          return absl::FailedPreconditionError(absl::StrCat(
              "the job had not taken its config ", KinetoWarmupMs(request),
              " ms before the start that was asked for (", why,
              "): libkineto would not start tracing (insufficient time for warmup), so the agent withdrew "
              "it; without --start_delay_ms the agent moves a late job's start instead"));
        }
      } else {
        Report(command, v1::CaptureTarget::RUNNING, "", "", 0,
               absl::StrCat("the job has not taken its config yet: ", why,
                            "; its trace starts when it does, after its warm-up"));
      }
    }
  }
  KinetoHandout::Status handout;
  while (true) {
    handout = trigger.handout->WaitUntil(std::min(absl::Now() + absl::Milliseconds(200), absl_time_of(deadline)));
    if (handout.state != KinetoHandout::State::kPending) break;
    const bool stopping = cancelled();
    if (!stopping && std::chrono::steady_clock::now() < deadline) continue;
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
  Report(command, v1::CaptureTarget::RUNNING, "", "", start_ns, handout.reason);
  return std::max<int64_t>(0, start_ns - command.start_time_unix_ns());
}

void CaptureRunner::Execute(const v1::CaptureCommand& command) {
  const std::string target = TargetLabel(command);
  spdlog::info("capture {} of {} starting", command.capture_id(), target);
  Report(command, v1::CaptureTarget::RUNNING, "", "");
  absl::StatusOr<CheckedFile> trace = Trigger(command);
  if (!trace.ok()) {
    spdlog::warn("capture {} of {} failed: {}", command.capture_id(), target,
                 std::string(trace.status().message()));
    Report(command, v1::CaptureTarget::FAILED, "", std::string(trace.status().message()));
    return;
  }
  Report(command, v1::CaptureTarget::UPLOADING, "", "");
  UploadOptions upload;
  upload.path = trace->proc_path();  // the checked file, whatever is renamed over its name now
  upload.file_name = std::filesystem::path(trace->path()).filename().string();
  upload.job = command.target().job().empty() ? "unassigned" : command.target().job();
  upload.node = options_.node;
  // Bounded length whatever the node name, and not computable by others from the capture's
  // public values (the id then cannot be taken first): the capture id plus random bytes.
  upload.upload_id = absl::StrCat(SafeFileName(command.capture_id()), "-", RandomHex(8));
  upload.max_bytes = trace->size_bytes();  // what was checked: a job's file may grow after
  upload.cancelled = [this] { return cancelled(); };
  upload.labels["capture_id"] = command.capture_id();
  upload.labels["source"] = "capture";
  if (command.target().pid() > 0) upload.labels["pid"] = absl::StrCat(command.target().pid());
  // Where the trace's clock sits against the server's: the job timeline's agent_sync offsets.
  if (std::optional<ClockSync> sync = options_.clock_sync ? options_.clock_sync() : std::nullopt) {
    upload.labels[kClockOffsetLabel] = absl::StrCat(sync->offset_ns);
    upload.labels[kClockUncertaintyLabel] = absl::StrCat(sync->uncertainty_ns);
    upload.labels[kCaptureStartLabel] = absl::StrCat(command.start_time_unix_ns());
    upload.labels[kCaptureWindowLabel] = absl::StrCat(
        command.duration_ms() > 0 ? command.duration_ms() * 1'000'000
                                  : std::max<int64_t>(command.deadline_unix_ns() - command.start_time_unix_ns(), 0));
  }
  auto response = upload_(upload);
  if (!response.ok()) {
    Report(command, v1::CaptureTarget::FAILED, "",
           absl::StrCat("upload failed: ", std::string(response.status().message()),
                        " (trace kept at ", trace->path(), ", readable by its owner and root only)"));
    return;
  }
  // Uploaded and indexed: nothing left on the node.
  if (absl::Status removed = trace->RemoveName(); !removed.ok()) {
    spdlog::warn("capture {}: {}", command.capture_id(), std::string(removed.message()));
  }
  spdlog::info("capture {} of {} indexed as {}", command.capture_id(), target, response->profile_id());
  Report(command, v1::CaptureTarget::INDEXED, response->profile_id(), "");
}

void CaptureRunner::AdoptKinetoTrace(const KinetoProcess& process, const KinetoTraceRequest& request,
                                     const std::string& requested_name) {
  const std::string& log_file = request.log_file;
  // A memory snapshot is written where the job itself chooses (libkineto replaces the log
  // file): there is no trace to wait for, and no thread waits.
  if (request.memory_snapshot) {
    spdlog::info("memory snapshot requested from pid {} (job {}): the job writes it to its own snapshot path; "
                 "no trace is awaited or uploaded",
                 process.pid, process.job);
    return;
  }
  // A config without a log file names nothing to upload; ours are uploaded by Execute.
  if (log_file.empty()) return;
  {
    absl::MutexLock lock(&mu_);
    if (own_log_files_.erase(log_file) > 0) return;
  }
  // Only files the job writes in its user's private folder inside the Kineto trace folder (the
  // endpoint placed it there), else directly in the trace folder: the dynolog API refuses other
  // paths already; this keeps any other route from naming /etc/… for root to upload.
  const std::string trace_path = KinetoTracePath(log_file, process.ns_pid);
  const std::string prefix = options_.kineto_dir + "/";
  if (!trace_path.starts_with(prefix) || trace_path.find("/..") != std::string::npos) {
    spdlog::warn("not uploading the trace of pid {}: {} is not in {}", process.pid, absl::CHexEscape(trace_path),
                 options_.kineto_dir);
    return;
  }
  const std::string beneath = trace_path.substr(prefix.size());
  if (requested_name.empty() && beneath.find('/') != std::string::npos) {
    spdlog::warn("not uploading the trace of pid {}: {} is not directly in {}", process.pid,
                 absl::CHexEscape(trace_path), options_.kineto_dir);
    return;
  }
  // Uploaded under the name asked for, wherever the job wrote it (docs/captures.md, Traces asked
  // for through the dynolog API).
  const std::string file_name = KinetoTracePath(
      requested_name.empty() ? std::filesystem::path(log_file).filename().string() : requested_name, process.ns_pid);
  if (process.uid < 0) {
    spdlog::warn("not waiting for the trace of pid {}: its uid is unknown (no kernel credentials)", process.pid);
    return;
  }
  // As long as the request can take: its start, its duration, and time to write the file.
  // Iteration traces end when the job's steps do: a fixed bound.
  const int64_t now_ms = UnixNanos() / kNanosPerMs;
  const int64_t start_in_ms = request.start_time_unix_ms > 0
                                  ? std::max<int64_t>(0, request.start_time_unix_ms - now_ms)
                                  : KinetoWarmupMs(request) + kKinetoUnsetStartDelayMs;
  const int64_t wait_ms = request.iterations > 0 ? kDynoIterationTraceWaitMs
                                                 : start_in_ms + std::max<int64_t>(request.duration_ms, 500) +
                                                       kDynoTraceWriteMarginMs;
  absl::Status started = Spawn([this, process, trace_path, beneath, file_name, wait_ms] {
    auto trace = WaitForTraceFile(trace_path, std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms),
                                  [this] { return cancelled(); });
    if (!trace.ok()) {
      spdlog::warn("trace requested from pid {} never appeared: {}", process.pid,
                   std::string(trace.status().message()));
      return;
    }
    // Reached without following a link, and only a plain file of the traced process's user.
    auto checked = CheckedFile::OpenBeneath(options_.kineto_dir, beneath, {process.uid});
    if (!checked.ok()) {
      spdlog::warn("not uploading the trace of pid {}: {}", process.pid, std::string(checked.status().message()));
      return;
    }
    UploadOptions upload;
    upload.path = checked->proc_path();
    upload.file_name = file_name;
    upload.job = process.job;
    upload.node = options_.node;
    upload.labels["source"] = "dyno";
    upload.cancelled = [this] { return cancelled(); };
    upload.labels["pid"] = absl::StrCat(process.pid);
    auto response = upload_(upload);
    if (response.ok()) {
      spdlog::info("uploaded trace of pid {} requested through the dynolog API: profile_id={}",
                   process.pid, response->profile_id());
    } else {
      spdlog::warn("upload of {} failed, removing it: {}", *trace, std::string(response.status().message()));
    }
    // A trace left on the node outlives the request that asked for it, so it goes either way
    // (the upload, when it worked, keeps the bytes).
    if (absl::Status removed = checked->RemoveName(); !removed.ok()) {
      spdlog::warn("trace of pid {}: {}", process.pid, std::string(removed.message()));
    }
  }, process.uid);
  if (!started.ok()) {
    spdlog::warn("not waiting for the trace of pid {}: {}", process.pid, std::string(started.message()));
  }
}

absl::StatusOr<int64_t> CaptureRunner::ReserveTraceBytes() {
  absl::MutexLock lock(&mu_);
  const int64_t left = options_.max_capture_memory_bytes - reserved_trace_bytes_;
  const int64_t take = std::min(options_.max_trace_bytes, left);
  // Less than an eighth of a full answer would fail most traces after the wait: refuse now.
  if (take < std::max<int64_t>(1, options_.max_trace_bytes / 8)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "XLA captures in flight hold ", reserved_trace_bytes_ >> 20, " MiB of --max_capture_memory_mb=",
        options_.max_capture_memory_bytes >> 20, "; try again when they are done"));
  }
  reserved_trace_bytes_ += take;
  return take;
}

void CaptureRunner::ReleaseTraceBytes(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  reserved_trace_bytes_ -= bytes;
}

}  // namespace fleetprof
