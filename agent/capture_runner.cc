#include "agent/capture_runner.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "collectors/kineto_start.h"
#include "collectors/process_jobs.h"
#include "collectors/trace_file_waiter.h"
#include "common/clock_sync_labels.h"
#include "common/kineto_timing.h"
#include "common/runtime.h"
#include "common/threads.h"
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

CaptureRunner::CaptureRunner(Options options, Uploader upload, const CaptureBackendDeps& deps, Sender send,
                             std::span<const CaptureBackendRow> backends)
    : options_(std::move(options)), clock_(*options_.clock), upload_(std::move(upload)), send_(std::move(send)) {
  for (const CaptureBackendRow& row : backends) backends_[row.kind] = row.make(deps);
}

// A backend's view of the runner for one capture; what it reserves and claims is given back
// when the capture's Trigger returns.
class CaptureRunner::Context final : public CaptureContext {
 public:
  Context(CaptureRunner& runner, const v1::CaptureCommand& command, int64_t deadline_ns)
      : runner_(runner), command_(command), deadline_ns_(deadline_ns) {}
  ~Context() override {
    for (int64_t bytes : reserved_) runner_.ReleaseTraceBytes(bytes);
    absl::MutexLock lock(&runner_.mu_);
    for (const std::string& path : claimed_) runner_.claimed_files_.erase(path);
  }
  const CaptureSettings& settings() const override { return runner_.options_; }
  const Clock& clock() const override { return runner_.clock_; }
  int64_t deadline_ns() const override { return deadline_ns_; }
  bool cancelled() const override { return runner_.cancelled(); }
  void ReportRunning(int64_t moved_start_unix_ns, const std::string& note) override {
    runner_.Report(command_, v1::CaptureTarget::RUNNING, "", "", moved_start_unix_ns, note);
  }
  absl::StatusOr<std::string> JobFolderFor(int64_t uid) override { return runner_.JobFolderFor(uid); }
  absl::Status CheckSameProcess(const v1::Target& target) const override { return runner_.CheckSameProcess(target); }
  absl::StatusOr<int64_t> ReserveTraceBytes() override {
    absl::StatusOr<int64_t> got = runner_.ReserveTraceBytes();
    if (got.ok()) reserved_.push_back(*got);
    return got;
  }
  void ClaimTraceFile(const std::string& path) override {
    absl::MutexLock lock(&runner_.mu_);
    runner_.claimed_files_.insert(path);
    claimed_.push_back(path);
  }

 private:
  CaptureRunner& runner_;
  const v1::CaptureCommand& command_;
  const int64_t deadline_ns_;
  std::vector<int64_t> reserved_;
  std::vector<std::string> claimed_;
};

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

absl::StatusOr<CheckedFile> CaptureRunner::Trigger(const v1::CaptureCommand& command) {
  auto backend = backends_.find(command.target().kind());
  if (backend == backends_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("this agent cannot capture targets of kind ",
                                                   v1::Target::Kind_Name(command.target().kind()).empty()
                                                       ? absl::StrCat(static_cast<int>(command.target().kind()))
                                                       : v1::Target::Kind_Name(command.target().kind())));
  }
  // At least a second, whatever the deadline says: a capture started late still tries.
  const int64_t left_ns = std::max<int64_t>(command.deadline_unix_ns() - clock_.Now(), 1'000 * kNanosPerMs);
  Context context(*this, command, clock_.MonotonicNanos() + left_ns);
  return backend->second->Capture(command, context);
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
  auto response = upload_(UploadOf(command, *trace));
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

UploadOptions CaptureRunner::UploadOf(const v1::CaptureCommand& command, const CheckedFile& trace) const {
  UploadOptions upload;
  upload.path = trace.proc_path();  // the checked file, whatever is renamed over its name now
  upload.file_name = std::filesystem::path(trace.path()).filename().string();
  upload.job = command.target().job().empty() ? "unassigned" : command.target().job();
  upload.node = options_.node;
  // Bounded length whatever the node name, and not computable by others from the capture's
  // public values (the id then cannot be taken first): the capture id plus random bytes.
  upload.upload_id = absl::StrCat(SafeFileName(command.capture_id()), "-", RandomHex(8));
  upload.max_bytes = trace.size_bytes();  // what was checked: a job's file may grow after
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
  return upload;
}

void CaptureRunner::AdoptKinetoTrace(const KinetoProcess& process, const KinetoTraceRequest& request,
                                     const std::string& requested_name) {
  absl::StatusOr<DynoTrace> trace = PlanDynoTrace(process, request, requested_name);
  if (!trace.ok()) {
    if (!trace.status().message().empty()) spdlog::warn("{}", std::string(trace.status().message()));
    return;
  }
  absl::Status started = Spawn([this, process, trace = *std::move(trace)] { UploadDynoTrace(process, trace); },
                               process.uid);
  if (!started.ok()) {
    spdlog::warn("not waiting for the trace of pid {}: {}", process.pid, std::string(started.message()));
  }
}

absl::StatusOr<CaptureRunner::DynoTrace> CaptureRunner::PlanDynoTrace(const KinetoProcess& process,
                                                                      const KinetoTraceRequest& request,
                                                                      const std::string& requested_name) {
  const std::string& log_file = request.log_file;
  // A memory snapshot is written where the job itself chooses (libkineto replaces the log
  // file): there is no trace to wait for, and no thread waits.
  if (request.memory_snapshot) {
    spdlog::info("memory snapshot requested from pid {} (job {}): the job writes it to its own snapshot path; "
                 "no trace is awaited or uploaded",
                 process.pid, process.job);
    return absl::NotFoundError("");
  }
  {
    // A config without a log file names nothing to upload; our captures' upload themselves.
    absl::MutexLock lock(&mu_);
    if (log_file.empty() || claimed_files_.contains(log_file)) return absl::NotFoundError("");
  }
  // Only files the job writes in its user's private folder inside the Kineto trace folder (the
  // endpoint placed it there), else directly in the trace folder: the dynolog API refuses other
  // paths already; this keeps any other route from naming /etc/… for root to upload.
  DynoTrace trace;
  trace.path = KinetoTracePath(log_file, process.ns_pid);
  const std::string prefix = options_.kineto_dir + "/";
  if (!trace.path.starts_with(prefix) || trace.path.find("/..") != std::string::npos) {
    return absl::NotFoundError(absl::StrCat("not uploading the trace of pid ", process.pid, ": ",
                                            absl::CHexEscape(trace.path), " is not in ", options_.kineto_dir));
  }
  trace.beneath = trace.path.substr(prefix.size());
  if (requested_name.empty() && trace.beneath.find('/') != std::string::npos) {
    return absl::NotFoundError(absl::StrCat("not uploading the trace of pid ", process.pid, ": ",
                                            absl::CHexEscape(trace.path), " is not directly in ", options_.kineto_dir));
  }
  // Uploaded under the name asked for, wherever the job wrote it (docs/captures.md, Traces asked
  // for through the dynolog API).
  trace.file_name = KinetoTracePath(
      requested_name.empty() ? std::filesystem::path(log_file).filename().string() : requested_name, process.ns_pid);
  if (process.uid < 0) {
    return absl::NotFoundError(absl::StrCat("not waiting for the trace of pid ", process.pid,
                                            ": its uid is unknown (no kernel credentials)"));
  }
  // As long as the request can take: its start, its duration, and time to write the file.
  // Iteration traces end when the job's steps do: a fixed bound.
  const int64_t now_ms = clock_.Now() / kNanosPerMs;
  const int64_t start_in_ms = request.start_time_unix_ms > 0
                                  ? std::max<int64_t>(0, request.start_time_unix_ms - now_ms)
                                  : KinetoWarmupMs(request) + kKinetoUnsetStartDelayMs;
  const int64_t wait_ms = request.iterations > 0 ? kDynoIterationTraceWaitMs
                                                 : start_in_ms + std::max<int64_t>(request.duration_ms, 500) +
                                                       kDynoTraceWriteMarginMs;
  trace.wait_ns = wait_ms * kNanosPerMs;
  return trace;
}

void CaptureRunner::UploadDynoTrace(const KinetoProcess& process, const DynoTrace& trace) {
  auto written = WaitForTraceFile(trace.path, clock_.MonotonicNanos() + trace.wait_ns, clock_,
                                  [this] { return cancelled(); });
  if (!written.ok()) {
    spdlog::warn("trace requested from pid {} never appeared: {}", process.pid,
                 std::string(written.status().message()));
    return;
  }
  // Reached without following a link, and only a plain file of the traced process's user.
  auto checked = CheckedFile::OpenBeneath(options_.kineto_dir, trace.beneath, {process.uid});
  if (!checked.ok()) {
    spdlog::warn("not uploading the trace of pid {}: {}", process.pid, std::string(checked.status().message()));
    return;
  }
  UploadOptions upload;
  upload.path = checked->proc_path();
  upload.file_name = trace.file_name;
  upload.job = process.job;
  upload.node = options_.node;
  upload.labels["source"] = "dyno";
  upload.cancelled = [this] { return cancelled(); };
  upload.labels["pid"] = absl::StrCat(process.pid);
  auto response = upload_(upload);
  if (response.ok()) {
    spdlog::info("uploaded trace of pid {} requested through the dynolog API: profile_id={}", process.pid,
                 response->profile_id());
  } else {
    spdlog::warn("upload of {} failed, removing it: {}", *written, std::string(response.status().message()));
  }
  // A trace left on the node outlives the request that asked for it, so it goes either way
  // (the upload, when it worked, keeps the bytes).
  if (absl::Status removed = checked->RemoveName(); !removed.ok()) {
    spdlog::warn("trace of pid {}: {}", process.pid, std::string(removed.message()));
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
