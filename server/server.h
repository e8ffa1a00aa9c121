#pragma once
// The server's object graph: storage, the fleet, ingest and query layers, the operation table,
// and the gRPC and HTTP edges over them. Members are declared in the order they are built, so
// they are destroyed in the reverse: an edge goes before the layer it calls, a layer before the
// storage it writes.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/operations.h"
#include "auth/access_guard.h"
#include "common/clock.h"
#include "common/periodic_loop.h"
#include "common/worker_pool.h"
#include "fleetprof/v1/cluster.grpc.pb.h"
#include "fleetprof/v1/sampling.grpc.pb.h"
#include "fleetprof/v1/schedule.grpc.pb.h"
#include "fleetprof/v1/trigger.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/collectable.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/capture_coordinator.h"
#include "server/fleet/capture_scheduler.h"
#include "server/fleet/fleet_metrics.h"
#include "server/fleet/fleet_rollups.h"
#include "server/fleet/retention.h"
#include "server/fleet/sampler.h"
#include "server/fleet/sampler_fleet.h"
#include "server/fleet/trigger_runner.h"
#include "server/fleet/trigger_store.h"
#include "server/grpc/agent_service.h"
#include "server/grpc/capture_service.h"
#include "server/grpc/grpc_access.h"
#include "server/grpc/grpc_operations.h"
#include "server/grpc/ingest_service.h"
#include "server/grpc/query_service.h"
#include "server/http/http_api.h"
#include "server/http/http_server.h"
#include "server/ingest/ingestor.h"
#include "server/ingest/job_metrics.h"
#include "server/ingest/regression_detector.h"
#include "server/ingest/regression_webhook.h"
#include "server/query/fleet_top_query.h"
#include "server/query/query_api.h"
#include "server/cluster_metrics.h"
#include "server/server_flags.h"
#include "server/server_metrics.h"
#include "storage/storage.h"

namespace fleetprof {

class Server {
 public:
  // Opens storage, builds every layer and listens on both ports; the reason when any of that fails
  // (the flags were checked before: ServerFlags::Check). Every layer reads the time and waits
  // on `clock` (the daemon's: RealClock()), which outlives the server.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerFlags& flags, const TlsPem& pem,
                                                       std::unique_ptr<AccessGuard> guard, Clock* clock);
  ~Server();  // drains first if Drain() did not run
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // SIGHUP: reloads the tokens file and ends what revoked tokens opened (agent sessions,
  // uploads, watches, streams that never said hello). A failed reload keeps the previous
  // principals and says so in the log, a metric and /healthz.
  void ReloadTokens();
  // Stops taking work: the background loops that start captures or write (sampling, triggers,
  // schedules, retention) stop, NOT_SERVING, agent streams closed, in-flight uploads get 5 s,
  // then the listeners stop, the capture coordinator and the regression webhook stop, and
  // storage is flushed.
  void Drain();

  const std::string& grpc_addr() const { return grpc_addr_; }
  const std::string& http_addr() const { return http_addr_; }

 private:
  Server(const ServerFlags& flags, std::unique_ptr<AccessGuard> guard, Clock* clock);
  absl::Status OpenStorage();
  absl::Status OpenClusterStorage();
  absl::Status BuildLayers();
  // The trigger store and runner (rules from the diagnosis table), before the ingestor.
  void BuildTriggers();
  absl::Status StartGrpc(const TlsPem& pem);
  absl::Status StartHttp();
  // Registers this replica (a cluster of one when embedded) once both listeners are up.
  absl::Status JoinCluster();
  // Every second: storage health (a background error stops writes: NOT_SERVING until it
  // resumes), agent streams without a hello; every fifth, the storage gauges.
  int64_t HealthTick(int64_t now);
  void WriteReadyFile() const;

  const ServerFlags flags_;
  Clock* const clock_;
  ServerMetrics metrics_;
  std::unique_ptr<AccessGuard> guard_;
  GrpcAccess grpc_access_;
  std::unique_ptr<ClusterMetrics> cluster_metrics_;  // a replica's store requests
  std::unique_ptr<Storage> storage_;
  std::unique_ptr<Membership> membership_;  // the cluster's replicas; embedded: this one, leading
  std::unique_ptr<AgentRegistry> registry_;
  std::unique_ptr<CaptureCoordinator> captures_;
  std::shared_ptr<JobMetrics> job_metrics_;
  std::unique_ptr<QueryApi> query_api_;
  std::unique_ptr<Retention> retention_;  // made after the ingestor, which nudges it
  std::unique_ptr<RegressionWebhook> regression_webhook_;  // --regression_webhook; null without
  std::unique_ptr<RegressionDetector> regressions_;
  // Fleet accounting: sampled profiles' sums per hour and job, kept at commit; FleetTop reads them.
  std::unique_ptr<FleetRollupStore> fleet_rollup_store_;
  std::unique_ptr<FleetRollupWriter> fleet_rollups_;
  std::unique_ptr<FleetTopQuery> fleet_top_;
  std::unique_ptr<TriggerStore> trigger_store_;
  // Before the ingestor, whose commits it hears: it goes after it. reserve_triggered_ asks the
  // sampling budget for a firing's device-time (Sampler::ReserveTriggered); unset: allowed.
  std::unique_ptr<TriggerRunner> triggers_;
  std::function<bool(int64_t device_ns)> reserve_triggered_;
  std::unique_ptr<Ingestor> ingestor_;
  std::unique_ptr<WorkerPool> upload_workers_;
  std::unique_ptr<IngestServiceImpl> ingest_service_;
  std::unique_ptr<CaptureScheduler> scheduler_;
  std::unique_ptr<SamplerFleetSource> sampler_fleet_;
  std::unique_ptr<Sampler> sampler_;  // the sampling policy, run by the leader
  Operations operations_;  // every operation once: the HTTP binder and gRPC both serve from it
  std::unique_ptr<WorkerPool> query_workers_;
  std::unique_ptr<WorkerPool> fleet_workers_;
  std::unique_ptr<GrpcOperations> grpc_operations_;
  std::unique_ptr<QueryServiceImpl> query_service_;
  std::unique_ptr<CaptureServiceImpl> capture_service_;
  std::unique_ptr<TableServedService<v1::ScheduleService::Service>> schedule_service_;
  std::unique_ptr<TableServedService<v1::SamplingService::Service>> sampling_service_;
  std::unique_ptr<TableServedService<v1::TriggerService::Service>> trigger_service_;
  std::unique_ptr<TableServedService<v1::ClusterService::Service>> cluster_service_;
  std::unique_ptr<AgentServiceImpl> agent_service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
  std::atomic<bool> serving_{false};
  std::atomic<bool> storage_serving_{true};
  std::atomic<bool> reload_failed_{false};  // the last SIGHUP reload of the tokens file
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<HttpBinder> api_binder_;
  std::unique_ptr<PeriodicLoop> health_loop_;
  // A replica: the leader collects blobs orphaned in two passes in a row (--orphan_pass_s apart).
  Storage::Orphans orphans_seen_;  // the loop's thread only
  std::unique_ptr<PeriodicLoop> orphan_loop_;
  int64_t health_ticks_ = 0;  // the health loop's thread only
  std::string grpc_addr_;
  std::string http_addr_;
  bool drained_ = false;
};

}  // namespace fleetprof
