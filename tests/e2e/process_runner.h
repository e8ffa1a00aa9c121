#pragma once
// Real processes for integration tests: the daemons run as children on ephemeral loopback
// ports, the CLI runs to completion with its output captured.

#include <sys/types.h>

#include <string>
#include <vector>

namespace fleetprof::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `argv` to completion (killing it after `timeout_s`) and captures stdout and stderr.
CommandResult RunCommand(const std::vector<std::string>& argv, int timeout_s = 60);

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();  // SIGKILLs a child still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts `argv` with stdout+stderr appended to `log_path`; `env` ("K=V") adds to or
  // overrides the inherited environment.
  void Start(const std::vector<std::string>& argv, const std::string& log_path,
             const std::vector<std::string>& env = {});
  // Sends SIGTERM and waits; returns the exit status (or -signal).
  int Stop(int timeout_s = 15);
  bool Running();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// Waits until `path` exists (up to `timeout_s`), then returns its contents ("" on timeout).
std::string WaitForFile(const std::string& path, double timeout_s);
// The value of "key" in a one-line JSON object of strings, e.g. a ready file.
std::string JsonStringField(const std::string& json, const std::string& key);
// A fresh temporary folder, removed by the caller.
std::string MakeTempDir();

}  // namespace fleetprof::testing

namespace fleetprof::testing {
// GET http://host:port/path over a plain socket; returns the body ("" on failure).
std::string HttpGet(const std::string& host_port, const std::string& path);
}  // namespace fleetprof::testing
