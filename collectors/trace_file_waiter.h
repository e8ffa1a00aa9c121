#pragma once
// Waiting for the trace a job writes after being handed a Kineto config. libkineto writes
// `<path>.tmp` and renames it into place, so the final name appearing means the file is
// complete; we never read a half-written trace.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "common/clock.h"

namespace fleetprof {

// Returns `path` once it exists as a regular file. DeadlineExceeded ("job wrote no trace
// within the deadline (expected PATH)") when clock.MonotonicNanos() reaches `deadline_ns` first; Cancelled when
// `cancelled` (may be empty) returns true. Checks every 50 ms: a trace takes seconds to
// write, and a poll works even when the folder does not exist yet.
absl::StatusOr<std::string> WaitForTraceFile(const std::string& path, int64_t deadline_ns, const Clock& clock,
                                             const std::function<bool()>& cancelled);

}  // namespace fleetprof
