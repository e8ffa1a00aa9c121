// A stand-alone KinetoEndpoint + DynologApiServer, for tests and the poll-latency benchmark:
// the agent's Kineto side without the rest of the agent.
//
//   kineto_endpoint_main --socket_dir=/tmp/k --dynolog_addr=127.0.0.1:0 --ready_file=/tmp/r
//
// Writes {"port":N,"address":"..."} to --ready_file once both listen. With --wait_traces_s,
// every config handed out starts a wait for the job's trace file, logged as "trace ready" or
// with the error, which is what the agent does before uploading.

#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "collectors/dynolog_api.h"
#include "collectors/kineto_endpoint.h"
#include "collectors/trace_file_waiter.h"
#include "common/flags.h"
#include "common/runtime.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

std::string JsonEscaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

int Run(int argc, char** argv) {
  BlockShutdownSignals();
  const char* env_dir = std::getenv("KINETO_IPC_SOCKET_DIR");
  std::string socket_dir = env_dir != nullptr ? env_dir : "";
  std::string dynolog_addr = "127.0.0.1:1778";
  std::string ready_file;
  std::string log_level = "info";
  int64_t forget_after_s = 60;
  int64_t wait_traces_s = 0;
  FlagSet flags("kineto_endpoint_main [flags]");
  flags.AddString("socket_dir", &socket_dir,
                  "folder of the filesystem socket (default $KINETO_IPC_SOCKET_DIR; "
                  "empty: abstract \\0dynolog\\0)");
  flags.AddString("dynolog_addr", &dynolog_addr, "dynolog API listen address; port 0 = any");
  flags.AddString("ready_file", &ready_file, "write {\"port\":N,\"address\":...} here when up");
  flags.AddString("log_level", &log_level, "trace, debug, info, warn, error");
  flags.AddInt("forget_after_s", &forget_after_s, "forget a process after this much silence");
  flags.AddInt("wait_traces_s", &wait_traces_s, "wait this long for each triggered trace");
  if (absl::Status parsed = flags.Parse(argc, argv); !parsed.ok() || flags.help_requested()) {
    std::fprintf(stderr, "%s\n%s", std::string(parsed.message()).c_str(),
                 flags.HelpText().c_str());
    return parsed.ok() ? 0 : 2;
  }
  SetUpLogging("kineto", log_level);

  KinetoEndpoint::Options options;
  options.socket_dir = socket_dir;
  options.forget_after = std::chrono::seconds(forget_after_s);
  KinetoEndpoint endpoint(options);

  std::atomic<bool> stopping{false};
  std::mutex waiters_mutex;
  std::vector<std::thread> waiters;
  if (wait_traces_s > 0) {
    endpoint.set_on_triggered([&](const KinetoProcess& process, const KinetoTraceRequest& request, const std::string&) {
      if (request.log_file.empty() || request.memory_snapshot) return;
      const std::string path = KinetoTracePath(request.log_file, process.ns_pid);
      const int64_t deadline = RealClock()->MonotonicNanos() + wait_traces_s * 1'000'000'000;
      std::lock_guard<std::mutex> lock(waiters_mutex);
      waiters.emplace_back([path, deadline, &stopping] {
        absl::StatusOr<std::string> trace =
            WaitForTraceFile(path, deadline, *RealClock(), [&stopping] { return stopping.load(); });
        if (trace.ok()) {
          spdlog::info("trace ready: {}", *trace);
        } else {
          spdlog::warn("trace wait failed: {}", std::string(trace.status().message()));
        }
      });
    });
  }

  if (absl::Status started = endpoint.Start(); !started.ok()) {
    spdlog::error("{}", std::string(started.message()));
    return 1;
  }
  DynologApiServer::Options api_options;
  api_options.listen_address = dynolog_addr;
  api_options.log_dir = socket_dir;  // traces requested through the API land beside the socket
  DynologApiServer api(endpoint, api_options);
  if (absl::Status started = api.Start(); !started.ok()) {
    spdlog::error("{}", std::string(started.message()));
    return 1;
  }
  if (!ready_file.empty()) {
    const std::string tmp = ready_file + ".tmp";
    std::ofstream(tmp) << "{\"port\":" << api.port() << ",\"address\":\""
                       << JsonEscaped(endpoint.address()) << "\"}\n";
    std::rename(tmp.c_str(), ready_file.c_str());
  }

  const int sig = WaitForShutdownSignal();
  spdlog::info("signal {}: stopping", sig);
  stopping = true;
  api.Stop();
  endpoint.Stop();
  std::lock_guard<std::mutex> lock(waiters_mutex);
  for (std::thread& waiter : waiters) waiter.join();
  return 0;
}

}  // namespace
}  // namespace fleetprof

int main(int argc, char** argv) { return fleetprof::Run(argc, argv); }
