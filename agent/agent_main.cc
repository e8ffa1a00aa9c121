// fleetprof-agent: runs on every node; keeps a link to fleetprof-server, uploads finished
// traces from watched folders, and serves its metrics for Prometheus.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "agent/server_link.h"
#include "agent/trace_uploader.h"
#include "client/upload_client.h"
#include "collectors/metrics_sampler.h"
#include "common/flags.h"
#include "common/runtime.h"
#include "prometheus/exposer.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

constexpr char kVersion[] = "0.1.0";
constexpr char kUsage[] =
    "fleetprof-agent: node agent of fleetprof.\n"
    "Usage: fleetprof-agent [--server=HOST:PORT] [--trace_dir=DIR]... [--job=J]\n"
    "Uploads every finished trace (*.json, *.json.gz, *.xplane.pb) that appears under each\n"
    "--trace_dir, once, and keeps a live link to the server. Metrics on --metrics_addr.";

struct AgentFlags {
  std::string server = "127.0.0.1:7070";
  std::string metrics_addr = "127.0.0.1:7072";
  std::string node = HostName();
  std::vector<std::string> trace_dirs;
  std::string job;
  std::string state_dir = "./var/agent";
  std::string ready_file;
  std::string log_level = "info";
  int64_t scan_interval_ms = 1000;
  int64_t settle_ms = 2000;
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string proc_root = "/proc";
  int64_t sample_interval_ms = 10000;
};

std::string WithPort(const std::string& addr, int port) {
  return absl::StrCat(addr.substr(0, addr.rfind(':')), ":", port);
}

int Run(const AgentFlags& flags) {
  std::error_code ec;
  std::filesystem::create_directories(flags.state_dir, ec);
  if (ec) {
    spdlog::error("cannot create state folder {}: {}", flags.state_dir, ec.message());
    return 1;
  }
  auto registry = std::make_shared<prometheus::Registry>();
  auto& link_gauge = prometheus::BuildGauge()
                         .Name("fleetprof_agent_server_connected")
                         .Help("1 while the link to fleetprof-server is up")
                         .Register(*registry)
                         .Add({{"node", flags.node}});
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(flags.metrics_addr);
  } catch (const std::exception& e) {
    spdlog::error("cannot listen for metrics on {}: {}", flags.metrics_addr, e.what());
    return 1;
  }
  exposer->RegisterCollectable(registry);
  const std::string metrics_addr = WithPort(flags.metrics_addr, exposer->GetListeningPorts().at(0));

  // Device and host metrics are sampled off the scrape path, on their own thread.
  MetricsSampler::Options sampler_options;
  sampler_options.node = flags.node;
  sampler_options.nvml_library = flags.nvml_library;
  sampler_options.proc_root = flags.proc_root;
  sampler_options.interval = std::chrono::milliseconds(std::max<int64_t>(flags.sample_interval_ms, 100));
  MetricsSampler sampler(sampler_options, registry);
  if (absl::Status s = sampler.Start(); !s.ok()) {
    spdlog::error("metrics sampler: {}", std::string(s.message()));
    return 1;
  }

  auto channel = MakeChannel(flags.server);
  TraceUploaderOptions uploader_options;
  uploader_options.dirs = flags.trace_dirs;
  uploader_options.job = flags.job;
  uploader_options.node = flags.node;
  uploader_options.journal_path = flags.state_dir + "/uploaded.journal";
  uploader_options.scan_interval_ms = flags.scan_interval_ms;
  uploader_options.settle_ms = flags.settle_ms;
  TraceUploader uploader(uploader_options, channel, *registry);
  if (!flags.trace_dirs.empty()) {
    if (absl::Status s = uploader.Start(); !s.ok()) {
      spdlog::error("{}", std::string(s.message()));
      return 1;
    }
  }

  v1::AgentHello hello;
  hello.set_node(flags.node);
  hello.set_version(kVersion);
  for (const auto& dir : flags.trace_dirs) hello.add_trace_dirs(dir);
  ServerLink link(channel, hello, [&] {
    v1::AgentHeartbeat beat;
    beat.set_uploaded_files(uploader.uploaded());
    beat.set_failed_files(uploader.failed());
    link_gauge.Set(1);
    return beat;
  });
  link.Start();

  spdlog::info("fleetprof-agent ready node={} server={} metrics=http://{}/metrics trace_dirs={}",
               flags.node, flags.server, metrics_addr, flags.trace_dirs.size());
  if (!flags.ready_file.empty()) {
    std::ofstream(flags.ready_file + ".tmp") << "{\"metrics\":\"" << metrics_addr << "\"}\n";
    std::filesystem::rename(flags.ready_file + ".tmp", flags.ready_file, ec);
  }
  std::atomic<bool> stopping{false};
  std::thread gauge([&] {
    while (!stopping.load()) {
      link_gauge.Set(link.connected() ? 1 : 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });

  int sig = WaitForShutdownSignal();
  spdlog::info("signal {} received: stopping", sig);
  uploader.Stop();
  link.Stop();
  sampler.Stop();
  stopping = true;
  gauge.join();
  spdlog::info("fleetprof-agent stopped");
  return 0;
}

}  // namespace
}  // namespace fleetprof

int main(int argc, char** argv) {
  fleetprof::BlockShutdownSignals();
  fleetprof::AgentFlags flags;
  fleetprof::FlagSet set(fleetprof::kUsage);
  set.AddString("server", &flags.server, "fleetprof-server gRPC address");
  set.AddString("metrics_addr", &flags.metrics_addr, "HTTP listen address for /metrics");
  set.AddString("node", &flags.node, "this node's name");
  set.AddRepeated("trace_dir", &flags.trace_dirs, "folder to watch for finished trace files");
  set.AddString("job", &flags.job,
                "job of trace-dir files (default: first folder under the trace dir, else unassigned)");
  set.AddString("state_dir", &flags.state_dir, "folder for the agent's own state (upload journal)");
  set.AddString("ready_file", &flags.ready_file, "write {\"metrics\":…} here once serving");
  set.AddString("log_level", &flags.log_level, "trace, debug, info, warn or error");
  set.AddInt("scan_interval_ms", &flags.scan_interval_ms, "how often trace folders are scanned");
  set.AddInt("settle_ms", &flags.settle_ms,
             "a trace file counts as finished once unchanged this long");
  set.AddString("nvml_library", &flags.nvml_library,
                "NVML library to dlopen for device metrics (empty: no device metrics)");
  set.AddString("proc_root", &flags.proc_root, "procfs mount for host and per-job metrics");
  set.AddInt("sample_interval_ms", &flags.sample_interval_ms,
             "how often device and host metrics are sampled");
  if (absl::Status s = set.Parse(argc, argv); !s.ok()) {
    std::cerr << "fleetprof-agent: " << s.message() << "\n";
    return 2;
  }
  if (set.help_requested()) {
    std::cout << set.HelpText();
    return 0;
  }
  if (!set.positional().empty()) {
    std::cerr << "fleetprof-agent: unexpected argument '" << set.positional()[0] << "'\n";
    return 2;
  }
  fleetprof::SetUpLogging("agent", flags.log_level);
  return fleetprof::Run(flags);
}
