#pragma once
// Real child processes for the Kineto tests: the Python stand-ins (a fake PyTorch process,
// a fake `dyno`) and the endpoint driver. Each child runs in its own process group so that
// a shell wrapper and the interpreter under it are stopped together.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace fleetprof::testing {

class ScriptProcess {
 public:
  ScriptProcess() = default;
  ~ScriptProcess();  // SIGKILLs the group if still running
  ScriptProcess(const ScriptProcess&) = delete;
  ScriptProcess& operator=(const ScriptProcess&) = delete;

  // Starts `argv` with stdout and stderr written to `log_path`. The environment is ours minus
  // FLEETPROF_JOB, KINETO_IPC_SOCKET_DIR and SLURM_JOB_ID, plus `env`. False if it cannot start.
  bool Start(const std::vector<std::string>& argv, const std::string& log_path,
             const std::map<std::string, std::string>& env = {});
  // SIGTERM to the group, then waits up to `timeout` (SIGKILL after). Returns the exit code,
  // or -signal.
  int Stop(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Waits for the child to exit on its own; -1000 when it is still running at the timeout.
  int Wait(std::chrono::milliseconds timeout);

  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  // Everything the child wrote so far.
  std::string Output() const;
  // Waits until the output contains `text`; false at the timeout.
  bool WaitForOutput(const std::string& text, std::chrono::milliseconds timeout) const;

 private:
  pid_t pid_ = -1;
  int exit_code_ = 0;
  std::string log_path_;
};

// Number of non-overlapping occurrences of `needle` in `haystack`.
int CountOccurrences(const std::string& haystack, const std::string& needle);

// A fresh folder under $TMPDIR (or /tmp), removed with its contents by the destructor. Kept
// short: unix socket paths are limited to 107 bytes.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace fleetprof::testing
