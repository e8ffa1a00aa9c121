#pragma once
// The server's own health metrics, served on --http_addr /metrics.

#include <memory>
#include <string>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace fleetprof {

class ServerMetrics {
 public:
  ServerMetrics();
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // result: "ok", "duplicate", "invalid", "over_limit" (a trace or size limit), "busy" (too many
  // uploads at once), "interrupted", "error".
  void RecordUpload(const std::string& result, double seconds);
  void AddIngestedBytes(int64_t bytes);
  void RecordQuery(const std::string& rpc, double seconds);
  void SetConnectedAgents(int64_t n);
  // disk_bytes: all table files; events_bytes / raw_bytes: those of the event store and of
  // the uploaded files, so the viewer's storage cost can be read against the raw size.
  void SetStoredProfiles(int64_t profiles, int64_t disk_bytes, int64_t events_bytes, int64_t raw_bytes);
  // state: DONE, PARTIAL, FAILED, or SKIPPED (a scheduled run that did not start).
  void RecordCapture(const std::string& state);
  // outcome of a schedule's run: started, skipped_busy, skipped_missed or failed.
  void RecordScheduledRun(const std::string& outcome);
  void SetSchedules(int64_t n);
  // state: INDEXED or FAILED.
  void RecordCaptureTarget(const std::string& state);
  // A RocksDB background error (reason: flush, compaction, write, memtable, manifest).
  void RecordStorageError(const std::string& reason);
  // Whether the database takes writes, and stored records that did not parse since start.
  void SetStorageHealth(bool serving, int64_t unreadable_records);
  // A SIGHUP reload of the tokens file: ok, or failed (the previous principals stay);
  // `revoked_calls`: calls in progress cancelled because their token is gone.
  void RecordTokensReload(bool ok, int revoked_calls);
  // One regression record of `job` (server/ingest/regression_detector.h).
  void RecordRegression(const std::string& job);
  // A capture started (fleetprof_sampling_captures_total): reason MANUAL, SCHEDULED, SAMPLED or
  // TRIGGERED.
  void RecordCaptureStarted(const std::string& reason);
  // The sampler's captured over fleet device-time in the last hour (server/fleet/sampler.h).
  void SetSamplingOverheadRatio(double ratio);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& uploads_;
  prometheus::Counter& ingested_bytes_;
  prometheus::Histogram& ingest_seconds_;
  prometheus::Family<prometheus::Histogram>& query_seconds_;
  prometheus::Gauge& connected_agents_;
  prometheus::Gauge& stored_profiles_;
  prometheus::Gauge& storage_bytes_;
  prometheus::Family<prometheus::Gauge>& storage_part_bytes_;
  prometheus::Gauge& events_bytes_;
  prometheus::Gauge& raw_bytes_;
  prometheus::Family<prometheus::Counter>& captures_;
  prometheus::Family<prometheus::Counter>& capture_targets_;
  prometheus::Family<prometheus::Counter>& scheduled_runs_;
  prometheus::Gauge& schedules_;
  prometheus::Family<prometheus::Counter>& storage_errors_;
  prometheus::Gauge& storage_serving_;
  prometheus::Gauge& unreadable_records_;
  prometheus::Family<prometheus::Counter>& token_reloads_;
  prometheus::Gauge& token_reload_failed_;
  prometheus::Counter& revoked_calls_;
  prometheus::Family<prometheus::Counter>& regressions_;
  prometheus::Family<prometheus::Counter>& sampling_captures_;
  prometheus::Gauge& sampling_overhead_;
};

}  // namespace fleetprof
