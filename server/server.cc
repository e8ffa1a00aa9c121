#include "server/server.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/api_catalog.h"
#include "common/runtime.h"
#include "common/safe_paths.h"
#include "common/stopwatch.h"
#include "common/system_time.h"
#include "diagnosis/rules.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "prometheus/text_serializer.h"
#include "server/fleet/cluster_view.h"
#include "server/fleet/fleet_operations.h"
#include "server/fleet/sampling_operations.h"
#include "server/fleet/trigger_operations.h"
#include "server/http/connect_api.h"
#include "server/http/http_access.h"
#include "server/http/web_ui.h"
#include "server/query/query_operations.h"
#include "server/query/fleet_top_query.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

// Threads for the fleet's unary calls (captures, schedules, agents): quick, and apart from the
// query workers so that slow queries never hold them up.
constexpr int kFleetWorkers = 2;

// Replaces the port of "host:port" with `port`.
std::string WithPort(const std::string& addr, int port) {
  size_t colon = addr.rfind(':');
  return absl::StrCat(addr.substr(0, colon), ":", port);
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

}  // namespace

Server::Server(const ServerFlags& flags, std::unique_ptr<AccessGuard> guard, Clock* clock)
    : flags_(flags), clock_(clock), guard_(std::move(guard)), grpc_access_(guard_.get()) {}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerFlags& flags, const TlsPem& pem,
                                                      std::unique_ptr<AccessGuard> guard, Clock* clock) {
  std::unique_ptr<Server> server(new Server(flags, std::move(guard), clock));
  if (absl::Status s = server->OpenStorage(); !s.ok()) return s;
  if (absl::Status s = server->BuildLayers(); !s.ok()) return s;
  if (absl::Status s = server->StartGrpc(pem); !s.ok()) return s;
  if (absl::Status s = server->StartHttp(); !s.ok()) return s;
  server->serving_ = true;
  server->grpc_server_->GetHealthCheckService()->SetServingStatus(true);
  spdlog::info("fleetprof-server ready grpc={} http={} web=http://{}/ metrics=http://{}/metrics data_dir={}",
               server->grpc_addr_, server->http_addr_, server->http_addr_, server->http_addr_, flags.data_dir);
  if (absl::Status s = server->JoinCluster(); !s.ok()) return s;
  server->WriteReadyFile();
  auto loop = PeriodicLoop::Start("the storage health loop", clock,
                                  [raw = server.get()](int64_t now) { return raw->HealthTick(now); });
  if (!loop.ok()) return loop.status();  // ~Server drains what started
  server->health_loop_ = *std::move(loop);
  if (flags.cluster.replica()) {
    const int64_t period_ns = flags.cluster.orphan_pass_s * 1'000'000'000;
    server->orphan_loop_ = PeriodicLoop::StartOrLog(
        "the orphan collector", clock,
        [raw = server.get(), period_ns](int64_t now) {
          if (!raw->membership_->IsLeader()) {
            raw->orphans_seen_ = Storage::Orphans();  // a new leader starts its passes afresh
            return now + period_ns;
          }
          auto collected = raw->storage_->CollectOrphansSeenTwice(&raw->orphans_seen_);
          if (!collected.ok()) {
            spdlog::warn("collecting orphaned objects: {}", std::string(collected.status().message()));
          } else if (*collected > 0) {
            spdlog::info("removed the objects of {} profiles or uploads that were never committed", *collected);
          }
          return now + period_ns;
        },
        "orphaned objects will not be collected");
  }
  return server;
}

absl::Status Server::JoinCluster() {
  v1::ReplicaInfo self;
  self.set_replica_id(flags_.cluster.replica_id.empty()
                          ? absl::StrCat(HostName(), ":", grpc_addr_.substr(grpc_addr_.rfind(':') + 1))
                          : flags_.cluster.replica_id);
  self.set_grpc_addr(grpc_addr_);
  self.set_http_addr(http_addr_);
  self.set_since_ns(clock_->Now());
  if (flags_.cluster.replica()) registry_->ShareThroughCatalog(self.replica_id(), membership_.get());
  if (absl::Status s = membership_->Join(self); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("cannot join the cluster: ", s.message()));
  }
  if (flags_.cluster.replica()) captures_->UseReplicaClocks(membership_.get(), self.replica_id());
  return absl::OkStatus();
}

absl::Status Server::OpenStorage() {
  // Stored profiles, uploads and the object cache are the server's alone: 0700, so other local
  // users cannot read them (RocksDB's files themselves are 0644).
  std::string open_to_others;
  if (absl::Status s = EnsureOwnStateFolder(flags_.data_dir, &open_to_others); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("--data_dir: ", s.message()));
  }
  if (!open_to_others.empty()) spdlog::warn("--data_dir: {}", open_to_others);
  if (flags_.cluster.replica()) return OpenClusterStorage();
  StoreOptions options;
  options.max_open_files = static_cast<int>(flags_.max_open_files);
  options.on_background_error = [this](const std::string& reason) { metrics_.RecordStorageError(reason); };
  auto storage = Storage::Open(flags_.data_dir, options);
  if (!storage.ok()) {
    return absl::Status(storage.status().code(), absl::StrCat("cannot open the data directory ", flags_.data_dir, ": ",
                                                              storage.status().message()));
  }
  storage_ = *std::move(storage);
  const int64_t stale_ns = flags_.ingest.stale_upload_hours * 3600'000'000'000;
  if (auto cleaned = storage_->uploads().CleanStale(clock_->Now() - stale_ns); cleaned.ok() && *cleaned > 0) {
    spdlog::info("removed {} interrupted uploads older than {} h", *cleaned, flags_.ingest.stale_upload_hours);
  }
  if (auto repaired = storage_->uploads().RepairPartial(); !repaired.ok()) {
    return absl::Status(repaired.status().code(),
                        absl::StrCat("cannot check interrupted uploads: ", repaired.status().message()));
  } else if (*repaired > 0) {
    spdlog::info("{} interrupted uploads resume from the bytes that survived the last stop", *repaired);
  }
  // Before serving: an ingest in flight writes its blobs before it commits.
  if (auto orphans = storage_->CollectOrphans(); !orphans.ok()) {
    spdlog::warn("could not look for blobs of uncommitted profiles: {}", std::string(orphans.status().message()));
  } else if (*orphans > 0) {
    spdlog::info("removed the blobs of {} profiles or uploads that were never committed", *orphans);
  }
  const StorageUsage usage = storage_->engine().Usage();
  metrics_.SetStoredProfiles(usage.profiles, usage.disk_bytes, usage.event_disk_bytes, usage.raw_disk_bytes);
  return absl::OkStatus();
}

// A replica's store is etcd and the object store, shared with every other replica: what the
// embedded store checks at start (interrupted uploads, orphan blobs) may be another replica's
// work in flight, so it is left to the cluster's collector.
absl::Status Server::OpenClusterStorage() {
  auto options = flags_.cluster.StoreOptions();
  if (!options.ok()) return options.status();
  cluster_metrics_ = std::make_unique<ClusterMetrics>(*metrics_.registry());
  options->s3.on_request = [m = cluster_metrics_.get()](std::string_view op, std::string_view result, double s) {
    m->RecordObjectStore(op, result, s);
  };
  options->etcd.on_request = [m = cluster_metrics_.get()](std::string_view op, std::string_view result, double s) {
    m->RecordCatalog(op, result, s);
  };
  // Only a cache (object_cache.h): deleting it loses nothing.
  options->cache_dir = (std::filesystem::path(flags_.data_dir) / "object-cache").string();
  options->cache_bytes = flags_.cluster.cache_mb << 20;
  options->on_cache_lookup = [m = cluster_metrics_.get()](bool hit) { m->RecordCacheLookup(hit); };
  options->on_cache_state = [m = cluster_metrics_.get()](bool working) { m->SetCacheWorking(working); };
  // Half the query workers may wait on the object store; the rest stay for catalog and cached
  // queries however slow it gets.
  options->query_object_reads = std::max(1, static_cast<int>(flags_.query_workers) / 2);
  options->clock = clock_;
  auto engine = cluster::OpenClusterEngine(*options);
  if (!engine.ok()) {
    return absl::Status(engine.status().code(),
                        absl::StrCat("cannot open the cluster's store: ", engine.status().message()));
  }
  storage_ = std::make_unique<Storage>(*std::move(engine));
  const int64_t stale_ns = flags_.ingest.stale_upload_hours * 3600'000'000'000;
  if (auto cleaned = storage_->uploads().CleanStale(clock_->Now() - stale_ns); cleaned.ok() && *cleaned > 0) {
    spdlog::info("removed {} interrupted uploads older than {} h", *cleaned, flags_.ingest.stale_upload_hours);
  }
  spdlog::info("cluster replica: catalog in etcd {} under {}, objects in {}", flags_.cluster.etcd_endpoints,
               flags_.cluster.etcd_prefix, flags_.cluster.object_store);
  return absl::OkStatus();
}

absl::Status Server::BuildLayers() {
  // Checked by ServerFlags::Check before the server starts.
  const AgentLimits agent_limits = *flags_.agents.Limits();
  const IngestLimits ingest_limits = *flags_.ingest.Limits();
  const RetentionPolicy retention_policy = *flags_.retention.Policy();

  membership_ = storage_->engine().NewMembership();
  // Only the cluster's leader runs schedules and retention; an embedded server always leads.
  std::function<bool()> leads;
  if (flags_.cluster.replica()) leads = [m = membership_.get()] { return m->IsLeader(); };
  registry_ = std::make_unique<AgentRegistry>(&storage_->agents(), &metrics_, agent_limits, clock_);
  captures_ = std::make_unique<CaptureCoordinator>(storage_.get(), registry_.get(), &metrics_, clock_,
                                                   flags_.cluster.replica());
  job_metrics_ = std::make_shared<JobMetrics>(clock_, std::chrono::minutes(flags_.ingest.job_idle_minutes),
                                              static_cast<size_t>(flags_.ingest.max_job_series));
  query_api_ = std::make_unique<QueryApi>(storage_.get(), &metrics_);
  fleet_rollup_store_ = std::make_unique<FleetRollupStore>(&storage_->engine().catalog(), storage_->unreadable());
  fleet_rollups_ = std::make_unique<FleetRollupWriter>(
      fleet_rollup_store_.get(), clock_, retention_policy.retention_days,
      [this](const std::string& id) { return captures_->Get(id); }, metrics_.registry().get());
  fleet_rollups_->set_job_labels(NewestJobLabels(&storage_->profiles()));
  fleet_top_ = std::make_unique<FleetTopQuery>(fleet_rollup_store_.get(), clock_, &metrics_);
  // Another replica's delete reaches this one's caches through the catalog's watch.
  storage_->engine().catalog().Watch(CatalogWatcher{
      .changed =
          [q = query_api_.get(), agents = registry_.get(), captures = captures_.get()](
              CatalogTable table, std::string_view key, bool deleted) {
            if (table == CatalogTable::kProfiles && deleted) q->Forget(std::string(key));
            if (table == CatalogTable::kAgents && !deleted) agents->StoredAgentChanged(std::string(key));
            if (table == CatalogTable::kCaptures && !deleted) captures->StoredCaptureChanged(std::string(key));
          },
      .resync = [q = query_api_.get()] { q->ForgetAll(); }});
  // A captured profile keeps its node's device samples from the capture window.
  auto attach_device_samples = [this](v1::ProfileInfo& info, v1::ProfileSummary& summary) {
    auto label = info.labels().find("capture_id");
    if (label == info.labels().end()) return;
    auto capture = captures_->Get(label->second);
    if (!capture.ok()) return;
    for (auto& sample :
         registry_->DeviceHistory(info.node(), capture->start_time_unix_ns() - 1'000'000'000, clock_->Now())) {
      *summary.add_device_samples() = std::move(sample);
    }
  };
  if (!flags_.ingest.regression_webhook.empty()) {
    regression_webhook_ = std::make_unique<RegressionWebhook>(flags_.ingest.regression_webhook, clock_);
  }
  regressions_ = std::make_unique<RegressionDetector>(
      &storage_->regressions(), &metrics_, clock_, [webhook = regression_webhook_.get()](const v1::Regression& r) {
        if (webhook != nullptr) webhook->Enqueue(r);
      });
  // The sampler before the triggers: their loops may ask it for budget (reserve_triggered_) at once.
  sampler_fleet_ = std::make_unique<SamplerFleetSource>(registry_.get(), captures_.get(), &storage_->profiles(), clock_);
  sampler_ = std::make_unique<Sampler>(&storage_->engine().catalog(), sampler_fleet_->Fleet(), clock_, &metrics_, leads);
  sampler_->Start();
  reserve_triggered_ = [sampler = sampler_.get()](int64_t device_ns) { return sampler->ReserveTriggered(device_ns); };
  BuildTriggers();
  ingestor_ = std::make_unique<Ingestor>(
      storage_.get(), &metrics_, ingest_limits, attach_device_samples,
      [this](const v1::ProfileInfo& info, const v1::ProfileSummary& summary) {
        // Remembered first: the trigger runner's queued diagnosis reads this summary.
        query_api_->Remember(info.profile_id(), summary);
        job_metrics_->Observe(info.job(), summary);
        if (auto found = regressions_->Observe(info, summary); !found.ok()) {
          spdlog::warn("regressions of profile {} not judged: {}", info.profile_id(), std::string(found.status().message()));
        } else {
          triggers_->OnRegressions(info.job(), *found);
        }
        triggers_->OnProfileCommitted(info);
        if (absl::Status counted = fleet_rollups_->Observe(info, summary); !counted.ok()) {
          spdlog::warn("profile {} not counted in the fleet's rollups: {}", info.profile_id(), std::string(counted.message()));
        }
        if (retention_) retention_->Nudge();
      },
      clock_);
  ingestor_->set_capture_target_check([this](const std::string& capture_id, const std::string& node) {
    return captures_->HasTarget(capture_id, node);
  });
  auto upload_workers = WorkerPool::Start("the upload workers", static_cast<int>(flags_.ingest.upload_workers));
  if (!upload_workers.ok()) return upload_workers.status();
  upload_workers_ = *std::move(upload_workers);
  ingest_service_ = std::make_unique<IngestServiceImpl>(ingestor_.get(), &grpc_access_, upload_workers_.get());
  scheduler_ = std::make_unique<CaptureScheduler>(&storage_->schedules(), captures_.get(), &metrics_, clock_, leads);
  AddQueryOperations(query_api_.get(), &operations_);
  AddFleetTopOperation(fleet_top_.get(), &operations_);
  AddFleetOperations(captures_.get(), scheduler_.get(), registry_.get(), &operations_);
  AddSamplingOperations(sampler_.get(), &operations_);
  AddTriggerOperations(trigger_store_.get(), triggers_.get(), &operations_);
  AddClusterOperations(membership_.get(), &storage_->engine(), &operations_);
  if (!operations_.status().ok()) return operations_.status();
  retention_ = std::make_unique<Retention>(
      retention_policy, storage_.get(), registry_.get(),
      [this](const std::string& id) {
        v1::DeleteProfileRequest request;
        request.set_profile_id(id);
        return query_api_->DeleteProfile(request).status();
      },
      metrics_.registry().get(), clock_, leads, [m = membership_.get()] { return m->ClockOffsetNs(); });
  return absl::OkStatus();
}

void Server::BuildTriggers() {
  std::vector<std::string> rules;
  TriggerRunner::Hooks hooks;
  for (const diagnosis::Rule& rule : diagnosis::Rules()) {
    rules.push_back(rule.name);
    if (rule.scope == diagnosis::RuleScope::kJob) hooks.job_rules.insert(rule.name);
  }
  trigger_store_ = std::make_unique<TriggerStore>(&storage_->triggers(), clock_, rules);
  hooks.reserve = [this](int64_t device_ns) { return !reserve_triggered_ || reserve_triggered_(device_ns); };
  hooks.diagnose = [this](const v1::DiagnoseRequest& request) { return query_api_->Diagnose(request); };
  triggers_ = std::make_unique<TriggerRunner>(trigger_store_.get(), captures_.get(), registry_.get(),
                                              metrics_.registry().get(), clock_, std::move(hooks));
}

absl::Status Server::StartGrpc(const TlsPem& pem) {
  auto query_workers = WorkerPool::Start("the query workers", static_cast<int>(flags_.query_workers));
  if (!query_workers.ok()) return query_workers.status();
  query_workers_ = *std::move(query_workers);
  auto fleet_workers = WorkerPool::Start("the fleet workers", kFleetWorkers);
  if (!fleet_workers.ok()) return fleet_workers.status();
  fleet_workers_ = *std::move(fleet_workers);
  grpc_operations_ = std::make_unique<GrpcOperations>(&operations_, &grpc_access_, query_workers_.get(),
                                                      fleet_workers_.get(), static_cast<int>(flags_.max_rpc_threads));
  query_service_ = std::make_unique<QueryServiceImpl>(query_api_.get(), &grpc_access_, operations_);
  capture_service_ = std::make_unique<CaptureServiceImpl>(captures_.get(), &grpc_access_, operations_);
  schedule_service_ = std::make_unique<TableServedService<v1::ScheduleService::Service>>(
      v1::ScheduleService::service_full_name(), operations_);
  sampling_service_ = std::make_unique<TableServedService<v1::SamplingService::Service>>(
      v1::SamplingService::service_full_name(), operations_);
  trigger_service_ = std::make_unique<TableServedService<v1::TriggerService::Service>>(
      v1::TriggerService::service_full_name(), operations_);
  cluster_service_ = std::make_unique<TableServedService<v1::ClusterService::Service>>(
      v1::ClusterService::service_full_name(), operations_);
  agent_service_ = std::make_unique<AgentServiceImpl>(
      registry_.get(), &grpc_access_, clock_, flags_.heartbeat_ms,
      [this](const std::string& node, const v1::CaptureUpdate& update, std::function<void()> done) {
        fleet_workers_->Post([this, node, update, done = std::move(done)] {
          captures_->OnUpdate(node, update);
          done();
        });
      },
      operations_);
  // Device triggers: each agent gets them as it connects; its firings queue on the runner's
  // thread (they read and write the catalog, never on gRPC's callback threads).
  agent_service_->set_on_connected([this](const std::string& node) { triggers_->AgentConnected(node); });
  agent_service_->set_on_trigger_firing([this](const std::string& node, const v1::TriggerFiring& firing) {
    triggers_->OnAgentFiring(node, firing);
  });

  grpc::EnableDefaultHealthCheckService(true);
  // Reflection serves the API's schema to any caller it cannot ask for a token; with tokens
  // on, clients use the .proto files instead.
  if (!guard_->enabled()) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(flags_.grpc_addr, GrpcCredentials(pem), &port);
  builder.experimental().SetInterceptorCreators(grpc_access_.Interceptors());
  builder.SetMaxReceiveMessageSize(4 << 20);  // 1 MiB chunks plus framing
  // Agents ping every 30 s (rpc/channel.cc); the server pings idle links too, so a vanished
  // agent's stream and its thread are given back within a minute and a half.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 20'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  // Agent streams and uploads are on the callback API and hold no thread while they wait; the
  // synchronous services take one per call in progress, and a ceiling makes running out of
  // threads a RESOURCE_EXHAUSTED answer, never a crash.
  grpc::ResourceQuota quota("fleetprof-server");
  quota.SetMaxThreads(static_cast<int>(flags_.max_rpc_threads));
  builder.SetResourceQuota(quota);
  // gRPC sets SO_REUSEPORT by default, which would let a second server bind the same port and
  // take part of the agents' connections; refuse to share it, as the HTTP listener does.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // A fixed receive window of 4 MiB per stream. With gRPC's bandwidth probe the window grew
  // while the analysis was the slower side, and one fast client's upload had up to 75 MB
  // waiting in gRPC's buffers. 4 MiB still fills 400 MB/s at a 10 ms round trip.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 4 << 20);
  builder.RegisterService(ingest_service_.get());
  builder.RegisterService(query_service_.get());
  builder.RegisterService(agent_service_.get());
  builder.RegisterService(capture_service_.get());
  builder.RegisterService(schedule_service_.get());
  builder.RegisterService(sampling_service_.get());
  builder.RegisterService(trigger_service_.get());
  builder.RegisterService(cluster_service_.get());
  builder.RegisterCallbackGenericService(grpc_operations_.get());
  grpc_server_ = builder.BuildAndStart();
  if (!grpc_server_ || port == 0) return absl::UnavailableError(absl::StrCat("cannot listen for gRPC on ", flags_.grpc_addr));
  grpc_addr_ = WithPort(flags_.grpc_addr, port);
  return absl::OkStatus();
}

absl::Status Server::StartHttp() {
  auto options = flags_.http.Options(flags_.security.tls_cert, flags_.security.tls_key, flags_.security.tls_client_ca);
  if (!options.ok()) return options.status();
  // Everything /metrics shows, collected at scrape time: self-metrics, the fleet view of every
  // connected agent's devices, and the per-job profile gauges.
  collectables_ = {metrics_.registry(),
                   std::make_shared<FleetMetrics>(registry_.get(), static_cast<size_t>(flags_.ingest.max_job_series)),
                   job_metrics_};
  http_ = std::make_unique<HttpServer>(*std::move(options));
  api_binder_ = std::make_unique<HttpBinder>(&ApiCatalog::Get(), &operations_);
  HttpApiBackends backends;
  backends.api = api_binder_.get();
  backends.not_serving = [this]() -> std::string {
    if (!serving_.load()) return "draining";
    if (!storage_serving_.load()) return "storage: " + storage_->engine().Health().error;
    return "";
  };
  backends.metrics_text = [this] {
    // Leadership as of this scrape: a gauge set once a second could show a lease already lost.
    if (cluster_metrics_) cluster_metrics_->SetLeader(membership_->IsLeader());
    return MetricsText(collectables_);
  };
  backends.warnings = [this]() -> std::string {
    // /healthz is public: the reason is in the log, not here.
    std::vector<std::string> warnings;
    if (reload_failed_.load()) {
      warnings.push_back("the last reload of the tokens file failed; the previous principals stay (see the log)");
    }
    if (std::string store = storage_->engine().Health().warning; !store.empty()) warnings.push_back(std::move(store));
    return absl::StrJoin(warnings, "; ");
  };
  RegisterHttpAccess(*http_, guard_.get(), flags_.http.Browser());
  RegisterHttpApi(*http_, backends);
  RegisterConnectApi(*http_, &ApiCatalog::Get(), &operations_);
  RegisterWebUi(*http_);
  auto port = http_->Start();
  if (!port.ok()) return port.status();
  http_addr_ = WithPort(flags_.http.http_addr, *port);
  return absl::OkStatus();
}

int64_t Server::HealthTick(int64_t now) {
  const bool healthy = storage_->engine().TryResume();  // true at once while writes work
  if (healthy != storage_serving_.exchange(healthy)) {
    if (healthy) {
      spdlog::info("storage takes writes again: serving");
    } else {
      spdlog::error("storage stopped taking writes: NOT_SERVING until it resumes: {}", storage_->engine().Health().error);
    }
    if (serving_.load()) grpc_server_->GetHealthCheckService()->SetServingStatus(healthy);
  }
  metrics_.SetStorageHealth(healthy, storage_->UnreadableRecords());
  membership_->SetAgents(registry_->ConnectedCount());
  // Agent streams that have not said hello in time (server/grpc/agent_service.cc).
  if (const int late = grpc_access_.CancelExpired(clock_->MonotonicNanos()); late > 0) {
    spdlog::info("closed {} agent streams that sent no hello in time", late);
  }
  if (health_ticks_++ % 5 == 0) {
    const StorageUsage usage = storage_->engine().Usage();
    metrics_.SetStoredProfiles(usage.profiles, usage.disk_bytes, usage.event_disk_bytes, usage.raw_disk_bytes);
  }
  return now + 1'000'000'000;
}

void Server::WriteReadyFile() const {
  if (flags_.ready_file.empty()) return;
  std::ofstream(flags_.ready_file + ".tmp") << "{\"grpc\":\"" << grpc_addr_ << "\",\"http\":\"" << http_addr_ << "\"}\n";
  std::error_code ec;
  std::filesystem::rename(flags_.ready_file + ".tmp", flags_.ready_file, ec);
}

void Server::ReloadTokens() {
  if (!guard_->enabled()) return;
  absl::Status s = guard_->Reload();
  reload_failed_ = !s.ok();
  if (!s.ok()) {
    metrics_.RecordTokensReload(false, 0);
    spdlog::error("SIGHUP: tokens file not reloaded, the previous principals stay: {}", std::string(s.message()));
    return;
  }
  // A revoked token ends what it opened; each stream also checks its caller on every message.
  registry_->CloseSessionsUnless([this](const Principal& p) { return guard_->StillValid(p, Scope::kAgent); });
  const int revoked = grpc_access_.CancelRevoked();
  metrics_.RecordTokensReload(true, revoked);
  spdlog::info("SIGHUP: {} principals reloaded from {}; {} calls of revoked tokens cancelled", guard_->principal_count(),
               flags_.security.auth_tokens_file, revoked);
}

void Server::Drain() {
  if (drained_) return;
  drained_ = true;
  serving_ = false;
  const Stopwatch began;
  auto step = [&](const char* what) { spdlog::info("shutdown: {} ({} ms in)", what, began.ElapsedMillis()); };
  // The sampler, the trigger runner, the capture scheduler and retention start captures and
  // write or delete in the catalog on threads of their own, which nothing below stops: they stop
  // first, each after the tick, check, run or deletion in progress, so none of theirs writes
  // after the flush, and none runs while the next leader (after Leave) runs its own (all but the
  // triggers run on the leader only). Starting captures now would be moot anyway: the agents'
  // streams close next. A firing in progress may still ask the stopped sampler for budget: it
  // answers from the catalog. Commits during the drain nudge the stopped retention: nothing.
  if (sampler_) sampler_->Stop();
  if (triggers_) triggers_->Stop();
  if (scheduler_) scheduler_->Stop();
  if (retention_) retention_->Stop();
  step("sampling, triggers, schedules and retention stopped");
  if (membership_) membership_->Leave();  // another replica leads at once, not after the lease
  step("left the cluster");
  if (grpc_server_) grpc_server_->GetHealthCheckService()->SetServingStatus(false);
  if (registry_) registry_->CloseAll();  // agent streams never end on their own; uploads get the deadline below
  if (grpc_server_) {
    // In-flight uploads get a few seconds to finish; agent streams are cut at the deadline.
    grpc_server_->Shutdown(DeadlineAfter(*clock_, std::chrono::seconds(5)));
    grpc_server_->Wait();
  }
  if (registry_) registry_->WaitForWrites();  // the streams' last records, before the flush
  step("gRPC calls ended");
  health_loop_.reset();
  orphan_loop_.reset();
  if (http_) http_->Stop();
  step("HTTP stopped");
  // The capture coordinator writes for others (starts, agents' progress, catalog changes) and on
  // its deadline loop: it stops once gRPC and HTTP calls have ended (the agents' last updates
  // are in, no client can start a capture), after its write in progress and before the flush;
  // a catalog change that comes later is not taken (the next start reads the catalog afresh).
  if (captures_) captures_->Stop();
  // The webhook POSTs what the last commits (ended with the calls above) found and writes nothing
  // to storage: it stops last, after the POST in progress; what is still queued is dropped.
  if (regression_webhook_) regression_webhook_->Stop();
  step("captures and the regression webhook stopped");
  if (storage_) {
    storage_->engine().catalog().StopWatching();  // its callbacks reach the query layer
    if (absl::Status s = storage_->engine().Flush(); !s.ok()) spdlog::warn("flush failed: {}", std::string(s.message()));
  }
  step("storage flushed");
}

Server::~Server() { Drain(); }

}  // namespace fleetprof
