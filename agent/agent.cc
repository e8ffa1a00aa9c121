#include "agent/agent.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "rpc/upload_client.h"
#include "agent/reported_targets.h"
#include "auth/exposure.h"
#include "common/runtime.h"
#include "collectors/command_runner.h"
#include "collectors/nsys_cli.h"
#include "collectors/xprof_client.h"
#include "common/safe_paths.h"
#include "prometheus/counter.h"
#include "prometheus/text_serializer.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

constexpr char kVersion[] = "0.1.0";
// Targets one hello or heartbeat lists: half the server's default --max_targets_per_agent, and
// with jobs of at most 253 bytes well inside its default --max_agent_message_kb=256. Kineto
// processes (any local user can start them) are capped per uid first (reported_targets.h).
constexpr size_t kMaxReportedTargets = 512;
constexpr size_t kMaxReportedKinetoPerUid = 64;
// /metrics: a scraper sends its request at once; whoever holds a connection without a whole
// request this long is closed, and past this many connections the longest idle one is.
constexpr int kMetricsRequestTimeoutS = 5;
constexpr int kMetricsMaxConnections = 64;

std::string WithPort(const std::string& addr, int port) {
  return absl::StrCat(addr.substr(0, addr.rfind(':')), ":", port);
}

}  // namespace

ServerLinkMetrics::ServerLinkMetrics(prometheus::Registry& registry, const std::string& node)
    : connected_(prometheus::BuildGauge()
                     .Name("fleetprof_agent_server_connected")
                     .Help("1 while the link to fleetprof-server is up")
                     .Register(registry)
                     .Add({{"node", node}})),
      dropped_firings_(prometheus::BuildCounter()
                           .Name("fleetprof_agent_trigger_firings_dropped_total")
                           .Help(absl::StrCat("device-trigger firings dropped unsent, oldest first, while ",
                                              ServerLink::kMaxPosted, " waited for a slow or unreachable server"))
                           .Register(registry)
                           .Add({{"node", node}})) {}

void ServerLinkMetrics::Follow(const ServerLink& link) {
  connected_.Set(link.connected() ? 1 : 0);
  absl::MutexLock lock(&mu_);
  const int64_t dropped = link.dropped_posts();
  if (dropped > dropped_counted_) {
    dropped_firings_.Increment(static_cast<double>(dropped - dropped_counted_));
    dropped_counted_ = dropped;
  }
}

Agent::Agent(AgentConfig config) : config_(std::move(config)) {}

Agent::~Agent() { Stop(); }

absl::Status Agent::CheckConfig() {
  for (const auto& flag : config_.targets) {
    auto target = ParseTargetFlag(flag);
    if (!target.ok()) return target.status();
    static_targets_.push_back(*target);
  }
  // The journal, the upload secret and XLA answers are the agent's alone (0700).
  for (const auto& dir : {config_.state_dir, config_.state_dir + "/xprof"}) {
    std::string warning;
    if (absl::Status s = EnsureOwnStateFolder(dir, &warning); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("--state_dir: ", s.message()));
    }
    if (!warning.empty()) spdlog::warn("--state_dir: {}", warning);
  }
  // Jobs of any user write their traces here and the agent reads them as root: an absolute
  // path the agent owns, that nobody else created first (--kineto_trace_dir).
  config_.kineto_trace_dir = std::filesystem::absolute(config_.kineto_trace_dir).lexically_normal().string();
  if (absl::Status s = EnsureSharedDropFolder(config_.kineto_trace_dir); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("--kineto_trace_dir: ", s.message()));
  }
  // The node's nsys runs as any job's user: a program only root may change.
  if (!config_.nsys.empty()) {
    if (absl::Status s = CheckNsysProgram(config_.nsys); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("--nsys: ", s.message()));
    }
  }
  // The dynolog protocol has no TLS: off loopback, a token is the protection it can have.
  if (!config_.dynolog_addr.empty() && config_.dynolog_token.empty() && !IsLoopbackAddress(config_.dynolog_addr)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing --dynolog_addr=", config_.dynolog_addr,
        ": a non-loopback dynolog API needs --dynolog_token_file (any host could have root read a trace)"));
  }
  return absl::OkStatus();
}

absl::Status Agent::StartJobOwners() {
  // One owner per job name across Kineto clients, XLA jobs and per-job host metrics
  // (collectors/job_owners.h). A binding outlives a few discovery scans, so a job between two
  // scans keeps its name.
  prometheus::Counter& conflicts = prometheus::BuildCounter()
                                       .Name("fleetprof_agent_job_name_conflicts_total")
                                       .Help("processes that named a job another uid holds on this node (neither targets nor metrics of it)")
                                       .Register(*registry_)
                                       .Add({{"node", config_.node}});
  job_owners_ = std::make_shared<JobOwners>(
      std::max<std::chrono::milliseconds>(std::chrono::seconds(60),
                                          3 * std::chrono::milliseconds(config_.discover_interval_ms)),
      [&conflicts] { conflicts.Increment(); }, config_.job_owners_file, config_.clock);
  if (absl::Status s = job_owners_->LoadAssignments(); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("--job_owners_file: ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status Agent::StartTraceUploads(const std::shared_ptr<grpc::Channel>& channel) {
  TraceUploaderOptions uploads;
  uploads.dirs = config_.trace_dirs;
  uploads.job = config_.job;
  uploads.job_owners = job_owners_;
  uploads.node = config_.node;
  uploads.journal_path = config_.state_dir + "/uploaded.journal";
  uploads.scan_interval_ms = config_.scan_interval_ms;
  uploads.settle_ms = config_.settle_ms;
  uploads.clock = config_.clock;
  if (!config_.nsys.empty()) uploads.nsys = NsysCli(config_.nsys, RunCommand);
  uploads.export_dir = config_.kineto_trace_dir;
  uploads.max_trace_bytes = config_.max_trace_mb << 20;
  uploader_ = std::make_unique<TraceUploader>(
      uploads, [channel](const UploadOptions& upload) { return UploadFile(channel, upload); }, *registry_);
  return config_.trace_dirs.empty() ? absl::OkStatus() : uploader_->Start();
}

absl::Status Agent::Start() {
  if (absl::Status s = CheckConfig(); !s.ok()) return s;
  registry_ = std::make_shared<prometheus::Registry>();
  if (absl::Status s = StartJobOwners(); !s.ok()) return s;
  if (absl::Status s = StartMetrics(); !s.ok()) return s;
  auto channel = MakeChannel(config_.server, config_.security);
  if (absl::Status s = StartTraceUploads(channel); !s.ok()) return s;
  StartKineto(channel);
  discovery_ = std::make_unique<XprofTargetDiscovery>(config_.proc_root, job_owners_.get());
  {
    std::vector<v1::Target> found = discovery_->Scan();
    absl::MutexLock lock(&mu_);
    discovered_ = std::move(found);
  }
  link_ = std::make_unique<ServerLink>(
      channel, [this] { return Hello(); }, [this] { return Heartbeat(); },
      [this](const v1::ServerMessage& message) {
        if (message.has_capture()) captures_->Run(message.capture());
        if (message.has_device_triggers()) device_triggers_.SetTriggers(message.device_triggers());
      },
      config_.clock);
  live_link_ = link_.get();
  discover_ = std::thread([this] { DiscoverLoop(); });  // reads link_: start it after
  link_->Start();
  spdlog::info("fleetprof-agent ready node={} server={} metrics=http://{}/metrics trace_dirs={} targets={}",
               config_.node, config_.server, metrics_addr_, config_.trace_dirs.size(), Targets().size());
  return absl::OkStatus();
}

absl::Status Agent::StartMetrics() {
  link_metrics_ = std::make_unique<ServerLinkMetrics>(*registry_, config_.node);
  // Any local user can connect here. prometheus-cpp's listener gave each connection one of
  // its 2 threads for up to 30 s, so two idle connections stopped every scrape; this listener
  // holds no thread for a connection that waits (http_server.h) and closes the longest idle
  // one when full, so a scrape is answered whatever others hold open.
  HttpServerOptions listener;
  listener.address = config_.metrics_addr;
  listener.threads = 2;
  listener.timeout_s = kMetricsRequestTimeoutS;
  listener.max_connections = kMetricsMaxConnections;
  listener.max_body_bytes = 0;
  listener.max_header_bytes = 8 << 10;
  metrics_http_ = std::make_unique<HttpServer>(listener);
  metrics_http_->Route("GET", "/metrics", [registry = registry_](const HttpRequest&, HttpResponse& res) {
    res.SetContent(prometheus::TextSerializer().Serialize(registry->Collect()), "text/plain; version=0.0.4; charset=utf-8");
  });
  absl::StatusOr<int> port = metrics_http_->Start();
  if (!port.ok()) {
    return absl::UnavailableError(absl::StrCat("cannot listen for metrics on ", config_.metrics_addr, ": ",
                                               port.status().message()));
  }
  metrics_addr_ = WithPort(config_.metrics_addr, *port);

  // Device and host metrics are sampled off the scrape path, on their own thread.
  MetricsSampler::Options sampling;
  sampling.job_owners = job_owners_;
  sampling.node = config_.node;
  sampling.nvml_library = config_.nvml_library;
  sampling.proc_root = config_.proc_root;
  sampling.interval = std::chrono::milliseconds(std::max<int64_t>(config_.sample_interval_ms, 100));
  sampling.max_job_series = static_cast<size_t>(std::max<int64_t>(config_.max_job_series, 1));
  sampling.clock = config_.clock;
  sampling.on_round = [this](const NvmlSnapshot& round, int64_t monotonic_ns) { OnDeviceRound(round, monotonic_ns); };
  sampler_ = std::make_unique<MetricsSampler>(sampling, registry_);
  if (absl::Status s = sampler_->Start(); !s.ok()) return s;

  return absl::OkStatus();
}

void Agent::StartKineto(const std::shared_ptr<grpc::Channel>& channel) {
  // Kineto endpoint: only one daemon per network namespace can hold the socket; without it
  // the agent still serves everything else.
  KinetoEndpoint::Options kineto_options;
  kineto_options.socket_dir = config_.kineto_socket_dir;
  kineto_options.proc_root = config_.proc_root;
  kineto_options.job_owners = job_owners_;
  kineto_options.clock = config_.clock;
  kineto_ = std::make_unique<KinetoEndpoint>(kineto_options);
  // Fires only from Trigger calls, which come from captures_ or dynolog_, both set below.
  kineto_->set_on_triggered(
      [this](const KinetoProcess& process, const KinetoTraceRequest& request, const std::string& requested_name) {
        captures_->AdoptKinetoTrace(process, request, requested_name);
      });
  prometheus::Gauge& kineto_up = CollectorUpGauge(*registry_, "kineto");
  if (absl::Status s = kineto_->Start(); !s.ok()) {
    spdlog::warn("Kineto endpoint off: {}", std::string(s.message()));
    kineto_.reset();
  }
  kineto_up.Set(kineto_ ? 1 : 0);
  CaptureRunner::Options capture_options;
  capture_options.node = config_.node;
  capture_options.xprof_dir = config_.state_dir + "/xprof";
  capture_options.kineto_dir = config_.kineto_trace_dir;
  capture_options.proc_root = config_.proc_root;
  capture_options.max_trace_bytes = config_.max_trace_mb << 20;
  capture_options.max_capture_memory_bytes = config_.max_capture_memory_mb << 20;
  capture_options.clock_sync = [this] { return link_->clock_sync(); };
  capture_options.clock = config_.clock;
  // The transports at the edge: uploads over the server's channel, the XLA profiler
  // service's gRPC client; and the node's nsys, run as the job's user.
  CaptureBackendDeps backends{.kineto = kineto_.get(),
                              .xprof = [](const XprofCaptureOptions& options, const std::function<bool()>& cancelled) {
                                return CaptureXprof(options, cancelled);
                              },
                              .nsys = config_.nsys,
                              .run_command = RunCommand};
  captures_ = std::make_unique<CaptureRunner>(
      capture_options, [channel](const UploadOptions& upload) { return UploadFile(channel, upload); }, backends,
      [this](const v1::AgentMessage& m) { link_->Send(m); });
  if (kineto_ && (!config_.dynolog_addr.empty() || !config_.dynolog_socket.empty())) {
    DynologApiServer::Options api;
    api.listen_address = config_.dynolog_addr;
    api.unix_socket = config_.dynolog_socket;
    api.log_dir = config_.kineto_trace_dir;
    // The job writes into its user's private folder, never the shared one (issue 39).
    api.trace_folder_for = [this](int64_t uid) { return captures_->DynoTraceFolder(uid); };
    api.token = config_.dynolog_token;
    dynolog_ = std::make_unique<DynologApiServer>(*kineto_, api);
    if (absl::Status s = dynolog_->Start(); !s.ok()) {
      spdlog::warn("dynolog-compatible API off: {}", std::string(s.message()));
      dynolog_.reset();
    }
  }

}

std::string Agent::dynolog_addr() const {
  return dynolog_ && !config_.dynolog_addr.empty() ? WithPort(config_.dynolog_addr, dynolog_->port()) : "";
}

void Agent::Stop() {
  if (stopping_.exchange(true)) return;
  { absl::MutexLock wake(&mu_); }  // DiscoverLoop's wait looks at stopping_ again
  if (discover_.joinable()) discover_.join();
  if (uploader_) uploader_->Stop();
  if (link_) link_->Stop();
  // Sources of Kineto triggers stop before the runner their callback uses goes away.
  dynolog_.reset();
  if (kineto_) kineto_->Stop();
  captures_.reset();
  kineto_.reset();
  if (sampler_) sampler_->Stop();
}

std::vector<v1::Target> Agent::Targets() {
  std::vector<v1::Target> targets = static_targets_;
  {
    absl::MutexLock lock(&mu_);
    // A job found in /proc may also be named by --target: one target per address.
    for (const auto& found : discovered_) {
      bool known = false;
      for (const auto& t : static_targets_) known |= t.kind() == found.kind() && t.address() == found.address();
      if (!known) targets.push_back(found);
    }
  }
  if (kineto_) {
    const size_t room = kMaxReportedTargets > targets.size() ? kMaxReportedTargets - targets.size() : 0;
    ReportedKineto chosen = ChooseReportedKineto(kineto_->Processes(), kMaxReportedKinetoPerUid, room);
    LogLeftOutTargets(chosen.left_out);
    for (const auto& process : chosen.reported) {
      v1::Target target;
      target.set_job(process.job);
      target.set_kind(v1::Target::kineto);
      target.set_pid(process.pid);
      target.set_start_ticks(process.start_ticks);
      targets.push_back(std::move(target));
    }
  }
  return targets;
}

void Agent::LogLeftOutTargets(const std::map<int64_t, size_t>& left_out) {
  {
    absl::MutexLock lock(&mu_);
    if (left_out == left_out_) return;  // said once per change, not on every heartbeat
    left_out_ = left_out;
  }
  for (const auto& [uid, count] : left_out) {
    spdlog::warn("not reporting {} Kineto processes of uid {} to the server: at most {} per uid and {} targets in all "
                 "are reported, so no user's processes can crowd out the node's (they stay registered; only "
                 "the reported ones can be captured)",
                 count, uid, kMaxReportedKinetoPerUid, kMaxReportedTargets);
  }
}

v1::AgentHello Agent::Hello() {
  v1::AgentHello hello;
  hello.set_node(config_.node);
  hello.set_version(kVersion);
  for (const auto& dir : config_.trace_dirs) hello.add_trace_dirs(dir);
  for (auto& t : Targets()) *hello.add_targets() = std::move(t);
  return hello;
}

v1::AgentHeartbeat Agent::Heartbeat() {
  v1::AgentHeartbeat beat;
  beat.set_uploaded_files(uploader_->uploaded());
  beat.set_failed_files(uploader_->failed());
  for (auto& t : Targets()) *beat.add_targets() = std::move(t);
  for (const auto& d : sampler_->LatestDevices().devices) {
    if (d.lost) continue;
    v1::DeviceSample* out = beat.add_devices();
    out->set_device(absl::StrCat(d.index));
    out->set_uuid(d.uuid);
    out->set_model(d.model);
    out->set_sampled_at_ns(config_.clock->Now());
    out->set_memory_used_bytes(static_cast<int64_t>(d.memory_used_bytes.value_or(0)));
    out->set_memory_total_bytes(static_cast<int64_t>(d.memory_total_bytes.value_or(0)));
    if (d.utilization_ratio) {
      out->set_has_utilization(true);
      out->set_utilization_ratio(*d.utilization_ratio);
    }
    out->set_memory_utilization_ratio(d.memory_utilization_ratio.value_or(0));
    for (const auto& [job, bytes] : d.job_memory_used_bytes) {
      (*out->mutable_job_memory_used_bytes())[job] = static_cast<int64_t>(bytes);
    }
  }
  link_metrics_->Follow(*link_);
  return beat;
}

void Agent::OnDeviceRound(const NvmlSnapshot& round, int64_t monotonic_ns) {
  for (v1::TriggerFiring& firing : device_triggers_.Observe(round, monotonic_ns)) {
    spdlog::info("device trigger {} of job {} fired: {}", firing.trigger_id(), firing.job(), firing.evidence());
    ServerLink* link = live_link_.load();
    if (link == nullptr) continue;  // not linked yet: the condition will hold again
    v1::AgentMessage message;
    *message.mutable_trigger_firing() = std::move(firing);
    // Queued for the link's writer: this is the NVML sampling thread, which a slow or stalled
    // server must not hold up (Send waits on the stream).
    link->Post(message);
  }
}

void Agent::DiscoverLoop() {
  const Clock& clock = *config_.clock;
  int64_t next_scan = clock.MonotonicNanos();
  while (!stopping_.load()) {
    {
      // The link's metrics follow the link every 100 ms (also while a stalled server holds its
      // heartbeats); Stop() wakes the wait (mu_).
      absl::MutexLock lock(&mu_);
      const auto stop = [this] { return stopping_.load(); };
      if (clock.WaitUntil(&mu_, absl::Condition(&stop), clock.MonotonicNanos() + kLinkGaugeIntervalNs)) return;
    }
    link_metrics_->Follow(*link_);
    if (clock.MonotonicNanos() < next_scan) continue;
    next_scan = clock.MonotonicNanos() + config_.discover_interval_ms * 1'000'000;
    auto found = discovery_->Scan();
    absl::MutexLock lock(&mu_);
    discovered_ = std::move(found);
  }
}

}  // namespace fleetprof
