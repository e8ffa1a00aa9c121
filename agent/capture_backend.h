#pragma once
// The seam between the capture runner and the profilers it drives. A backend knows one kind
// of target (XLA profiler service, Kineto, …): how to make that job's profiler trace, and
// where the trace file it wrote is. Everything around it — threads, progress reports, the
// upload, removing the file, cancellation — is the runner's (agent/capture_runner.h).
//
// Adding a profiler is one file pair with a CaptureBackend subclass and one row in
// kCaptureBackends (capture_backend.cc); a test may pass the runner a table of its own.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collectors/command_runner.h"
#include "common/clock.h"
#include "common/safe_paths.h"
#include "fleetprof/v1/agent.pb.h"

namespace fleetprof {

class KinetoEndpoint;
struct XprofCaptureOptions;

// What the runner settles for every capture, from the agent's flags.
struct CaptureSettings {
  std::string node;
  std::string xprof_dir;   // repository_root handed to XLA profiler servers
  std::string kineto_dir;  // where jobs write the traces we ask for (a shared drop folder); absolute
  std::string proc_root = "/proc";  // for the uid of a traced process
  int64_t max_trace_bytes = int64_t{1} << 30;  // one trace (--max_trace_mb)
};

// The runner's services to a backend, for one capture.
class CaptureContext {
 public:
  virtual ~CaptureContext() = default;
  virtual const CaptureSettings& settings() const = 0;
  virtual const Clock& clock() const = 0;
  // When the capture gives up, on clock().MonotonicNanos().
  virtual int64_t deadline_ns() const = 0;
  // True once the agent is stopping: a backend returns CANCELLED soon after.
  virtual bool cancelled() const = 0;
  // Tells the server the capture is still RUNNING, with a note for the user and, when the
  // job's trace starts later than asked, the start it got (unix ns on this node's clock).
  virtual void ReportRunning(int64_t moved_start_unix_ns, const std::string& note) = 0;
  // The folder, directly inside settings().kineto_dir, where jobs of `uid` write the traces
  // we ask for: theirs alone (mode 0700, owned by uid, a name nobody can guess).
  virtual absl::StatusOr<std::string> JobFolderFor(int64_t uid) = 0;
  // OK while target.pid() is the process that was discovered (same start time).
  virtual absl::Status CheckSameProcess(const v1::Target& target) const = 0;
  // Takes up to max_trace_bytes of the agent's memory budget for a trace held in memory;
  // RESOURCE_EXHAUSTED when the captures in flight hold nearly all of it. The context gives
  // it back when the capture ends.
  virtual absl::StatusOr<int64_t> ReserveTraceBytes() = 0;
  // A trace file this capture uploads itself: when the profiler's own callback reports it
  // (KinetoEndpoint's on_triggered), the runner does not adopt it as a dynolog request's.
  // Forgotten when the capture ends.
  virtual void ClaimTraceFile(const std::string& path) = 0;
};

class CaptureBackend {
 public:
  virtual ~CaptureBackend() = default;
  // Makes the target's profiler trace as `command` says and returns the file it wrote,
  // opened and checked (owner, no links). Errors say why in words a user acts on.
  virtual absl::StatusOr<CheckedFile> Capture(const v1::CaptureCommand& command, CaptureContext& context) = 0;
};

// The XLA profiler service call (collectors/xprof_client.h: CaptureXprof). Passed in so the
// agent's logic links no gRPC: the daemon hands the real one, tests their own.
using XprofCall = std::function<absl::StatusOr<std::string>(const XprofCaptureOptions& options,
                                                            const std::function<bool()>& cancelled)>;

// What the daemon lends the backends it makes. Any may be empty; a backend that needs a
// missing one fails its captures with the reason.
struct CaptureBackendDeps {
  KinetoEndpoint* kineto = nullptr;  // null when the endpoint could not bind its socket
  XprofCall xprof{};
  std::string nsys{};           // the node's nsys (--nsys), absolute; empty: none
  CommandRunner run_command{};  // how nsys is run as a job's user (RunCommand in the daemon)
};

struct CaptureBackendRow {
  v1::Target::Kind kind;
  std::string_view name;  // in logs and errors
  std::unique_ptr<CaptureBackend> (*make)(const CaptureBackendDeps& deps);
};

// Every backend the agent has, one row per kind of target.
std::span<const CaptureBackendRow> DefaultCaptureBackends();

}  // namespace fleetprof
