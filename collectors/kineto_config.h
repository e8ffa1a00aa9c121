#pragma once
// The config text a PyTorch job gets from the node daemon (docs/protocols.md, PyTorch on-demand
// tracing): KEY=VALUE lines that libkineto parses with rules of its own (it trims only some
// whitespace and cuts comments). A client's text is never forwarded: ParseKinetoConfig() reads it
// strictly into a KinetoTraceRequest, and BuildKinetoConfig() writes the job's config from that
// request alone, so what the agent checked (the log file above all) is exactly what the job reads.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace fleetprof {

// What to trace; every field maps to one allow-listed key.
struct KinetoTraceRequest {
  std::string log_file;            // ACTIVITIES_LOG_FILE; the job inserts _<pid> (KinetoTracePath)
  int64_t duration_ms = 0;         // used when iterations == 0; 0 means 500 ms as in `dyno`
  int64_t iterations = 0;          // > 0: trace this many iterations instead of a duration
  int64_t start_iteration = 0;     // PROFILE_START_ITERATION, iteration mode only
  int64_t iteration_roundup = 1;   // PROFILE_START_ITERATION_ROUNDUP, iteration mode only
  int64_t start_time_unix_ms = 0;  // 0 = as soon as the job reads the config
  int64_t warmup_secs = -1;        // ACTIVITIES_WARMUP_PERIOD_SECS; -1: omitted
  bool record_shapes = false;
  bool profile_memory = false;
  bool with_stack = false;
  bool with_flops = false;
  bool with_modules = false;
  // PROFILE_MEMORY: a memory snapshot *instead of* a trace. libkineto then writes the snapshot
  // to the job's own default path, not to log_file: no trace file follows such a config.
  bool memory_snapshot = false;
  int64_t memory_duration_ms = 0;  // PROFILE_MEMORY_DURATION_MSECS; 0: omitted
  std::string trace_id;        // REQUEST_TRACE_ID, omitted when empty
  std::string group_trace_id;  // REQUEST_GROUP_TRACE_ID, omitted when empty
};

// libkineto's KEY=VALUE lines for `request`, one per line. Control characters in string
// values are dropped, so a value cannot start a line or hide a key.
std::string BuildKinetoConfig(const KinetoTraceRequest& request);

// Reads a client's config (a `dyno gputrace` request) by these rules, each broken one an
// INVALID_ARGUMENT naming the line: lines end in '\n'; a line is empty, a comment starting
// with '#', or KEY=VALUE with spaces or tabs only around the key and the value; no other
// control character, no '#' after text, no second '='; every key one of the protocol's
// (docs/protocols.md, PyTorch on-demand tracing) and none twice; booleans true/false; numbers
// decimal and in range; ids of printable characters. A duration and an iteration count together are
// refused, as libkineto refuses them.
absl::StatusOr<KinetoTraceRequest> ParseKinetoConfig(std::string_view text);

// Where the job writes its trace: `_<pid>` goes before the first ".pt.trace.json", else
// before the first ".json"; a name with neither is used unchanged (libkineto's rule).
std::string KinetoTracePath(const std::string& log_file, int32_t pid);

}  // namespace fleetprof
