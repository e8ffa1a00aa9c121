#pragma once
// Runs the captures the server asks for on this node, one thread per target: triggers the
// job's profiler (XLA profiler service or Kineto), waits for the trace, uploads it with the
// capture's labels, removes the local file, and reports each step back to the server.

#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "agent/server_link.h"
#include "collectors/kineto_endpoint.h"
#include "common/safe_paths.h"
#include "fleetprof/v1/agent.pb.h"
#include "rpc/uploader.h"

namespace fleetprof {

class CaptureRunner {
 public:
  struct Options {
    std::string node;
    std::string xprof_dir;   // repository_root handed to XLA profiler servers
    std::string kineto_dir;  // where Kineto clients write (PyTorch accepts /tmp/... only); absolute
    std::string proc_root = "/proc";  // for the uid of a traced process
    int64_t max_trace_bytes = int64_t{1} << 30;            // one XLA answer (--max_trace_mb)
    int64_t max_capture_memory_bytes = int64_t{16} << 30;  // all XLA answers in flight together
    // The node's clock against the server's, attached to each captured profile (agent_sync).
    std::function<std::optional<ClockSync>()> clock_sync = nullptr;
  };
  using Sender = std::function<void(const v1::AgentMessage&)>;

  // `kineto` may be null when the endpoint could not bind. `upload` sends a captured trace to
  // the server (the daemon's goes over gRPC: rpc/upload_client.h).
  CaptureRunner(Options options, Uploader upload, KinetoEndpoint* kineto, Sender send);
  ~CaptureRunner();  // cancels running captures and joins them

  // Starts the capture of one target in the background.
  void Run(const v1::CaptureCommand& command);
  // `sent` with its start and deadline on this node's clock when the server's is off by more
  // than kTrustedSkewNs (ServerLink's clock probes measure it).
  v1::CaptureCommand OnThisNodesClock(const v1::CaptureCommand& sent) const;
  static constexpr int64_t kTrustedSkewNs = 1'000'000'000;
  // A trace some other tool (e.g. `dyno gputrace`) asked a Kineto client for: upload it too.
  // Waited for on a thread outside the capture pool, at most kMaxDynoWaitsPerUid per user
  // and kMaxDynoWaits in all, until the request's start and duration plus a margin.
  // `requested_name`: the file name the request asked for, when the trace was placed in the
  // job's private folder (KinetoEndpoint::Trigger): the upload's file_name.
  void AdoptKinetoTrace(const KinetoProcess& process, const KinetoTraceRequest& request,
                        const std::string& requested_name);
  // Where the jobs of `uid` write the traces a dynolog request asks for (their private folder,
  // JobFolderFor), as an absolute path; RESOURCE_EXHAUSTED while the uid has
  // kMaxDynoWaitsPerUid such traces in flight.
  absl::StatusOr<std::string> DynoTraceFolder(int64_t uid);

 private:
  void Execute(const v1::CaptureCommand& command);
  // Triggers the profiler and returns the local trace file: the backend of the target's kind.
  absl::StatusOr<CheckedFile> Trigger(const v1::CaptureCommand& command);
  using Deadline = std::chrono::steady_clock::time_point;
  struct Backend {
    v1::Target::Kind kind;
    absl::StatusOr<CheckedFile> (CaptureRunner::*capture)(const v1::CaptureCommand& command, Deadline deadline);
  };
  static const Backend kBackends[];
  // XLA's profiler service: a job on our filesystem writes the trace into its user's folder;
  // otherwise it comes in the answer (older servers write a file whatever they are asked).
  absl::StatusOr<CheckedFile> CaptureXprofTarget(const v1::CaptureCommand& command, Deadline deadline);
  // A Kineto client polling this agent: it writes the trace file itself.
  absl::StatusOr<CheckedFile> CaptureKinetoTarget(const v1::CaptureCommand& command, Deadline deadline);
  // Waits until the Kineto job takes the config TriggerProcess queued (or the capture gives up
  // on it): how many ns later than the shared start its trace starts (0 unless moved).
  absl::StatusOr<int64_t> AwaitKinetoHandout(const v1::CaptureCommand& command, const KinetoTrigger& trigger,
                                             const KinetoTraceRequest& request, Deadline deadline);
  // Progress of a target: `state`, and for RUNNING maybe a moved start and a note.
  void Report(const v1::CaptureCommand& command, v1::CaptureTarget::State state,
              const std::string& profile_id, const std::string& error, int64_t start_time_unix_ns = 0,
              const std::string& note = "");
  // Runs `work` on a thread of its own. Captures (no `dyno_uid`) take one of kMaxWorkers;
  // the waits for dynolog-requested traces count apart (AdoptKinetoTrace), so no user's
  // requests can hold the captures' threads. RESOURCE_EXHAUSTED when the limit is reached,
  // UNAVAILABLE when no thread can be started (never an exception).
  absl::Status Spawn(std::function<void()> work, std::optional<int64_t> dyno_uid = std::nullopt);
  static constexpr size_t kMaxWorkers = 32;
  static constexpr size_t kMaxDynoWaits = 32;
  static constexpr size_t kMaxDynoWaitsPerUid = 4;
  // OK while target.pid() is still the process discovered (its start time is the target's).
  absl::Status CheckSameProcess(const v1::Target& target) const;
  bool cancelled() const;
  // Takes up to max_trace_bytes of the memory budget for one XLA answer: what it got, or
  // RESOURCE_EXHAUSTED when the captures in flight hold nearly all of it. Give it back with
  // ReleaseTraceBytes.
  absl::StatusOr<int64_t> ReserveTraceBytes();
  void ReleaseTraceBytes(int64_t bytes);
  // The folder inside kineto_dir where jobs of `uid` write the traces we ask for (Kineto
  // traces, and XLA traces of jobs on our filesystem): created by us under a random name, mode
  // 0700, owned by `uid` (CreatePrivateFolder), so no other user can read or plant a trace
  // there. Made again if it has gone (a /tmp cleaner).
  absl::StatusOr<std::string> JobFolderFor(int64_t uid);

  Options options_;
  Uploader upload_;
  KinetoEndpoint* kineto_;
  Sender send_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
    std::optional<int64_t> dyno_uid;  // set for a dynolog trace's wait: whose request it is
  };
  std::list<Worker> workers_ ABSL_GUARDED_BY(mu_);  // finished ones are joined at the next Spawn
  std::set<std::string> own_log_files_ ABSL_GUARDED_BY(mu_);  // Kineto log files of captures (Execute uploads them)
  std::map<int64_t, std::string> job_folders_ ABSL_GUARDED_BY(mu_);  // by uid: JobFolderFor
  int64_t reserved_trace_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // of max_capture_memory_bytes, by captures in flight
};

}  // namespace fleetprof
