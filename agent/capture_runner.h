#pragma once
// Runs the captures the server asks for on this node, one thread per target: has the target's
// capture backend (agent/capture_backend.h) make the job's profiler trace, uploads the file it
// wrote with the capture's labels, removes it, and reports each step back to the server. Also
// waits for the traces other tools (`dyno gputrace`) ask Kineto clients for, and uploads them.

#include <atomic>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "agent/capture_backend.h"
#include "collectors/kineto_endpoint.h"
#include "common/clock.h"
#include "common/clock_sync.h"
#include "common/safe_paths.h"
#include "fleetprof/v1/agent.pb.h"
#include "rpc/uploader.h"

namespace fleetprof {

class CaptureRunner {
 public:
  struct Options : CaptureSettings {
    int64_t max_capture_memory_bytes = int64_t{16} << 30;  // all traces held in memory together
    // The node's clock against the server's, attached to each captured profile (agent_sync).
    std::function<std::optional<ClockSync>()> clock_sync = nullptr;
    const Clock* clock = RealClock();
  };
  using Sender = std::function<void(const v1::AgentMessage&)>;

  // `upload` sends a captured trace to the server (the daemon's goes over gRPC:
  // rpc/upload_client.h); `deps` is lent to the backends `backends` makes, one per kind.
  CaptureRunner(Options options, Uploader upload, const CaptureBackendDeps& deps, Sender send,
                std::span<const CaptureBackendRow> backends = DefaultCaptureBackends());
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
  class Context;  // a backend's view of the runner for one capture (capture_runner.cc)
  // A trace adopted from a dynolog request: where to wait for it and what to upload it as.
  struct DynoTrace {
    std::string path;      // absolute, inside kineto_dir
    std::string beneath;   // the same, relative to kineto_dir
    std::string file_name;  // the upload's
    int64_t wait_ns = 0;
  };

  void Execute(const v1::CaptureCommand& command);
  // Has the backend of the target's kind trace it: the local trace file.
  absl::StatusOr<CheckedFile> Trigger(const v1::CaptureCommand& command);
  // What Execute sends: the checked file with the capture's job, node and labels.
  UploadOptions UploadOf(const v1::CaptureCommand& command, const CheckedFile& trace) const;
  // Where a dynolog-requested trace will be and how long to wait for it; NotFound when it is
  // not one to upload (a memory snapshot, our own capture's, a path outside kineto_dir, …:
  // the message says why when it is worth a log line).
  absl::StatusOr<DynoTrace> PlanDynoTrace(const KinetoProcess& process, const KinetoTraceRequest& request,
                                          const std::string& requested_name);
  // The thread body of an adopted trace: waits, uploads it as the job's, removes it.
  void UploadDynoTrace(const KinetoProcess& process, const DynoTrace& trace);
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
  // Takes up to max_trace_bytes of the memory budget for one trace held in memory: what it
  // got, or RESOURCE_EXHAUSTED when the captures in flight hold nearly all of it. Given back
  // with ReleaseTraceBytes.
  absl::StatusOr<int64_t> ReserveTraceBytes();
  void ReleaseTraceBytes(int64_t bytes);
  // The folder inside kineto_dir where jobs of `uid` write the traces we ask for (Kineto
  // traces, and XLA traces of jobs on our filesystem): created by us under a random name, mode
  // 0700, owned by `uid` (CreatePrivateFolder), so no other user can read or plant a trace
  // there. Made again if it has gone (a /tmp cleaner).
  absl::StatusOr<std::string> JobFolderFor(int64_t uid);

  Options options_;
  const Clock& clock_;
  Uploader upload_;
  Sender send_;
  std::map<v1::Target::Kind, std::unique_ptr<CaptureBackend>> backends_;  // fixed after construction
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
    std::optional<int64_t> dyno_uid;  // set for a dynolog trace's wait: whose request it is
  };
  std::list<Worker> workers_ ABSL_GUARDED_BY(mu_);  // finished ones are joined at the next Spawn
  // Trace files captures upload themselves (CaptureContext::ClaimTraceFile): not adopted.
  std::set<std::string> claimed_files_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::string> job_folders_ ABSL_GUARDED_BY(mu_);  // by uid: JobFolderFor
  int64_t reserved_trace_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // of max_capture_memory_bytes, by captures in flight
};

}  // namespace fleetprof
