// fleetprof-server: stores every uploaded profile in RocksDB and answers queries over gRPC
// and HTTP/JSON; serves the web app and Prometheus metrics on the HTTP port.

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analysis/trace_limits.h"
#include "api/api_catalog.h"
#include "common/flags.h"
#include "common/periodic_loop.h"
#include "common/runtime.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "prometheus/text_serializer.h"
#include "server/fleet/agent_registry.h"
#include "auth/access_guard.h"
#include "auth/exposure.h"
#include "server/grpc/agent_service.h"
#include "server/fleet/capture_coordinator.h"
#include "server/fleet/capture_scheduler.h"
#include "server/grpc/capture_service.h"
#include "server/fleet/retention.h"
#include "absl/strings/numbers.h"
#include "fleetprof/v1/schedule.grpc.pb.h"
#include "server/grpc/grpc_operations.h"
#include "server/fleet/fleet_metrics.h"
#include "server/grpc/grpc_access.h"
#include "server/http/http_access.h"
#include "server/fleet/fleet_operations.h"
#include "server/http/http_api.h"
#include "server/http/http_server.h"
#include "server/ingest/job_metrics.h"
#include "server/grpc/ingest_service.h"
#include "server/query/query_api.h"
#include "server/query/query_operations.h"
#include "server/grpc/query_service.h"
#include "server/server_metrics.h"
#include "server/http/web_ui.h"
#include "spdlog/spdlog.h"
#include "storage/storage.h"

namespace fleetprof {
namespace {

struct ServerFlags {
  std::string grpc_addr = "127.0.0.1:7070";
  std::string http_addr = "127.0.0.1:7071";
  std::string data_dir = "./var/server";
  std::string ready_file;
  std::string log_level = "info";
  int64_t max_upload_mb = 16384;
  int64_t max_open_files = 512;
  int64_t max_rpc_threads = 2048;
  int64_t max_agents = 10'000;
  int64_t max_job_series = 1'000;
  int64_t max_targets_per_agent = 1'024;
  int64_t max_agent_message_kb = 256;
  int64_t max_node_history_kb = 1'024;
  int64_t max_concurrent_uploads = 16;
  int64_t max_uploads_per_peer = 8;
  int64_t upload_idle_timeout_s = 60;
  int64_t upload_workers = 4;
  int64_t query_workers = 8;
  analysis::TraceLimits trace_limits;  // --max_trace_mb, --max_trace_events, …
  int64_t heartbeat_ms = 2000;
  int64_t stale_upload_hours = 24;
  int64_t job_idle_minutes = 15;
  int64_t http_threads = 0;  // 0: one per core, at least 2
  int64_t http_max_body_kb = 1024;
  int64_t http_timeout_s = 10;
  int64_t http_max_connections = 4096;
  std::vector<std::string> http_allowed_hosts;
  std::string auth_tokens_file;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  bool insecure = false;
  // Retention (server/retention.h); days may have a fraction.
  std::string retention_days = "0";
  std::string job_retention_days;
  int64_t max_disk_mb = 0;
  std::string capture_retention_days = "30";
  std::string agent_expiry_days = "7";
  int64_t retention_check_s = 60;
};

// Threads for the fleet's unary calls (captures, schedules, agents): quick, and apart from the
// query workers so that slow queries never hold them up.
constexpr int kFleetWorkers = 2;

constexpr char kUsage[] =
    "fleetprof-server: stores trace profiles in RocksDB and serves queries.\n"
    "Usage: fleetprof-server [--grpc_addr=HOST:PORT] [--http_addr=HOST:PORT] [--data_dir=DIR]\n"
    "Port 0 picks a free port; the chosen addresses are logged and written to --ready_file.";

// Replaces the port of "host:port" with `port`.
std::string WithPort(const std::string& addr, int port) {
  size_t colon = addr.rfind(':');
  return absl::StrCat(addr.substr(0, colon), ":", port);
}

// The HTTP listener's settings; an out-of-range flag is an error naming it.
absl::StatusOr<HttpServerOptions> HttpOptionsFrom(const ServerFlags& flags) {
  const auto check = [](const char* flag, int64_t value, int64_t max) -> absl::Status {
    if (value >= 1 && value <= max) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", value, ": want 1..", max));
  };
  for (absl::Status s : {check("http_threads", flags.http_threads == 0 ? 1 : flags.http_threads, 1024),
                         check("http_max_body_kb", flags.http_max_body_kb, int64_t{1} << 20),
                         check("http_timeout_s", flags.http_timeout_s, 3600),
                         check("http_max_connections", flags.http_max_connections, 1'000'000)}) {
    if (!s.ok()) return s;
  }
  HttpServerOptions options;
  options.address = flags.http_addr;
  // Handlers run on the loop's threads (no hand-over per request): past the cores, more
  // threads only help handlers that wait on the disk, and cost every request a wake-up.
  options.threads = flags.http_threads > 0 ? static_cast<int>(flags.http_threads)
                                           : static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  options.max_body_bytes = flags.http_max_body_kb << 10;
  options.timeout_s = static_cast<int>(flags.http_timeout_s);
  // Each connection is a descriptor: keep room under the process's limit for the database,
  // gRPC and the files being uploaded (at the cap, idle connections are shed).
  const int64_t descriptors = RaiseOpenFileLimit();
  options.max_connections = static_cast<int>(std::min<int64_t>(flags.http_max_connections,
                                                               std::max<int64_t>(64, descriptors - 512)));
  if (options.max_connections < flags.http_max_connections) {
    spdlog::warn("--http_max_connections={} lowered to {}: this process may open {} files", flags.http_max_connections,
                 options.max_connections, descriptors);
  }
  options.tls_cert = flags.tls_cert;
  options.tls_key = flags.tls_key;
  options.tls_client_ca = flags.tls_client_ca;
  return options;
}

// The retention flags; a malformed or negative one is an error naming it.
absl::StatusOr<RetentionPolicy> RetentionPolicyFrom(const ServerFlags& flags) {
  RetentionPolicy policy;
  for (auto [name, text, out] : {std::tuple{"retention_days", &flags.retention_days, &policy.retention_days},
                                 {"capture_retention_days", &flags.capture_retention_days, &policy.capture_retention_days},
                                 {"agent_expiry_days", &flags.agent_expiry_days, &policy.agent_expiry_days}}) {
    if (!absl::SimpleAtod(*text, out) || !(*out >= 0) || *out > 1e6) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, "=", *text, ": want a number of days >= 0 (0: keep)"));
    }
  }
  auto jobs = RetentionPolicy::ParseJobDays(flags.job_retention_days);
  if (!jobs.ok()) return jobs.status();
  policy.job_days = *std::move(jobs);
  if (flags.max_disk_mb < 0 || flags.max_disk_mb > (int64_t{1} << 40)) {
    return absl::InvalidArgumentError(absl::StrCat("--max_disk_mb=", flags.max_disk_mb, ": want 0 (no limit) or more"));
  }
  policy.max_disk_bytes = flags.max_disk_mb << 20;
  if (flags.retention_check_s < 1 || flags.retention_check_s > 86400) {
    return absl::InvalidArgumentError(absl::StrCat("--retention_check_s=", flags.retention_check_s, ": want 1..86400"));
  }
  policy.check_every_s = flags.retention_check_s;
  return policy;
}

// The TLS flags hang together, and both listeners are exposed only with the protection
// DESIGN.md asks for.
// The PEM files of the TLS flags, read once at start.
struct TlsPem {
  std::string cert, key, client_ca;
};

absl::StatusOr<TlsPem> CheckSecurityFlags(const ServerFlags& flags) {
  if (flags.tls_cert.empty() != flags.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (!flags.tls_client_ca.empty() && flags.tls_cert.empty()) {
    return absl::InvalidArgumentError("--tls_client_ca (mTLS) needs --tls_cert and --tls_key");
  }
  TlsPem pem;
  for (auto [path, out] : {std::pair{&flags.tls_cert, &pem.cert}, {&flags.tls_key, &pem.key},
                           {&flags.tls_client_ca, &pem.client_ca}}) {
    if (path->empty()) continue;
    auto text = ReadFileUpTo(*path, 1 << 20);
    if (!text.ok() || text->empty()) return absl::InvalidArgumentError(absl::StrCat("cannot read TLS file ", *path));
    *out = *std::move(text);
  }
  ListenerSecurity security;
  security.tokens = !flags.auth_tokens_file.empty();
  security.tls = !flags.tls_cert.empty();
  security.insecure = flags.insecure;
  if (absl::Status s = CheckExposure("grpc_addr", flags.grpc_addr, security); !s.ok()) return s;
  if (absl::Status s = CheckExposure("http_addr", flags.http_addr, security); !s.ok()) return s;
  return pem;
}

std::shared_ptr<grpc::ServerCredentials> GrpcCredentials(const TlsPem& pem) {
  if (pem.cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(pem.client_ca.empty()
                                                ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_key_cert_pairs.push_back({pem.key, pem.cert});
  options.pem_root_certs = pem.client_ca;
  return grpc::SslServerCredentials(options);
}

// The Prometheus text of every collectable, gathered at scrape time.
std::string MetricsText(const std::vector<std::shared_ptr<prometheus::Collectable>>& collectables) {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& c : collectables) {
    for (auto& family : c->Collect()) families.push_back(std::move(family));
  }
  return prometheus::TextSerializer().Serialize(families);
}

int Run(const ServerFlags& flags) {
  auto http_options = HttpOptionsFrom(flags);
  if (!http_options.ok()) {
    spdlog::error("{}", std::string(http_options.status().message()));
    return 2;
  }
  auto tls_pem = CheckSecurityFlags(flags);
  if (!tls_pem.ok()) {
    spdlog::error("{}", std::string(tls_pem.status().message()));
    return 2;
  }
  std::unique_ptr<AccessGuard> guard = std::make_unique<AccessGuard>();
  if (!flags.auth_tokens_file.empty()) {
    auto loaded = AccessGuard::FromTokensFile(flags.auth_tokens_file);
    if (!loaded.ok()) {
      spdlog::error("{}", std::string(loaded.status().message()));
      return 2;
    }
    guard = *std::move(loaded);
    spdlog::info("authentication on: {} principals from {}", guard->principal_count(), flags.auth_tokens_file);
  } else {
    spdlog::warn("authentication off (no --auth_tokens_file): every client that reaches the listeners may do anything");
  }
  auto retention_policy = RetentionPolicyFrom(flags);
  if (!retention_policy.ok()) {
    spdlog::error("{}", std::string(retention_policy.status().message()));
    return 2;
  }
  GrpcAccess grpc_access(guard.get());
  std::error_code ec;
  std::filesystem::create_directories(flags.data_dir, ec);
  ServerMetrics metrics;
  StoreOptions store_options;
  store_options.max_open_files = static_cast<int>(flags.max_open_files);
  store_options.on_background_error = [&metrics](const std::string& reason) {
    metrics.RecordStorageError(reason);
  };
  auto store = Storage::Open(flags.data_dir, store_options);
  if (!store.ok()) {
    spdlog::error("cannot open the data directory {}: {}", flags.data_dir, std::string(store.status().message()));
    return 1;
  }
  if (auto cleaned = (*store)->uploads().CleanStale(UnixNanos() - flags.stale_upload_hours * 3600'000'000'000);
      cleaned.ok() && *cleaned > 0) {
    spdlog::info("removed {} interrupted uploads older than {} h", *cleaned, flags.stale_upload_hours);
  }
  // Before serving: an ingest in flight writes its event blocks before it commits.
  if (auto orphans = (*store)->CollectOrphans(); !orphans.ok()) {
    spdlog::warn("could not check the event store for uncommitted profiles: {}", std::string(orphans.status().message()));
  } else if (*orphans > 0) {
    spdlog::info("removed the event blocks of {} profiles that were never committed", *orphans);
  }

  const StorageUsage usage = (*store)->engine().Usage();
  metrics.SetStoredProfiles(usage.profiles, usage.disk_bytes, usage.event_disk_bytes, usage.raw_disk_bytes);
  AgentLimits agent_limits;
  agent_limits.max_agents = flags.max_agents;
  agent_limits.max_targets_per_agent = flags.max_targets_per_agent;
  agent_limits.max_message_bytes = flags.max_agent_message_kb << 10;
  agent_limits.max_history_bytes = flags.max_node_history_kb << 10;
  AgentRegistry registry(&(*store)->agents(), &metrics, agent_limits);
  IngestLimits limits;
  limits.max_upload_bytes = flags.max_upload_mb << 20;
  limits.trace = flags.trace_limits;
  limits.uploads.max_uploads = static_cast<int>(flags.max_concurrent_uploads);
  limits.uploads.max_per_peer = static_cast<int>(flags.max_uploads_per_peer);
  limits.uploads.idle_timeout = std::chrono::milliseconds(flags.upload_idle_timeout_s * 1000);
  CaptureCoordinator captures(store->get(), &registry, &metrics);
  auto job_metrics = std::make_shared<JobMetrics>(std::chrono::minutes(flags.job_idle_minutes),
                                                  static_cast<size_t>(flags.max_job_series));
  // A captured profile keeps its node's device samples from the capture window.
  auto attach_device_samples = [&](v1::ProfileInfo& info, v1::ProfileSummary& summary) {
    auto label = info.labels().find("capture_id");
    if (label == info.labels().end()) return;
    auto capture = captures.Get(label->second);
    if (!capture.ok()) return;
    for (auto& sample : registry.DeviceHistory(info.node(), capture->start_time_unix_ns() - 1'000'000'000,
                                               UnixNanos())) {
      *summary.add_device_samples() = std::move(sample);
    }
  };
  QueryApi query_api(store->get(), &metrics);
  std::unique_ptr<Retention> retention;  // set once the ingestor that nudges it exists
  Ingestor ingestor(
      store->get(), &metrics, limits,
      attach_device_samples,
      [&](const v1::ProfileInfo& info, const v1::ProfileSummary& summary) {
        job_metrics->Observe(info.job(), summary);
        query_api.Remember(info.profile_id(), summary);
        if (retention) retention->Nudge();
      });
  ingestor.set_capture_target_check(
      [&captures](const std::string& capture_id, const std::string& node) { return captures.HasTarget(capture_id, node); });
  // Declared after the ingestor, so destroyed before it (once the gRPC server is done).
  auto upload_workers = WorkerPool::Start("the upload workers", static_cast<int>(flags.upload_workers));
  if (!upload_workers.ok()) {
    spdlog::error("{}", std::string(upload_workers.status().message()));
    return 1;
  }
  IngestServiceImpl ingest(&ingestor, &grpc_access, upload_workers->get());
  CaptureScheduler scheduler(&(*store)->schedules(), &captures, &metrics);
  // Every operation, once: the HTTP binder and gRPC's generic service both serve from here.
  Operations operations;
  AddQueryOperations(&query_api, &operations);
  AddFleetOperations(&captures, &scheduler, &registry, &operations);
  if (!operations.status().ok()) {
    spdlog::error("{}", operations.status().ToString());
    return 1;
  }
  auto query_workers = WorkerPool::Start("the query workers", static_cast<int>(flags.query_workers));
  auto fleet_workers = WorkerPool::Start("the fleet workers", kFleetWorkers);
  for (const auto* pool : {&query_workers, &fleet_workers}) {
    if (!pool->ok()) {
      spdlog::error("{}", std::string(pool->status().message()));
      return 1;
    }
  }
  GrpcOperations grpc_operations(&operations, &grpc_access, query_workers->get(), fleet_workers->get(),
                                 static_cast<int>(flags.max_rpc_threads));
  QueryServiceImpl query(&query_api, &grpc_access, operations);
  CaptureServiceImpl capture_service(&captures, &grpc_access, operations);
  retention = std::make_unique<Retention>(
      *retention_policy, store->get(), &registry,
      [&query_api](const std::string& id) {
        v1::DeleteProfileRequest request;
        request.set_profile_id(id);
        return query_api.DeleteProfile(request).status();
      },
      metrics.registry().get());
  TableServedService<v1::ScheduleService::Service> schedule_service(v1::ScheduleService::service_full_name(),
                                                                    operations);
  AgentServiceImpl agents(&registry, &grpc_access, flags.heartbeat_ms,
                          [&captures](const std::string& node, const v1::CaptureUpdate& update) {
                            captures.OnUpdate(node, update);
                          },
                          operations);

  grpc::EnableDefaultHealthCheckService(true);
  // Reflection serves the API's schema to any caller it cannot ask for a token; with tokens
  // on, clients use the .proto files instead.
  if (!guard->enabled()) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int grpc_port = 0;
  builder.AddListeningPort(flags.grpc_addr, GrpcCredentials(*tls_pem), &grpc_port);
  builder.experimental().SetInterceptorCreators(grpc_access.Interceptors());
  builder.SetMaxReceiveMessageSize(4 << 20);  // 1 MiB chunks plus framing
  // Agents ping every 30 s (rpc/channel.cc); the server pings idle links too, so a vanished
  // agent's stream and its thread are given back within a minute and a half.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 20'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  // Agent streams and uploads are on the callback API and hold no thread while they wait; the
  // synchronous services (queries, captures, schedules) take one per call in progress, and a
  // ceiling makes running out of threads a RESOURCE_EXHAUSTED answer, never a crash.
  grpc::ResourceQuota quota("fleetprof-server");
  quota.SetMaxThreads(static_cast<int>(flags.max_rpc_threads));
  builder.SetResourceQuota(quota);
  // gRPC sets SO_REUSEPORT by default, which would let a second server bind the same port and
  // take part of the agents' connections; refuse to share it, as the HTTP listener does.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&ingest);
  builder.RegisterService(&query);
  builder.RegisterService(&agents);
  builder.RegisterService(&capture_service);
  builder.RegisterService(&schedule_service);
  builder.RegisterCallbackGenericService(&grpc_operations);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || grpc_port == 0) {
    spdlog::error("cannot listen for gRPC on {}", flags.grpc_addr);
    return 1;
  }
  // Everything /metrics shows, collected at scrape time: self-metrics, the fleet view of every
  // connected agent's devices, and the per-job profile gauges.
  auto fleet = std::make_shared<FleetMetrics>(&registry, static_cast<size_t>(flags.max_job_series));
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables = {metrics.registry(), fleet,
                                                                         job_metrics};
  std::atomic<bool> serving{false};
  HttpServer http(*http_options);
  const HttpBinder api_binder(&ApiCatalog::Get(), &operations);
  HttpApiBackends backends;
  backends.api = &api_binder;
  std::atomic<bool> storage_serving{true};
  backends.not_serving = [&serving, &storage_serving, &store]() -> std::string {
    if (!serving.load()) return "draining";
    if (!storage_serving.load()) return "storage: " + (*store)->engine().Health().error;
    return "";
  };
  backends.metrics_text = [&collectables] { return MetricsText(collectables); };
  std::atomic<bool> reload_failed{false};  // the last SIGHUP reload of the tokens file
  backends.warnings = [&reload_failed]() -> std::string {
    // /healthz is public: the reason is in the log, not here.
    return reload_failed.load() ? "the last reload of the tokens file failed; the previous principals stay (see the log)"
                                : "";
  };
  BrowserPolicy browser;
  for (const std::string& list : flags.http_allowed_hosts) {
    for (absl::string_view name : absl::StrSplit(list, ',', absl::SkipWhitespace())) browser.allowed_hosts.emplace_back(name);
  }
  RegisterHttpAccess(http, guard.get(), std::move(browser));
  RegisterHttpApi(http, backends);
  RegisterWebUi(http);
  auto http_port = http.Start();
  if (!http_port.ok()) {
    spdlog::error("{}", std::string(http_port.status().message()));
    server->Shutdown();
    return 1;
  }
  const std::string grpc_addr = WithPort(flags.grpc_addr, grpc_port);
  const std::string http_addr = WithPort(flags.http_addr, *http_port);
  serving = true;
  server->GetHealthCheckService()->SetServingStatus(true);

  spdlog::info("fleetprof-server ready grpc={} http={} web=http://{}/ metrics=http://{}/metrics data_dir={}",
               grpc_addr, http_addr, http_addr, http_addr, flags.data_dir);
  if (!flags.ready_file.empty()) {
    std::ofstream(flags.ready_file + ".tmp")
        << "{\"grpc\":\"" << grpc_addr << "\",\"http\":\"" << http_addr << "\"}\n";
    std::filesystem::rename(flags.ready_file + ".tmp", flags.ready_file, ec);
  }

  // Every second: the store's health (a background error stops writes: NOT_SERVING until
  // Resume succeeds); every fifth, the storage gauges.
  int64_t health_ticks = 0;
  auto health_loop = PeriodicLoop::Start("the storage health loop", RealClock(), [&](int64_t now) {
    const bool healthy = (*store)->engine().TryResume();  // true at once while writes work
    if (healthy != storage_serving.exchange(healthy)) {
      if (healthy) {
        spdlog::info("storage takes writes again: serving");
      } else {
        spdlog::error("storage stopped taking writes: NOT_SERVING until it resumes: {}", (*store)->engine().Health().error);
      }
      if (serving.load()) server->GetHealthCheckService()->SetServingStatus(healthy);
    }
    metrics.SetStorageHealth(healthy, (*store)->UnreadableRecords());
    // Agent streams that have not said hello in time (server/grpc/agent_service.cc).
    if (const int late = grpc_access.CancelExpired(RealClock()->MonotonicNanos()); late > 0) {
      spdlog::info("closed {} agent streams that sent no hello in time", late);
    }
    if (health_ticks++ % 5 == 0) {
      const StorageUsage usage = (*store)->engine().Usage();
  metrics.SetStoredProfiles(usage.profiles, usage.disk_bytes, usage.event_disk_bytes, usage.raw_disk_bytes);
    }
    return now + 1'000'000'000;
  });
  if (!health_loop.ok()) {
    spdlog::error("{}", std::string(health_loop.status().message()));
    registry.CloseAll();  // agent streams never end on their own
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    http.Stop();
    return 1;
  }

  int sig = WaitForShutdownSignal([&] {
    if (!guard->enabled()) return;
    absl::Status s = guard->Reload();
    reload_failed = !s.ok();
    if (!s.ok()) {
      metrics.RecordTokensReload(false, 0);
      spdlog::error("SIGHUP: tokens file not reloaded, the previous principals stay: {}", std::string(s.message()));
      return;
    }
    // A revoked token ends what it opened: agent sessions, uploads, watches, streams that
    // never said hello. Each stream also checks its caller on every message.
    registry.CloseSessionsUnless([&guard](const Principal& p) { return guard->StillValid(p, Scope::kAgent); });
    const int revoked = grpc_access.CancelRevoked();
    metrics.RecordTokensReload(true, revoked);
    spdlog::info("SIGHUP: {} principals reloaded from {}; {} calls of revoked tokens cancelled", guard->principal_count(),
                 flags.auth_tokens_file, revoked);
  });
  spdlog::info("signal {} received: draining", sig);
  server->GetHealthCheckService()->SetServingStatus(false);
  serving = false;
  registry.CloseAll();  // agent streams never end on their own; uploads get the deadline below
  // In-flight uploads get a few seconds to finish; agent streams are cut at the deadline.
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  server->Wait();
  health_loop->reset();
  http.Stop();
  if (absl::Status s = (*store)->engine().Flush(); !s.ok()) spdlog::warn("flush failed: {}", std::string(s.message()));
  spdlog::info("fleetprof-server stopped");
  return 0;
}

}  // namespace
}  // namespace fleetprof

int main(int argc, char** argv) {
  fleetprof::BlockShutdownSignals();
  fleetprof::ServerFlags flags;
  fleetprof::FlagSet set(fleetprof::kUsage);
  set.AddString("grpc_addr", &flags.grpc_addr, "gRPC listen address (ingest, query, agents)");
  set.AddString("http_addr", &flags.http_addr,
                "HTTP listen address: web app at /, JSON API at /api/v1, /metrics, /healthz");
  set.AddString("data_dir", &flags.data_dir, "RocksDB folder");
  set.AddString("ready_file", &flags.ready_file,
                "write {\"grpc\":…,\"http\":…} here once listening (for scripts and tests)");
  set.AddString("log_level", &flags.log_level, "trace, debug, info, warn or error");
  set.AddInt("max_upload_mb", &flags.max_upload_mb, "largest accepted trace file, MiB");
  flags.trace_limits.AddFlags(&set);
  set.AddInt("max_concurrent_uploads", &flags.max_concurrent_uploads,
             "uploads indexed at once (more are refused as UNAVAILABLE: clients retry with backoff)");
  set.AddInt("max_uploads_per_peer", &flags.max_uploads_per_peer, "uploads at once from one client address");
  set.AddInt("upload_idle_timeout_s", &flags.upload_idle_timeout_s,
             "an upload whose client sends nothing for this long is broken off (it can resume)");
  set.AddInt("upload_workers", &flags.upload_workers,
             "threads that store uploads' chunks, hand them to the analysis and commit (an upload waiting "
             "for its client holds none)");
  set.AddInt("query_workers", &flags.query_workers,
             "threads that answer gRPC queries (the operation table's unary methods); more calls wait, up to "
             "--max_rpc_threads in all, then RESOURCE_EXHAUSTED");
  set.AddInt("max_job_series", &flags.max_job_series,
             "job label values per metric family; past it, jobs add up under job=\"other\" (device memory) "
             "or the least recently profiled goes (profile gauges)");
  set.AddInt("max_agents", &flags.max_agents, "nodes the server keeps, connected or not (a new one past it is refused)");
  set.AddInt("max_targets_per_agent", &flags.max_targets_per_agent, "targets one agent may report");
  set.AddInt("max_agent_message_kb", &flags.max_agent_message_kb, "largest agent hello or heartbeat, KiB");
  set.AddInt("max_node_history_kb", &flags.max_node_history_kb,
             "device samples kept per node (the last hour at most), KiB");
  set.AddInt("max_rpc_threads", &flags.max_rpc_threads,
             "gRPC calls served at once, agent streams included (more: RESOURCE_EXHAUSTED)");
  set.AddInt("max_open_files", &flags.max_open_files,
             "database files kept open at once (at least 20; -1: all, RocksDB's default)");
  set.AddInt("http_threads", &flags.http_threads,
             "threads of the HTTP listener's event loop = requests handled at once (0: one per core, at least 2); "
             "idle and slow connections hold none");
  set.AddInt("http_max_body_kb", &flags.http_max_body_kb, "largest HTTP request body, KiB (larger: 413)");
  set.AddInt("http_timeout_s", &flags.http_timeout_s,
             "HTTP deadline, seconds: for a request's header (from the connection's start or the last answer), "
             "its body, a TLS handshake, each write");
  set.AddRepeated("http_allowed_hosts", &flags.http_allowed_hosts,
                  "without tokens, host names (comma-separated, repeatable) that HTTP requests may address beyond "
                  "localhost and 127.0.0.1; others get 403 (a web page could otherwise reach this server through a "
                  "name of its own: DNS rebinding)");
  set.AddInt("http_max_connections", &flags.http_max_connections,
             "HTTP connections open at once; beyond, the one idle longest is closed for the new one");
  set.AddInt("heartbeat_ms", &flags.heartbeat_ms, "heartbeat interval asked of agents");
  set.AddInt("job_idle_minutes", &flags.job_idle_minutes,
             "per-job profile gauges disappear after this long without a new profile");
  set.AddString("auth_tokens_file", &flags.auth_tokens_file,
                "principals, one per line: SHA256-OF-TOKEN SCOPES NAME (reloaded on SIGHUP); empty: no authentication");
  set.AddString("tls_cert", &flags.tls_cert, "PEM certificate: gRPC and HTTP speak TLS (with --tls_key)");
  set.AddString("tls_key", &flags.tls_key, "PEM private key of --tls_cert");
  set.AddString("tls_client_ca", &flags.tls_client_ca, "PEM CA: clients must present a certificate it signed (mTLS)");
  set.AddBool("insecure", &flags.insecure,
              "allow a non-loopback listener without tokens, or with tokens but without TLS");
  set.AddInt("stale_upload_hours", &flags.stale_upload_hours,
             "interrupted uploads older than this are deleted at start");
  set.AddString("retention_days", &flags.retention_days,
                "profiles older than this (days since ingest, fractions allowed) are deleted; 0: kept forever");
  set.AddString("job_retention_days", &flags.job_retention_days,
                "per-job retention overriding --retention_days: JOB=DAYS[,JOB=DAYS...] (0: keep that job's)");
  set.AddInt("max_disk_mb", &flags.max_disk_mb,
             "when the database folder is larger, the oldest profiles are deleted until it is not; 0: no limit");
  set.AddString("capture_retention_days", &flags.capture_retention_days, "captures older than this are deleted; 0: kept");
  set.AddString("agent_expiry_days", &flags.agent_expiry_days,
                "disconnected agents not seen for this long are forgotten; 0: kept");
  set.AddInt("retention_check_s", &flags.retention_check_s,
             "how often retention looks for old profiles, captures and agents (it also looks after each upload)");
  if (absl::Status s = set.Parse(argc, argv); !s.ok()) {
    std::cerr << "fleetprof-server: " << s.message() << "\n";
    return 2;
  }
  if (set.help_requested()) {
    std::cout << set.HelpText();
    return 0;
  }
  if (!set.positional().empty()) {
    std::cerr << "fleetprof-server: unexpected argument '" << set.positional()[0] << "'\n";
    return 2;
  }
  if (flags.max_concurrent_uploads < 1 || flags.max_uploads_per_peer < 1 || flags.upload_idle_timeout_s < 1 ||
      flags.max_rpc_threads < 16 || flags.max_agents < 1 || flags.max_job_series < 1 || flags.max_targets_per_agent < 1 ||
      flags.max_agent_message_kb < 1 || flags.max_node_history_kb < 1) {
    std::cerr << "fleetprof-server: --max_concurrent_uploads, --max_uploads_per_peer and "
                 "--upload_idle_timeout_s, --max_agents, --max_targets_per_agent, --max_agent_message_kb and "
                 "--max_node_history_kb must be at least 1, --max_rpc_threads at least 16\n";
    return 2;
  }
  if (flags.upload_workers < 1 || flags.upload_workers > 256) {
    std::cerr << "fleetprof-server: --upload_workers=" << flags.upload_workers << " must be between 1 and 256\n";
    return 2;
  }
  if (flags.query_workers < 1 || flags.query_workers > 256) {
    std::cerr << "fleetprof-server: --query_workers=" << flags.query_workers << " must be between 1 and 256\n";
    return 2;
  }
  if (absl::Status s = flags.trace_limits.Validate(); !s.ok()) {
    std::cerr << "fleetprof-server: " << s.message() << "\n";
    return 2;
  }
  fleetprof::SetUpLogging("server", flags.log_level);
  return fleetprof::Run(flags);
}
