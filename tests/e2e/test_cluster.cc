#include "tests/e2e/test_cluster.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/test_support.h"

namespace fleetprof::testing {

TestCluster::TestCluster() : root_(MakeTempDir()) {}

TestCluster::~TestCluster() {
  for (auto& agent : agents_) {
    if (agent) agent->Stop();
  }
  if (server_) server_->Stop();
  std::system(("rm -rf '" + root_ + "'").c_str());
}

bool TestCluster::StartServer(const std::string& grpc_addr, const std::vector<std::string>& extra) {
  std::string ready = root_ + "/server.ready" + std::to_string(ready_serial_++);
  server_ = std::make_unique<ChildProcess>();
  std::vector<std::string> argv = {BinDir() + "/fleetprof-server", "--grpc_addr=" + grpc_addr,
                                   "--http_addr=127.0.0.1:0", "--data_dir=" + root_ + "/server",
                                   "--ready_file=" + ready, "--heartbeat_ms=200"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  server_->Start(argv, root_ + "/server.log");
  std::string text = WaitForFile(ready, 20);
  grpc_addr_ = JsonStringField(text, "grpc");
  http_addr_ = JsonStringField(text, "http");
  return !grpc_addr_.empty();
}

int TestCluster::StopServer() {
  int status = server_ ? server_->Stop() : -1;
  server_.reset();
  return status;
}

int TestCluster::StartAgent(const std::vector<std::string>& extra) {
  int index = static_cast<int>(agents_.size());
  std::string ready = root_ + "/agent" + std::to_string(index) + ".ready" +
                      std::to_string(ready_serial_++);
  std::vector<std::string> argv = {BinDir() + "/fleetprof-agent", "--server=" + grpc_addr_,
                                   "--metrics_addr=127.0.0.1:0", "--ready_file=" + ready};
  // Defaults that keep parallel tests apart: own state, own Kineto socket, free API port.
  auto has = [&](const std::string& flag) {
    for (const auto& f : extra) {
      if (f.rfind("--" + flag, 0) == 0) return true;
    }
    return false;
  };
  const std::string own = root_ + "/agent" + std::to_string(index);
  if (!has("state_dir")) argv.push_back("--state_dir=" + own);
  if (!has("kineto_socket_dir")) argv.push_back("--kineto_socket_dir=" + own);
  if (!has("kineto_trace_dir")) argv.push_back("--kineto_trace_dir=" + own + "/kineto_traces");
  if (!has("dynolog_addr")) argv.push_back("--dynolog_addr=127.0.0.1:0");
  if (!has("nvml_library")) argv.push_back("--nvml_library=");
  argv.insert(argv.end(), extra.begin(), extra.end());
  agents_.push_back(std::make_unique<ChildProcess>());
  agents_.back()->Start(argv, root_ + "/agent" + std::to_string(index) + ".log");
  std::string text = WaitForFile(ready, 20);
  agent_metrics_.push_back(JsonStringField(text, "metrics"));
  agent_dynolog_.push_back(JsonStringField(text, "dynolog"));
  return text.empty() ? -1 : index;
}

int TestCluster::StopAgent(int index) {
  int status = agents_[index] ? agents_[index]->Stop() : -1;
  agents_[index].reset();
  return status;
}

CommandResult TestCluster::Cli(std::vector<std::string> args, int timeout_s) {
  args.insert(args.begin(), BinDir() + "/fleetprof");
  args.push_back("--server");
  args.push_back(grpc_addr_);
  return RunCommand(args, timeout_s);
}

std::string TestCluster::AgentLog(int index) const {
  return ReadSmallFile(root_ + "/agent" + std::to_string(index) + ".log");
}

std::string TestCluster::ServerLog() const {
  std::ifstream in(root_ + "/server.log");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Eventually(double timeout_s, const std::function<bool()>& predicate) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return predicate();
}

}  // namespace fleetprof::testing
