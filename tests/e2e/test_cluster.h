#pragma once
// A fleetprof-server (and optionally agents) started from the built binaries on ephemeral
// loopback ports in a temporary folder, for end-to-end tests.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/e2e/process_runner.h"

namespace fleetprof::testing {

class TestCluster {
 public:
  TestCluster();
  ~TestCluster();  // stops everything and removes the folder

  // Starts the server on `grpc_addr` (default: a free port) over `root()/server`; false if it
  // did not get ready.
  bool StartServer(const std::string& grpc_addr = "127.0.0.1:0", const std::vector<std::string>& extra = {});
  // SIGTERMs the server; returns its exit status.
  int StopServer();
  // Starts an agent dialing this server with `extra` flags; returns its index or -1.
  int StartAgent(const std::vector<std::string>& extra);
  int StopAgent(int index);

  // Runs the CLI against this server: `fleetprof ARGS... --server ADDR`.
  CommandResult Cli(std::vector<std::string> args, int timeout_s = 120);

  const std::string& root() const { return root_; }
  pid_t server_pid() const { return server_ ? server_->pid() : -1; }
  pid_t agent_pid(int index) const { return agents_[index] ? agents_[index]->pid() : -1; }
  const std::string& grpc_addr() const { return grpc_addr_; }
  const std::string& http_addr() const { return http_addr_; }
  const std::string& agent_metrics_addr(int index) const { return agent_metrics_[index]; }
  // The agent's dynolog-compatible API address ("" when off).
  const std::string& agent_dynolog_addr(int index) const { return agent_dynolog_[index]; }
  std::string ServerLog() const;
  std::string AgentLog(int index) const;

 private:
  std::string root_;
  std::unique_ptr<ChildProcess> server_;
  std::vector<std::unique_ptr<ChildProcess>> agents_;
  std::vector<std::string> agent_metrics_;
  std::vector<std::string> agent_dynolog_;
  std::string grpc_addr_;
  std::string http_addr_;
  int ready_serial_ = 0;
};

// Polls `predicate` every 50 ms until true or `timeout_s` passes.
bool Eventually(double timeout_s, const std::function<bool()>& predicate);

}  // namespace fleetprof::testing
