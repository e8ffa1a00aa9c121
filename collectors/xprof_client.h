#pragma once
// Captures a trace from a JAX / TensorFlow / PyTorch-XLA job through the XLA/TSL profiler
// service the job serves (tensorflow.ProfilerService, docs/protocols.md, XLA profiler service) —
// what `python -m jax.collect_profile` does, made safe to run from a long-lived node agent: bounded
// retries, a deadline, cancellation that also stops the job's profiler, and traces of hundreds
// of MB received without gRPC's 4 MB limit.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "common/clock.h"

namespace fleetprof {

struct XprofCaptureOptions {
  std::string address;  // host:port of the job's profiler server
  int64_t duration_ms = 2000;
  // Shared start across hosts so that their traces line up; 0 = now (+ delay_ms).
  int64_t start_timestamp_ns = 0;
  int64_t delay_ms = 0;
  uint32_t host_tracer_level = 2, device_tracer_level = 1, python_tracer_level = 1;
  // Agent-local folder. The trace ends up in <repository_root>/<session_id>/<host>.xplane.pb,
  // written by us (servers that return the XSpace) or by the job itself (older servers, which
  // must share this filesystem).
  std::string repository_root;
  // Where a trace that comes in the answer is written ("" = repository_root). Apart from it
  // when the job writes into repository_root: a folder of the job's user, where the agent
  // (root) must never write.
  std::string save_root;
  // false: ask the server to write the trace into repository_root itself (a recent server
  // then leaves it out of the answer), for a job on the agent's filesystem: the agent reads a
  // file instead of holding the whole trace as one message.
  bool emit_xspace = true;
  std::string session_id;  // "" = a fresh "fleetprof_<unix ms>"
  std::string host_name;   // "" = the address; ':' becomes '_' in the file name
  int max_attempts = 3;    // UNAVAILABLE and ALREADY_EXISTS are retried, up to this many calls
  // The largest answer taken (agent --max_trace_mb): a larger one fails RESOURCE_EXHAUSTED
  // before it is held whole, so a profiler server cannot fill the agent's memory.
  int64_t max_trace_bytes = int64_t{1} << 30;
  // When set, each attempt dials through it: a socket already connected (for an address a
  // job gave, from inside the job's network namespace: collectors/job_network.h) that the
  // call's channel is made from. Unset: gRPC dials `address` itself.
  std::function<absl::StatusOr<int>()> connect;
  // The start, the session's name and the pauses between attempts (gRPC's own deadlines run
  // on real time).
  const Clock* clock = RealClock();
};

// Runs one capture and returns the local path of the written `.xplane.pb` (in save_root when
// the answer carried it, in repository_root when the server wrote it).
// Errors name the address and what happened: Unavailable (unreachable after max_attempts),
// AlreadyExists (the job stayed busy with another capture), DeadlineExceeded,
// FailedPrecondition (the job returned an empty trace), NotFound (no trace file appeared),
// InvalidArgument (bad options), Cancelled (when `cancelled()` turned true — checked every
// ~50 ms while the call blocks; the call is then cancelled and the job sent Terminate).
absl::StatusOr<std::string> CaptureXprof(const XprofCaptureOptions& options,
                                         const std::function<bool()>& cancelled = {});

// The file name a profiler server gives its trace: host_name with ':' replaced by '_', plus
// ".xplane.pb" (e.g. "10.0.0.5:9999" -> "10.0.0.5_9999.xplane.pb").
std::string XprofTraceFileName(const std::string& host_name);

}  // namespace fleetprof
