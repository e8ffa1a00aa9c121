#include "collectors/kineto_endpoint.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "collectors/kineto_start.h"
#include "collectors/process_jobs.h"
#include "common/clock.h"
#include "common/runtime.h"
#include "common/safe_paths.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

// The pid process `host_pid` knows itself by: the innermost of its NSpid line (the pid
// namespace it runs in), or host_pid itself on a kernel without NSpid. 0 when it is gone.
int32_t OwnPid(const std::string& proc_root, int32_t host_pid) {
  const std::vector<int64_t> ns_pids = ProcStatusNumbers(proc_root, host_pid, "NSpid");
  if (ns_pids.empty()) return ProcStatusNumbers(proc_root, host_pid, "Pid").empty() ? 0 : host_pid;
  return static_cast<int32_t>(ns_pids.back());
}

// The part of a client's claimed ancestry (its pid first, as its own pid namespace numbers
// them) that the kernel confirms, in the agent's numbering: walking PPid up from the sender,
// each parent's own pid (OwnPid) must be the next claimed one. A trigger aimed at a pid then
// reaches only that process's real children, never a process that merely says it descends
// from it, nor one in a pod whose namespace happens to number an ancestor alike.
std::vector<int32_t> ConfirmedAncestry(const std::string& proc_root, int32_t host_pid,
                                       const std::vector<int32_t>& claimed) {
  std::vector<int32_t> confirmed = {host_pid};
  int32_t current = host_pid;
  for (size_t i = 1; i < claimed.size(); ++i) {
    const std::vector<int64_t> parent = ProcStatusNumbers(proc_root, current, "PPid");
    if (parent.size() != 1 || parent[0] <= 0) break;
    const int32_t parent_pid = static_cast<int32_t>(parent[0]);
    if (OwnPid(proc_root, parent_pid) != claimed[i]) break;
    confirmed.push_back(parent_pid);
    current = parent_pid;
  }
  return confirmed;
}


// Legacy "ctxt" registrations are bounded so a misbehaving client cannot grow them forever.
constexpr size_t kMaxContextPids = 4096;

// What a new process's own environment says: its FLEETPROF_JOB, and whether its
// SLURM_JOB_ID is the job id its polls claim.
struct EnvironJob {
  std::optional<std::string> job;
  bool job_id_confirmed = false;
};

EnvironJob ReadEnvironJob(const std::string& proc_root, int32_t pid, int64_t claimed_job_id) {
  EnvironJob out;
  absl::StatusOr<std::string> environ = ReadProcessEnviron(proc_root, pid);
  if (!environ.ok()) return out;
  out.job = FindJobInEnviron(*environ);
  if (claimed_job_id != 0) {
    const std::string want = absl::StrCat("SLURM_JOB_ID=", claimed_job_id);
    for (absl::string_view entry : absl::StrSplit(*environ, '\0')) {
      if (entry == want) out.job_id_confirmed = true;
    }
  }
  return out;
}

// FLEETPROF_JOB, else the job id as text when non-zero, else "unassigned".
std::string JobNameFor(const EnvironJob& environ, int64_t job_id) {
  if (environ.job) return *environ.job;
  if (job_id != 0) return absl::StrCat(job_id);
  return std::string(kUnassignedJob);
}

// The start of the process that sent a poll, when the kernel's credentials back the pid the
// client claims: a client may only speak for itself. Registrations are keyed by the kernel's
// pid, never the claimed one: a pod's pid namespace numbers its processes as it likes. Without
// the kernel's credentials nothing can be checked. Refusals are logged.
std::optional<uint64_t> SenderStartTicks(const std::string& proc_root, int32_t claimed, int32_t host_pid,
                                         int64_t uid) {
  if (host_pid <= 0 || uid < 0) {
    spdlog::debug("Kineto registration of pid {} refused: the kernel gave no sender credentials", claimed);
    return std::nullopt;
  }
  const int32_t own_pid = OwnPid(proc_root, host_pid);
  const std::optional<uint64_t> start_ticks = ReadProcessStartTicks(proc_root, host_pid);
  if (own_pid != claimed || !start_ticks.has_value()) {
    spdlog::warn("Kineto registration refused: it claims pid {} but was sent by pid {} (which knows itself as {})",
                 claimed, host_pid, own_pid);
    return std::nullopt;
  }
  return start_ticks;
}

// The job a process is registered under, and whether its uid holds its job id.
struct HeldJob {
  std::string job;
  bool job_id_held = false;
};

// A job name on this node belongs to the uid that claimed it first (JobOwners): another uid's
// process naming it is registered, but as no part of that job. Its job id is the one a dyno
// request may select it by only when its own environment backs it (`job_id_confirmed`) and its
// uid holds it like a job name: a poll's job id alone is the client's word.
HeldJob ClaimJob(JobOwners& owners, const std::string& claimed_job, bool job_id_confirmed, int64_t job_id,
                 int64_t uid, int32_t host_pid) {
  HeldJob held;
  held.job = owners.Claim(claimed_job, uid, host_pid) ? claimed_job : std::string(kUnassignedJob);
  held.job_id_held = job_id_confirmed && owners.Claim(absl::StrCat(job_id), uid, host_pid);
  return held;
}

// What a poll from a process not seen before (or a recycled pid) registers it with.
struct NewProcess {
  EnvironJob environ;
  std::string claimed_job;
  std::vector<int32_t> ancestry;  // what the kernel confirms of the claimed one
  HeldJob held;
};

// Reads the new process's environ and ancestry, and claims its job. Called without the
// endpoint's lock: reading another process's environ can stall on its memory map lock.
NewProcess ReadNewProcess(const std::string& proc_root, JobOwners& owners, const KinetoPoll& poll, int32_t host_pid,
                          int64_t uid) {
  NewProcess out;
  const int32_t claimed = poll.pids.front();
  out.environ = ReadEnvironJob(proc_root, host_pid, poll.job_id);
  out.claimed_job = JobNameFor(out.environ, poll.job_id);
  out.ancestry = ConfirmedAncestry(proc_root, host_pid, poll.pids);
  if (out.ancestry.size() < poll.pids.size()) {
    spdlog::warn("Kineto pid {} (pid {} here) claims ancestors [{}]; the kernel confirms only [{}] (pids here)",
                 claimed, host_pid, absl::StrJoin(poll.pids, ","), absl::StrJoin(out.ancestry, ","));
  }
  out.held = ClaimJob(owners, out.claimed_job, out.environ.job_id_confirmed, poll.job_id, uid, host_pid);
  if (poll.job_id != 0 && !out.held.job_id_held) {
    spdlog::info("Kineto pid {} (uid {}) claims job id {}, which its environment{} does not back: no job-scoped "
                 "request selects it by that id",
                 host_pid, uid, poll.job_id, out.environ.job_id_confirmed ? " backs but another uid holds" : "");
  }
  return out;
}

void DescribeNewProcess(const KinetoPoll& poll, int32_t host_pid, int64_t uid, uint64_t start_ticks,
                        const NewProcess& fresh, KinetoProcess* process) {
  process->pid = host_pid;
  process->ns_pid = poll.pids.front();
  process->start_ticks = start_ticks;
  process->ancestry = fresh.ancestry;
  process->job_id = poll.job_id;
  process->resolved_job_id = fresh.held.job_id_held ? poll.job_id : 0;
  process->job = fresh.held.job;
  process->last_poll_ns = RealClock()->Now();
  process->uid = uid;
}

}  // namespace

KinetoEndpoint::KinetoEndpoint(Options options)
    : options_(std::move(options)),
      job_owners_(options_.job_owners ? options_.job_owners : std::make_shared<JobOwners>(options_.forget_after, nullptr, "", options_.clock)) {}

KinetoEndpoint::~KinetoEndpoint() { Stop(); }

absl::Status KinetoEndpoint::Start() {
  if (socket_ != nullptr) return absl::FailedPreconditionError("Kineto endpoint already started");
  absl::StatusOr<std::unique_ptr<KinetoIpcSocket>> socket =
      KinetoIpcSocket::Bind(options_.socket_dir);
  if (!socket.ok()) return socket.status();
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
  }
  socket_ = std::move(*socket);
  {
    absl::MutexLock lock(&mutex_);
    address_ = socket_->address();
  }
  spdlog::info("Kineto on-demand endpoint listening on {}", address_);
  loop_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void KinetoEndpoint::Stop() {
  if (loop_.joinable()) {
    const uint64_t one = 1;
    if (::write(wake_fd_, &one, sizeof(one)) < 0) spdlog::warn("waking the Kineto loop failed");
    loop_.join();
  }
  socket_.reset();
  if (wake_fd_ >= 0) {
    ::close(wake_fd_);
    wake_fd_ = -1;
  }
}

std::string KinetoEndpoint::address() const {
  absl::MutexLock lock(&mutex_);
  return address_;
}

void KinetoEndpoint::Loop() {
  // Sweep for silent processes a few times per forget_after, so a test with a short
  // forget_after sees it honoured closely, and a daemon sweeps at least once a second.
  const std::chrono::milliseconds sweep_interval = std::clamp(
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.forget_after) / 4,
      std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
  const Clock& clock = *options_.clock;
  const int64_t sweep_ns = std::chrono::nanoseconds(sweep_interval).count();
  int64_t next_sweep = clock.MonotonicNanos() + sweep_ns;
  pollfd fds[2] = {{socket_->fd(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  while (true) {
    const int64_t wait_ms = (next_sweep - clock.MonotonicNanos() + 999'999) / 1'000'000;  // rounded up
    const int rc = ::poll(fds, 2, static_cast<int>(std::clamp<int64_t>(wait_ms, 0, sweep_interval.count())));
    if (rc < 0 && errno != EINTR) {
      spdlog::error("Kineto endpoint poll(): {}", std::strerror(errno));
      return;
    }
    if (rc > 0 && (fds[1].revents & POLLIN)) return;
    if (rc > 0 && (fds[0].revents & POLLIN)) DrainSocket();
    if (clock.MonotonicNanos() >= next_sweep) {
      ForgetSilentProcesses();
      next_sweep = clock.MonotonicNanos() + sweep_ns;
    }
  }
}

void KinetoEndpoint::DrainSocket() {
  while (true) {
    absl::StatusOr<KinetoDatagram> datagram = socket_->Receive();
    if (absl::IsUnavailable(datagram.status())) return;
    if (absl::IsInvalidArgument(datagram.status())) {
      spdlog::debug("dropped Kineto datagram: {}", std::string(datagram.status().message()));
      continue;
    }
    if (!datagram.ok()) {
      spdlog::warn("Kineto endpoint: {}", std::string(datagram.status().message()));
      return;
    }
    if (datagram->type == kKinetoPollType) {
      absl::StatusOr<KinetoPoll> poll = ParseKinetoPoll(datagram->payload);
      if (poll.ok()) {
        HandlePoll(*datagram, *poll);
      } else {
        spdlog::debug("dropped Kineto poll: {}", std::string(poll.status().message()));
      }
    } else if (datagram->type == kKinetoContextType) {
      absl::StatusOr<KinetoContext> context = ParseKinetoContext(datagram->payload);
      if (context.ok()) {
        HandleContext(*datagram, *context);
      } else {
        spdlog::debug("dropped Kineto ctxt: {}", std::string(context.status().message()));
      }
    } else {
      spdlog::debug("dropped Kineto datagram of unknown type \"{}\" from {}",
                    absl::CEscape(datagram->type),
                    DescribeUnixAddress(datagram->sender, datagram->sender_len));
    }
  }
}

bool KinetoEndpoint::Register(const KinetoPoll& poll, int32_t host_pid, int64_t uid) {
  const int32_t claimed = poll.pids.front();
  const std::optional<uint64_t> start_ticks = SenderStartTicks(options_.proc_root, claimed, host_pid, uid);
  if (!start_ticks.has_value()) return false;
  std::optional<std::string> repeated_job;  // the claimed job of a poll seen before
  bool repeated_job_id_confirmed = false;
  {
    absl::MutexLock lock(&mutex_);
    auto it = processes_.find(host_pid);
    if (it != processes_.end() && it->second.process.start_ticks == *start_ticks && it->second.process.uid == uid &&
        it->second.claimed_ancestry == poll.pids && it->second.process.job_id == poll.job_id) {
      it->second.last_poll_ns = options_.clock->MonotonicNanos();
      it->second.process.last_poll_ns = RealClock()->Now();
      repeated_job = it->second.claimed_job;
      repeated_job_id_confirmed = it->second.job_id_confirmed;
    }
  }
  if (repeated_job.has_value()) {
    // Each poll claims the job name again, keeping it this uid's while the process lives,
    // or taking it once the uid that held it has gone.
    const HeldJob held = ClaimJob(*job_owners_, *repeated_job, repeated_job_id_confirmed, poll.job_id, uid, host_pid);
    absl::MutexLock lock(&mutex_);
    auto it = processes_.find(host_pid);
    if (it != processes_.end()) {
      it->second.process.job = held.job;
      it->second.process.resolved_job_id = held.job_id_held ? poll.job_id : 0;
    }
    return true;
  }
  {
    // Refused before its environ is read: a uid past its cap costs one map look-up a poll.
    absl::MutexLock lock(&mutex_);
    if (!processes_.contains(host_pid) && !RoomForLocked(host_pid, uid)) return false;
  }
  const NewProcess fresh = ReadNewProcess(options_.proc_root, *job_owners_, poll, host_pid, uid);
  absl::MutexLock lock(&mutex_);
  auto existing = processes_.find(host_pid);
  if (existing == processes_.end()) {
    if (!RoomForLocked(host_pid, uid)) return false;
  } else if (existing->second.process.uid != uid) {
    --processes_by_uid_[existing->second.process.uid];
    ++processes_by_uid_[uid];
  }
  Registration& registration = processes_[host_pid];
  if (existing == processes_.end()) ++processes_by_uid_[uid];
  if (registration.process.pid != 0 &&
      (registration.process.start_ticks != *start_ticks || registration.process.uid != uid) &&
      registration.pending.has_value()) {
    spdlog::info("Kineto pid={} now belongs to another process; dropping its pending config", host_pid);
    DropPending(registration, absl::StrCat("pid ", host_pid, " now belongs to another process"));
  }
  DescribeNewProcess(poll, host_pid, uid, *start_ticks, fresh, &registration.process);
  registration.claimed_ancestry = poll.pids;
  registration.claimed_job = fresh.claimed_job;
  registration.job_id_confirmed = fresh.environ.job_id_confirmed;
  registration.last_poll_ns = options_.clock->MonotonicNanos();
  spdlog::info("Kineto process registered: pid={} (pid {} in its namespace) uid={} job={} ancestry=[{}]", host_pid,
               claimed, uid, fresh.held.job, absl::StrJoin(fresh.ancestry, ","));
  return true;
}

void KinetoEndpoint::HandlePoll(const KinetoDatagram& datagram, const KinetoPoll& poll) {
  if (!Register(poll, datagram.sender_pid, datagram.sender_uid)) return;
  const int32_t pid = datagram.sender_pid;  // Register's key
  const bool asks_for_activities = (poll.type & kKinetoActivitiesBit) != 0;
  std::string config;
  KinetoProcess process;
  KinetoTraceRequest handed;
  std::string requested_name;
  {
    absl::MutexLock lock(&mutex_);
    Registration& registration = processes_[pid];
    registration.last_poll_busy = !asks_for_activities;
    if (asks_for_activities && registration.pending.has_value()) {
      // The job checks the start the moment it takes the config: judge it now, as it will.
      PendingTrace pending = std::move(*registration.pending);
      registration.pending.reset();
      const KinetoStartDecision decision =
          DecideKinetoStart(pending.request, RealClock()->Now() / 1'000'000, pending.may_move_start);
      if (decision.outcome == KinetoStartDecision::Outcome::kRefused) {
        spdlog::warn("Kineto config for pid={} job={} not handed out: {}", pid, registration.process.job,
                     decision.reason);
        if (pending.handout) pending.handout->Finish({KinetoHandout::State::kRefused, 0, false, decision.reason});
      } else {
        handed = pending.request;
        requested_name = pending.requested_name;
        handed.start_time_unix_ms = decision.start_time_unix_ms;
        config = BuildKinetoConfig(handed);
        process = registration.process;
        const bool moved = decision.outcome == KinetoStartDecision::Outcome::kMoved;
        if (moved) spdlog::info("Kineto pid={}: {}", pid, decision.reason);
        // Told before the reply leaves: the capture thread learns the start the job will use.
        if (pending.handout) {
          pending.handout->Finish(
              {KinetoHandout::State::kHandedOut, decision.start_time_unix_ms, moved, decision.reason});
        }
      }
    }
  }
  absl::Status sent =
      socket_->Send(datagram.sender, datagram.sender_len, kKinetoPollType, config);
  if (config.empty()) {
    if (!sent.ok()) spdlog::debug("Kineto poll reply: {}", std::string(sent.message()));
    return;
  }
  if (!sent.ok()) {
    // The job never got it; its next poll (5 s on) could not meet a start planned for this
    // one, and the capture already counts on it: say so in the log, the trace wait fails.
    spdlog::warn("Kineto config for pid={} could not be sent: {}", pid, std::string(sent.message()));
    return;
  }
  spdlog::info("Kineto config handed to pid={} job={} log_file={} start_time_ms={}", pid, process.job,
               handed.log_file, handed.start_time_unix_ms);
  if (on_triggered_) on_triggered_(process, handed, requested_name);
}

void KinetoEndpoint::HandleContext(const KinetoDatagram& datagram, const KinetoContext& context) {
  const int64_t now = options_.clock->MonotonicNanos();
  auto& pids = contexts_[ContextKey{context.job_id, context.gpu}];
  size_t total = 0;
  for (const auto& [key, entries] : contexts_) total += entries.size();
  if (total < kMaxContextPids || pids.count(context.pid) > 0) pids[context.pid] = now;
  const int32_t count = static_cast<int32_t>(pids.size());
  absl::Status sent = socket_->Send(datagram.sender, datagram.sender_len, kKinetoContextType,
                                    std::string_view(reinterpret_cast<const char*>(&count),
                                                     sizeof(count)));
  if (!sent.ok()) spdlog::debug("Kineto ctxt reply: {}", std::string(sent.message()));
}

bool KinetoEndpoint::RoomForLocked(int32_t pid, int64_t uid) {
  auto count = processes_by_uid_.find(uid);
  const char* cap = count != processes_by_uid_.end() && count->second >= options_.max_processes_per_uid ? "per-uid"
                    : processes_.size() >= options_.max_processes                                      ? "total"
                                                                                                       : nullptr;
  if (cap == nullptr) return true;
  const int64_t now = options_.clock->MonotonicNanos();
  auto [logged, first] = refusals_logged_.try_emplace(uid, now);
  if (first || now - logged->second >= int64_t{60} * 1'000'000'000) {
    logged->second = now;
    spdlog::warn("Kineto registration of pid {} (uid {}) refused: the {} cap is reached ({} processes per uid, {} in "
                 "all); this uid's further refusals are logged once a minute",
                 pid, uid, cap, options_.max_processes_per_uid, options_.max_processes);
  }
  return false;
}

void KinetoEndpoint::ForgetSilentProcesses() {
  const int64_t cutoff = options_.clock->MonotonicNanos() - std::chrono::nanoseconds(options_.forget_after).count();
  {
    absl::MutexLock lock(&mutex_);
    for (auto it = processes_.begin(); it != processes_.end();) {
      if (it->second.last_poll_ns >= cutoff) {
        ++it;
        continue;
      }
      spdlog::info("Kineto process pid={} job={} silent for {} s, forgotten{}", it->first,
                   it->second.process.job, options_.forget_after.count(),
                   it->second.pending ? " with its pending config" : "");
      DropPending(it->second, absl::StrCat("pid ", it->first, " stopped polling (silent for ",
                                           options_.forget_after.count(), " s) before it took the config"));
      if (--processes_by_uid_[it->second.process.uid] == 0) processes_by_uid_.erase(it->second.process.uid);
      it = processes_.erase(it);
    }
  }
  for (auto it = contexts_.begin(); it != contexts_.end();) {
    std::erase_if(it->second, [&](const auto& entry) { return entry.second < cutoff; });
    it = it->second.empty() ? contexts_.erase(it) : std::next(it);
  }
}

std::vector<KinetoProcess> KinetoEndpoint::Processes() const {
  absl::MutexLock lock(&mutex_);
  std::vector<KinetoProcess> out;
  out.reserve(processes_.size());
  for (const auto& [pid, registration] : processes_) out.push_back(registration.process);
  return out;
}

absl::StatusOr<KinetoTrigger> KinetoEndpoint::TriggerProcess(int32_t pid, uint64_t start_ticks,
                                                             const KinetoTraceRequest& request, bool may_move_start) {
  absl::MutexLock lock(&mutex_);
  auto it = processes_.find(pid);
  if (it == processes_.end() || it->second.process.start_ticks != start_ticks) {
    return absl::NotFoundError(absl::StrCat(
        "pid ", pid, it == processes_.end() ? " no longer polls this agent's Kineto endpoint"
                                            : " is another process now (its start time differs): not the target"));
  }
  if (it->second.pending.has_value()) {
    return absl::UnavailableError(absl::StrCat("target busy: pid ", pid, " still has an earlier trace request pending"));
  }
  auto handout = std::make_shared<KinetoHandout>();
  it->second.pending = PendingTrace{request, may_move_start, handout, options_.clock->MonotonicNanos(), ""};
  spdlog::info("Kineto trigger of pid {} (started at tick {}) job={}", pid, start_ticks, it->second.process.job);
  return KinetoTrigger{it->second.process, std::move(handout)};
}

bool KinetoEndpoint::Withdraw(int32_t pid, const std::shared_ptr<KinetoHandout>& handout) {
  absl::MutexLock lock(&mutex_);
  auto it = processes_.find(pid);
  if (it == processes_.end() || !it->second.pending || it->second.pending->handout != handout) return false;
  it->second.pending.reset();
  handout->Finish({KinetoHandout::State::kWithdrawn, 0, false, "withdrawn by the capture"});
  return true;
}

std::string KinetoEndpoint::WhyPending(int32_t pid) const {
  absl::MutexLock lock(&mutex_);
  auto it = processes_.find(pid);
  if (it == processes_.end()) return absl::StrCat("pid ", pid, " no longer polls");
  const Registration& registration = it->second;
  const int64_t since_poll_ms = (options_.clock->MonotonicNanos() - registration.last_poll_ns) / 1'000'000;
  if (registration.pending && registration.last_poll_ns > registration.pending->queued_ns &&
      registration.last_poll_busy) {
    return absl::StrCat("its profiler is busy (another trace or warm-up in progress at its poll ", since_poll_ms,
                        " ms ago)");
  }
  return absl::StrCat("it has not polled since the config was queued (last poll ", since_poll_ms, " ms ago)");
}

void KinetoEndpoint::DropPending(Registration& registration, const std::string& why) {
  if (!registration.pending) return;
  if (registration.pending->handout) {
    registration.pending->handout->Finish({KinetoHandout::State::kRefused, 0, false, why});
  }
  registration.pending.reset();
}

KinetoHandout::Status KinetoHandout::WaitUntil(const Clock& clock, int64_t deadline_ns) const {
  absl::MutexLock lock(&mu_);
  const auto decided = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return status_.state != State::kPending; };
  clock.WaitUntil(&mu_, absl::Condition(&decided), deadline_ns);
  return status_;
}

void KinetoHandout::Finish(Status status) {
  absl::MutexLock lock(&mu_);
  if (status_.state == State::kPending) status_ = std::move(status);
}

TriggerResult KinetoEndpoint::Trigger(const std::vector<int32_t>& pids, int64_t job_id,
                                      const KinetoTraceRequest& request, int process_limit,
                                      std::optional<int64_t> owner_uid, const TraceFolderFor& folder_for) {
  // Sorted once, outside the lock: a request may list many pids, and polls wait on the lock.
  std::vector<int32_t> wanted = pids;
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  const bool all_pids = wanted.empty() || wanted.front() == 0;
  const auto selects = [&](const KinetoProcess& process) {
    if (job_id != 0 && process.resolved_job_id != job_id) return false;
    return all_pids || std::any_of(process.ancestry.begin(), process.ancestry.end(), [&](int32_t p) {
             return std::binary_search(wanted.begin(), wanted.end(), p);
           });
  };
  // The trace goes into each process's user's private folder, made outside the lock.
  std::map<int64_t, absl::StatusOr<std::string>> folders;
  if (folder_for && !request.log_file.empty()) {
    {
      absl::MutexLock lock(&mutex_);
      for (const auto& [pid, registration] : processes_) {
        const KinetoProcess& process = registration.process;
        if (selects(process) && (!owner_uid || process.uid == *owner_uid)) folders.emplace(process.uid, "");
      }
    }
    for (auto& [uid, folder] : folders) {
      folder = uid < 0 ? absl::FailedPreconditionError("its uid is unknown") : folder_for(uid);
    }
  }
  const std::string requested_name = std::filesystem::path(request.log_file).filename().string();
  TriggerResult result;
  absl::MutexLock lock(&mutex_);
  for (auto& [pid, registration] : processes_) {
    const KinetoProcess& process = registration.process;
    if (!selects(process)) continue;
    if (owner_uid.has_value() && process.uid != *owner_uid) {
      ++result.other_users;
      continue;
    }
    result.matched.push_back(pid);
    if (registration.pending.has_value()) {
      ++result.busy;
      continue;
    }
    if (process_limit > 0 && result.triggered.size() >= static_cast<size_t>(process_limit)) {
      continue;
    }
    // As asked: dynolog forwards a start time unchanged (`dyno gputrace` sends none).
    PendingTrace pending{request, false, nullptr, options_.clock->MonotonicNanos(), ""};
    if (folder_for && !request.log_file.empty()) {
      auto folder = folders.find(process.uid);
      if (folder == folders.end() || !folder->second.ok()) {
        spdlog::warn("Kineto pid {} not triggered: no private trace folder for uid {}: {}", pid, process.uid,
                     folder == folders.end() ? "it registered meanwhile" : std::string(folder->second.status().message()));
        continue;
      }
      // Nobody else can enter the folder or predict the name: no one reads or plants the trace.
      pending.request.log_file = absl::StrCat(*folder->second, "/", RandomHex(8), "-", requested_name);
      pending.requested_name = requested_name;
    }
    registration.pending = std::move(pending);
    result.triggered.push_back(pid);
  }
  spdlog::info("Kineto trigger: {} pids listed, job_id={} for uid {}: matched {} triggered {} busy {} other users' {}",
               wanted.size(), job_id, owner_uid ? absl::StrCat(*owner_uid) : "any",
               result.matched.size(), result.triggered.size(), result.busy, result.other_users);
  return result;
}

}  // namespace fleetprof
