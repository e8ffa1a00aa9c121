#pragma once
// fleetprof-agent's parts wired together: metrics endpoint and sampler, trace-folder uploads,
// Kineto endpoint and dynolog-compatible API, target discovery, the server link and the
// capture runner. Start() brings them up in dependency order; Stop() takes them down.

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "rpc/channel.h"

#include "absl/status/status.h"
#include "agent/capture_runner.h"
#include "agent/server_link.h"
#include "agent/trace_uploader.h"
#include "collectors/device_trigger_evaluator.h"
#include "collectors/dynolog_api.h"
#include "collectors/job_owners.h"
#include "collectors/kineto_endpoint.h"
#include "collectors/metrics_sampler.h"
#include "collectors/target_discovery.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "server/http/http_server.h"

namespace fleetprof {

struct AgentConfig {
  std::string server = "127.0.0.1:7070";
  std::string metrics_addr = "127.0.0.1:7072";
  std::string dynolog_addr = "127.0.0.1:1778";
  std::string dynolog_socket;  // the dynolog API on a unix socket too; empty: off
  std::string node;
  std::vector<std::string> trace_dirs;
  std::vector<std::string> targets;  // --target job=J,xprof=HOST:PORT
  std::string job;
  std::string state_dir = "./var/agent";
  std::string kineto_socket_dir;  // empty: the abstract "\0dynolog\0" socket
  std::string kineto_trace_dir = "/tmp/fleetprof_traces";
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string proc_root = "/proc";
  // The node's Nsight Systems CLI (--nsys), run as a job's user for on-demand sessions and to
  // export *.nsys-rep reports; empty: neither (the reason says to pass it).
  std::string nsys;
  // "UID JOB" lines from the job scheduler (collectors/job_owners.h); empty: first claim wins.
  std::string job_owners_file;
  int64_t scan_interval_ms = 1000;
  int64_t settle_ms = 2000;
  int64_t sample_interval_ms = 10000;
  int64_t max_job_series = 100;  // --max_job_series: job label values per metric family
  int64_t discover_interval_ms = 5000;
  int64_t max_trace_mb = 1024;          // the largest trace one profiler server may hand back
  int64_t max_capture_memory_mb = 16384;  // all captures in flight together
  ClientSecurity security;      // token and TLS towards the server
  std::string dynolog_token;    // required in each dynolog API request when set
  const Clock* clock = RealClock();  // every part's time: a test may run them on a simulated one
};

// The server link's own metrics on the agent's /metrics, labelled with the node:
// fleetprof_agent_server_connected (1 while the link is up) and
// fleetprof_agent_trigger_firings_dropped_total (device-trigger firings the link dropped, oldest
// first, while the server was slow to take them: ServerLink::dropped_posts). The link keeps the
// count; Follow brings both metrics up to it (the agent calls it every 100 ms and at each
// heartbeat), so the counter starts at 0 and only grows.
class ServerLinkMetrics {
 public:
  ServerLinkMetrics(prometheus::Registry& registry, const std::string& node);
  // Any thread; never waits on the link.
  void Follow(const ServerLink& link) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  prometheus::Gauge& connected_;
  prometheus::Counter& dropped_firings_;
  absl::Mutex mu_;  // two callers (the heartbeat, the 100 ms loop) add each drop once
  int64_t dropped_counted_ ABSL_GUARDED_BY(mu_) = 0;
};

class Agent {
 public:
  explicit Agent(AgentConfig config);
  ~Agent();

  // Fails only on what makes the agent useless (bad flags, metrics port taken, no state dir);
  // a Kineto socket held by another daemon or a missing NVML just turn those parts off.
  absl::Status Start();
  void Stop();
  const std::string& metrics_addr() const { return metrics_addr_; }
  // host:port of the dynolog-compatible API, "" when it is off.
  std::string dynolog_addr() const;

 private:
  // The flags' checks and the folders they name; static_targets_ from --target.
  absl::Status CheckConfig();
  // job_owners_, with --job_owners_file read and a counter of conflicting claims.
  absl::Status StartJobOwners();
  // Uploads of finished files in --trace_dir folders (started only when there are any).
  absl::Status StartTraceUploads(const std::shared_ptr<grpc::Channel>& channel);
  // The /metrics endpoint and the device/host sampler behind it.
  absl::Status StartMetrics();
  // The Kineto endpoint (off when another daemon holds its socket), the capture runner and
  // the dynolog-compatible API, in the order their callbacks need.
  void StartKineto(const std::shared_ptr<grpc::Channel>& channel);
  v1::AgentHello Hello();
  v1::AgentHeartbeat Heartbeat();
  std::vector<v1::Target> Targets();
  // Logs which uids' Kineto processes go unreported, when that changes.
  void LogLeftOutTargets(const std::map<int64_t, size_t>& left_out);
  void DiscoverLoop();
  // One NVML round of the sampler, judged against the device triggers; firings go to the server.
  void OnDeviceRound(const NvmlSnapshot& round, int64_t monotonic_ns);
  static constexpr int64_t kLinkGaugeIntervalNs = 100'000'000;

  AgentConfig config_;
  std::vector<v1::Target> static_targets_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<HttpServer> metrics_http_;  // serves /metrics
  std::unique_ptr<ServerLinkMetrics> link_metrics_;
  std::string metrics_addr_;
  std::unique_ptr<MetricsSampler> sampler_;
  std::unique_ptr<TraceUploader> uploader_;
  std::shared_ptr<JobOwners> job_owners_;  // shared by the Kineto endpoint and the XLA discovery
  std::unique_ptr<XprofTargetDiscovery> discovery_;  // used by Start(), then by DiscoverLoop alone
  std::unique_ptr<KinetoEndpoint> kineto_;
  std::unique_ptr<DynologApiServer> dynolog_;
  std::unique_ptr<CaptureRunner> captures_;
  std::unique_ptr<ServerLink> link_;
  // The server's device triggers, judged on the sampler's rounds (which start before link_:
  // live_link_ says when firings can be sent).
  DeviceTriggerEvaluator device_triggers_;
  std::atomic<ServerLink*> live_link_{nullptr};

  absl::Mutex mu_;
  std::vector<v1::Target> discovered_ ABSL_GUARDED_BY(mu_);  // XLA jobs found in /proc, refreshed by DiscoverLoop
  std::map<int64_t, size_t> left_out_ ABSL_GUARDED_BY(mu_);  // Kineto processes not reported, by uid
  std::atomic<bool> stopping_{false};
  std::thread discover_;
};

}  // namespace fleetprof
