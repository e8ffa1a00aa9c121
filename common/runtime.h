#pragma once
// Small process-level facilities shared by the daemons and the CLI: clocks, ids, logging
// set-up, shutdown signals.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace fleetprof {

// Wall clock, unix nanoseconds.
int64_t UnixNanos();
// A random lowercase hex string of `bytes` random bytes (2*bytes characters), from the
// kernel's CSPRNG: ids made of it (captures, uploads, profiles) cannot be guessed.
std::string RandomHex(int bytes);
// The whole of file `path` when it holds at most `max_bytes`. Reads no more than that, so a
// huge file (or /dev/zero) costs nothing. NOT_FOUND when it cannot be opened,
// INVALID_ARGUMENT when it is larger; both name the path.
absl::StatusOr<std::string> ReadFileUpTo(const std::string& path, size_t max_bytes);

// Raises this process's soft limit of open files to its hard limit (a server with thousands
// of connections needs more than the usual 1024) and returns the limit now in force.
int64_t RaiseOpenFileLimit();

// Sets malloc up for a process that moves large buffers between threads. Call first in main.
// - Buffers of up to 4 MiB (gRPC's 1 MiB upload chunks, their copies, read buffers) stay in
//   malloc's heap instead of a fresh mmap each: glibc's default maps and unmaps every buffer of
//   128 KiB or more, and the page faults of refilling it cost more than the upload's work (the
//   CLI sending a 67 MB trace: 48,000 faults and 0.66 s of CPU before, 2,000 and 0.07 s after).
//   Larger, one-off buffers (an analysis's indexes) are still mapped and go back to the system
//   when freed. Free memory above 64 MiB at the top of a heap goes back too (a lower bound made
//   the server trim and fault in again at every chunk: +20% CPU per uploaded GB).
// - Two malloc arenas per core rather than glibc's eight: every thread an upload's chunks pass
//   through kept a few MiB of them in its own arena (a 637 MB upload's peak: 10 MB lower).
void TuneMalloc();
// Gives the free memory of every malloc arena back to the system (malloc_trim). It walks every
// arena: for after large one-off work, not for each request.
void ReleaseFreeMemory();

// This machine's host name ("localhost" if it cannot be read).
std::string HostName();

// Sets spdlog's default logger: one line per record with time, level and `component`, to stderr.
// `level` is one of trace, debug, info, warn, error.
void SetUpLogging(const std::string& component, const std::string& level);

// Blocks SIGINT/SIGTERM/SIGHUP in the calling thread (call first in main, before threads
// start, so every thread inherits the mask) and returns; WaitForShutdownSignal() then waits.
void BlockShutdownSignals();
// Waits until SIGINT or SIGTERM arrives; returns the signal number. Each SIGHUP meanwhile
// calls `on_hangup` (reload configuration) when given, and is ignored otherwise.
int WaitForShutdownSignal(const std::function<void()>& on_hangup = {});

}  // namespace fleetprof
