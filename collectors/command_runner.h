#pragma once
// Runs a program the node has (never a shell) as another user, bounded: the agent runs as root
// and runs tools such as the node's `nsys` for a job, with that job's uid and gid, so the tool
// reads and writes only what the job's user may. The child gets the environment it is given
// and nothing else, no supplementary groups, no descriptor but its output pipe, its own
// process group (killed whole at the timeout or on cancellation), a cap on the size of any
// file it writes (RLIMIT_FSIZE: a write past it fails and SIGXFSZ ends the program) and
// SIGKILL should the agent die first.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"

namespace fleetprof {

struct CommandSpec {
  std::vector<std::string> argv{};  // argv[0]: the program's absolute path
  std::vector<std::string> env{};   // its whole environment, "NAME=VALUE"
  int64_t uid = -1;               // run as this uid and gid (setresuid/setresgid); -1: as we are
                                  // (a process that is not root can only name itself)
  int64_t gid = -1;
  std::string cwd{};                // entered before the uid changes ("" = "/")
  int64_t timeout_ms = 120'000;   // then the process group is killed (SIGKILL)
  int64_t max_file_bytes = 0;     // RLIMIT_FSIZE of the child; 0: none
  size_t max_output_bytes = 16 << 10;  // stdout and stderr kept (the rest is read and dropped)
  std::function<bool()> cancelled{};     // polled every 100 ms: true kills the group; may be empty
  const Clock* clock = RealClock();
};

struct CommandOutcome {
  int exit_code = -1;      // when the program exited
  int signal = 0;          // when a signal ended it
  bool timed_out = false;  // killed at spec.timeout_ms
  bool cancelled = false;  // killed because spec.cancelled() said so
  std::string output;      // the first max_output_bytes of stdout and stderr, interleaved

  bool ok() const { return exit_code == 0 && signal == 0 && !timed_out && !cancelled; }
  // "exit status 1", "killed after the 120000 ms limit", "ended by signal 25 (a file it wrote
  // reached the size limit)", with the last line of its output when there is one.
  std::string Describe() const;
};

// How the agent runs a program: the daemon passes RunCommand, a test may pass its own.
using CommandRunner = std::function<absl::StatusOr<CommandOutcome>(const CommandSpec& spec)>;

// Runs spec.argv to its end (or its limit). An error only when it could not be run at all
// (no such program, the uid change refused, no process): the message names the program and
// why. Blocks the calling thread; safe to call from several threads at once.
absl::StatusOr<CommandOutcome> RunCommand(const CommandSpec& spec);

}  // namespace fleetprof
