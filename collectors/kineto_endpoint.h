#pragma once
// The node daemon's side of PyTorch on-demand tracing (docs/protocols.md, PyTorch on-demand
// tracing), as dynolog serves it: PyTorch processes started with KINETO_USE_DAEMON=1 poll a unix
// datagram socket every few seconds; the first poll registers the process, and a config queued by
// Trigger() is handed to it on a later poll, after which the job writes its trace file itself.
//
// One thread owns the socket and answers every poll at once (a client waits only ~50-90 ms
// for the reply). Trigger() and Processes() may be called from any thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "absl/time/time.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collectors/job_owners.h"
#include "collectors/kineto_config.h"
#include "collectors/kineto_ipc.h"

namespace fleetprof {

// A PyTorch process known from its polls. Its identity is the kernel's word, never the
// client's: a client in a pod's pid namespace reports pids of that namespace, which name other
// processes (or none) on the node, and it may choose them.
struct KinetoProcess {
  int32_t pid = 0;           // the sender in the agent's pid namespace (SCM_CREDENTIALS): the key
  int32_t ns_pid = 0;        // as the client reported it (its innermost NSpid): libkineto names its trace with it
  uint64_t start_ticks = 0;  // of `pid` (/proc/PID/stat field 22): with it, names one process
  std::vector<int32_t> ancestry;  // pid and its ancestors in the agent's numbering, leaf first, as far as
                                  // /proc confirms the client's claimed ones
  int64_t job_id = 0;             // what the client sent ($SLURM_JOB_ID or 0)
  // job_id when the process's own environment has that SLURM_JOB_ID and its uid holds the id
  // as a job name (JobOwners), else 0: what a job-scoped dyno request selects by.
  int64_t resolved_job_id = 0;
  std::string job;                // FLEETPROF_JOB, else job_id as text when non-zero, else "unassigned"
  int64_t last_poll_ns = 0;       // unix time of the latest poll
  int64_t uid = -1;               // the sender's (SCM_CREDENTIALS): its trace files must belong to it
};

// What became of one config a capture queued for one process (TriggerProcess): the capture's
// thread waits on it while the endpoint's thread hands the config out at the job's poll, where
// the start time is checked (collectors/kineto_start.h).
class KinetoHandout {
 public:
  enum class State {
    kPending,    // queued, not yet taken by the job
    kHandedOut,  // taken: the job traces from start_time_unix_ms (0: a start of its own)
    kRefused,    // not handed out: the job would have refused it, or stopped polling (reason)
    kWithdrawn,  // taken back by the capture (Withdraw)
  };
  struct Status {
    State state = State::kPending;
    int64_t start_time_unix_ms = 0;  // kHandedOut: the start the job got
    bool moved = false;              // kHandedOut: later than asked (reason says why)
    std::string reason;
  };
  // The status once it is no longer kPending, or when clock.MonotonicNanos() reaches
  // `deadline_ns` (then possibly still pending).
  Status WaitUntil(const Clock& clock, int64_t deadline_ns) const;

 private:
  friend class KinetoEndpoint;
  void Finish(Status status);
  mutable absl::Mutex mu_;
  Status status_ ABSL_GUARDED_BY(mu_);
};

// A config queued by TriggerProcess, and where to follow it.
struct KinetoTrigger {
  KinetoProcess process;
  std::shared_ptr<KinetoHandout> handout;
};

// The outcome of one Trigger(), in dynolog's terms.
struct TriggerResult {
  std::vector<int32_t> matched;    // every registered process the request selected
  std::vector<int32_t> triggered;  // those that got the config queued
  int busy = 0;                    // matched processes that still had a config pending
  // Processes the request selected but that belong to another user than the caller's
  // (never in `matched`: a caller may trigger only its own processes unless it is root).
  int other_users = 0;
};

class KinetoEndpoint {
 public:
  struct Options {
    std::string socket_dir;  // empty: the abstract "\0dynolog\0"; else socket_dir/dynolog
    std::string proc_root = "/proc";
    std::chrono::seconds forget_after{60};
    // Which uid each job name belongs to, shared with the XLA discovery; null: one of its own.
    std::shared_ptr<JobOwners> job_owners;
    // Registrations kept, per uid and in all: any local user can start polling processes, and
    // each costs memory and a target. Past a cap a new process is not registered (logged once
    // per uid and sweep); the per-uid cap comes first, so one uid cannot fill the total alone.
    size_t max_processes_per_uid = 256;
    size_t max_processes = 4096;
    // Polls' ages, the sweep and the log rate limits (times below are its MonotonicNanos()).
    const Clock* clock = RealClock();
  };
  // Called on the endpoint's thread each time a config is actually sent to a process, with
  // the request as handed out (its start checked, maybe moved) and, for a trace Trigger placed
  // in a private folder, the file name it was asked for ("" otherwise). Must not block: hand
  // the wait for the trace file to another thread.
  using TriggeredCallback = std::function<void(const KinetoProcess& process, const KinetoTraceRequest& request,
                                               const std::string& requested_name)>;
  // The private folder (an absolute path) where processes of `uid` write the traces a dynolog
  // request asks for, made when needed.
  using TraceFolderFor = std::function<absl::StatusOr<std::string>(int64_t uid)>;

  explicit KinetoEndpoint(Options options);
  ~KinetoEndpoint();  // Stop()s
  KinetoEndpoint(const KinetoEndpoint&) = delete;
  KinetoEndpoint& operator=(const KinetoEndpoint&) = delete;

  // REQUIRES: called before Start().
  void set_on_triggered(TriggeredCallback callback) { on_triggered_ = std::move(callback); }

  // Binds the socket and starts the event loop. AlreadyExists, naming the address, when
  // another daemon holds it; the caller logs that once and runs on without this endpoint.
  absl::Status Start();
  // Stops the loop and releases the address. Safe to call twice, or without Start().
  void Stop();
  // The bound address for logs ("" before Start()).
  std::string address() const;

  // The processes that polled within `forget_after`, by pid.
  std::vector<KinetoProcess> Processes() const;

  // Queues `request` for the one process `pid` that started at `start_ticks` (a capture's
  // target). At hand-out its start is checked (DecideKinetoStart): with `may_move_start` a late
  // hand-out moves it, else a start the job would refuse is not handed out (the handout says
  // why). NotFound when no such process polls (gone, or the pid now belongs to another
  // process), Unavailable when it still has a config pending.
  absl::StatusOr<KinetoTrigger> TriggerProcess(int32_t pid, uint64_t start_ticks, const KinetoTraceRequest& request,
                                               bool may_move_start);
  // Takes back a config TriggerProcess queued, if the job has not taken it yet: true when it
  // was still pending (its handout is then kWithdrawn), false when it was handed out or
  // refused meanwhile (see the handout).
  bool Withdraw(int32_t pid, const std::shared_ptr<KinetoHandout>& handout);
  // Why `pid` has not taken its pending config yet, in words for the capture's progress.
  std::string WhyPending(int32_t pid) const;

  // Queues `request` for each registered process that matches: job_id 0 matches any job, and
  // `pids` (the agent's pid namespace's, as `dyno` on the node gives them) empty or containing
  // 0 matches every process, else a process matches when any pid of its ancestry is listed. A
  // process that still has a config pending counts as busy and keeps it; at most
  // `process_limit` processes are triggered (<= 0: no limit). Each queued config is sent
  // exactly once, on the process's next poll that asks for an activities config (a poll of
  // type 0 means its profiler is busy), and only if the job would accept its start.
  // `owner_uid` set: only processes registered with that uid are selected (one whose uid is
  // unknown never is); nullopt: any process, for root and the agent's own captures. With
  // `folder_for`, a requested log file is written into the process's user's private folder
  // under a random name (never the shared folder, where another user could read or plant it).
  // `job_id` selects by the job id a process's own environment confirms (resolved_job_id).
  TriggerResult Trigger(const std::vector<int32_t>& pids, int64_t job_id, const KinetoTraceRequest& request,
                        int process_limit, std::optional<int64_t> owner_uid = std::nullopt,
                        const TraceFolderFor& folder_for = nullptr);

 private:
  // A config waiting for the process's next activities poll.
  struct PendingTrace {
    KinetoTraceRequest request;
    bool may_move_start = false;
    std::shared_ptr<KinetoHandout> handout;  // a capture's (TriggerProcess); null for Trigger's
    int64_t queued_ns = 0;
    std::string requested_name;  // Trigger's, when it placed the log file: the name asked for
  };
  struct Registration {
    KinetoProcess process;  // its ancestry: what the kernel confirmed of the claimed one
    std::vector<int32_t> claimed_ancestry;  // as the client sent it (a repeated poll is recognized by it)
    std::string claimed_job;  // from its environ; process.job is this unless another uid holds the name
    bool job_id_confirmed = false;  // its environ's SLURM_JOB_ID is the job id its polls send
    int64_t last_poll_ns = 0;
    bool last_poll_busy = false;  // its latest poll said its profiler is in use (type 0)
    std::optional<PendingTrace> pending;
  };
  struct ContextKey {
    int64_t job_id;
    int32_t gpu;
    auto operator<=>(const ContextKey&) const = default;
  };

  void Loop();
  void DrainSocket();
  void HandlePoll(const KinetoDatagram& datagram, const KinetoPoll& poll);
  void HandleContext(const KinetoDatagram& datagram, const KinetoContext& context);
  // Updates (or creates) the registration of the sender `host_pid` for a poll; reads the job
  // from environ only for a process it has not seen with this ancestry and job id. False (and
  // logged) without the kernel's credentials, or when they contradict the pid the client claims.
  bool Register(const KinetoPoll& poll, int32_t host_pid, int64_t uid);
  void ForgetSilentProcesses();
  // Whether a new registration of `pid` by `uid` fits the caps; logs a refusal (rate-limited).
  bool RoomForLocked(int32_t pid, int64_t uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Drops a registration's pending config, telling its capture why.
  static void DropPending(Registration& registration, const std::string& why);

  const Options options_;
  TriggeredCallback on_triggered_;
  std::unique_ptr<KinetoIpcSocket> socket_;
  std::string address_;
  int wake_fd_ = -1;
  std::thread loop_;

  mutable absl::Mutex mutex_;
  std::shared_ptr<JobOwners> job_owners_;
  std::map<int32_t, Registration> processes_ ABSL_GUARDED_BY(mutex_);  // by the kernel's pid of the sender
  // processes_ counted by uid, kept beside it: a uid past its cap is refused on each of its
  // clients' polls (a flood polls a thousand times in 5 s), and counting processes_ each time
  // would cost the loop thread that many walks of the whole map.
  std::map<int64_t, size_t> processes_by_uid_ ABSL_GUARDED_BY(mutex_);
  std::map<int64_t, int64_t> refusals_logged_
      ABSL_GUARDED_BY(mutex_);  // when each uid was last told about a cap
  // Legacy "ctxt" registrations: which pids announced themselves per (job, gpu).
  // Only the loop thread touches these.
  std::map<ContextKey, std::map<int32_t, int64_t>> contexts_;  // pid -> last seen
};

}  // namespace fleetprof
