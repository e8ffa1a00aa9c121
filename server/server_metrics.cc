#include "server/server_metrics.h"

namespace fleetprof {
namespace {

const prometheus::Histogram::BucketBoundaries& SecondsBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60};
  return kBuckets;
}

}  // namespace

ServerMetrics::ServerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      uploads_(prometheus::BuildCounter()
                   .Name("fleetprof_server_uploads_total")
                   .Help("Trace uploads by result")
                   .Register(*registry_)),
      ingested_bytes_(prometheus::BuildCounter()
                          .Name("fleetprof_server_ingested_bytes_total")
                          .Help("Bytes of trace files received")
                          .Register(*registry_)
                          .Add({})),
      ingest_seconds_(prometheus::BuildHistogram()
                          .Name("fleetprof_server_ingest_duration_seconds")
                          .Help("Time from the first to the last byte of an upload, analysis included")
                          .Register(*registry_)
                          .Add({}, SecondsBuckets())),
      query_seconds_(prometheus::BuildHistogram()
                         .Name("fleetprof_server_query_duration_seconds")
                         .Help("Query latency per RPC")
                         .Register(*registry_)),
      connected_agents_(prometheus::BuildGauge()
                            .Name("fleetprof_server_connected_agents")
                            .Help("Agents with a live link")
                            .Register(*registry_)
                            .Add({})),
      stored_profiles_(prometheus::BuildGauge()
                           .Name("fleetprof_server_stored_profiles")
                           .Help("Profiles in the store (RocksDB estimate)")
                           .Register(*registry_)
                           .Add({})),
      storage_bytes_(prometheus::BuildGauge()
                         .Name("fleetprof_server_storage_bytes")
                         .Help("Bytes of RocksDB table files")
                         .Register(*registry_)
                         .Add({})),
      storage_part_bytes_(prometheus::BuildGauge()
                              .Name("fleetprof_server_storage_part_bytes")
                              .Help("Bytes of RocksDB table files of one part of the store: the event store "
                                    "behind the trace viewer, or the uploaded files")
                              .Register(*registry_)),
      events_bytes_(storage_part_bytes_.Add({{"part", "events"}})),
      raw_bytes_(storage_part_bytes_.Add({{"part", "raw"}})),
      captures_(prometheus::BuildCounter()
                    .Name("fleetprof_server_captures_total")
                    .Help("Finished captures by final state")
                    .Register(*registry_)),
      capture_targets_(prometheus::BuildCounter()
                           .Name("fleetprof_server_capture_targets_total")
                           .Help("Capture targets by final state")
                           .Register(*registry_)),
      scheduled_runs_(prometheus::BuildCounter()
                          .Name("fleetprof_server_scheduled_runs_total")
                          .Help("Runs of capture schedules by outcome: started, skipped_busy (a capture of the "
                                "job was still running), skipped_missed (the server was not running at the "
                                "time), failed (the capture could not start)")
                          .Register(*registry_)),
      schedules_(prometheus::BuildGauge()
                     .Name("fleetprof_server_schedules")
                     .Help("Capture schedules kept by the server")
                     .Register(*registry_)
                     .Add({})),
      storage_errors_(prometheus::BuildCounter()
                          .Name("fleetprof_server_storage_background_errors_total")
                          .Help("RocksDB background errors by reason (flush, compaction, write, memtable, "
                                "manifest); after one the database takes no writes until it resumes")
                          .Register(*registry_)),
      storage_serving_(prometheus::BuildGauge()
                           .Name("fleetprof_server_storage_serving")
                           .Help("1 while the database takes writes, 0 after a background error until "
                                 "it resumes (then /healthz answers 503)")
                           .Register(*registry_)
                           .Add({})),
      unreadable_records_(prometheus::BuildGauge()
                              .Name("fleetprof_server_unreadable_records")
                              .Help("Stored records that did not parse since the server started (each is "
                                    "logged; profiles are listed as unreadable)")
                              .Register(*registry_)
                              .Add({})),
      token_reloads_(prometheus::BuildCounter()
                         .Name("fleetprof_server_tokens_reloads_total")
                         .Help("Reloads of --auth_tokens_file on SIGHUP by result (ok, failed: the file was "
                               "refused and the principals loaded before stay in force)")
                         .Register(*registry_)),
      token_reload_failed_(prometheus::BuildGauge()
                               .Name("fleetprof_server_tokens_reload_failed")
                               .Help("1 while the last reload of --auth_tokens_file failed (the server runs on "
                                     "the previous principals; /healthz says so)")
                               .Register(*registry_)
                               .Add({})),
      revoked_calls_(prometheus::BuildCounter()
                         .Name("fleetprof_server_revoked_calls_total")
                         .Help("Calls in progress (streams, uploads) cancelled because a reload removed their token")
                         .Register(*registry_)
                         .Add({})),
      regressions_(prometheus::BuildCounter()
                       .Name("fleetprof_regressions_total")
                       .Help("Regression records by job: a profile slower than the job's recent baseline "
                             "(step time, a top kernel or op)")
                       .Register(*registry_)),
      sampling_captures_(prometheus::BuildCounter()
                             .Name("fleetprof_sampling_captures_total")
                             .Help("Captures started, by why they ran: MANUAL, SCHEDULED, SAMPLED or TRIGGERED")
                             .Register(*registry_)),
      sampling_overhead_(prometheus::BuildGauge()
                             .Name("fleetprof_sampling_overhead_ratio")
                             .Help("Device-time captured by sampled captures over the fleet's device-time, in "
                                   "the periods of the last hour (0 with sampling off)")
                             .Register(*registry_)
                             .Add({})) {
  for (const char* reason : {"MANUAL", "SCHEDULED", "SAMPLED", "TRIGGERED"}) sampling_captures_.Add({{"reason", reason}});
  storage_serving_.Set(1);
  for (const char* result : {"ok", "failed"}) token_reloads_.Add({{"result", result}});
  for (const char* reason : {"flush", "compaction", "write", "memtable", "manifest"}) {
    storage_errors_.Add({{"reason", reason}});
  }
  for (const char* state : {"DONE", "PARTIAL", "FAILED", "SKIPPED"}) captures_.Add({{"state", state}});
  for (const char* outcome : {"started", "skipped_busy", "skipped_missed", "failed"}) {
    scheduled_runs_.Add({{"outcome", outcome}});
  }
  for (const char* state : {"INDEXED", "FAILED"}) capture_targets_.Add({{"state", state}});
  for (const char* result : {"ok", "duplicate", "invalid", "over_limit", "busy", "interrupted", "error"}) {
    uploads_.Add({{"result", result}});
  }
}

void ServerMetrics::RecordUpload(const std::string& result, double seconds) {
  uploads_.Add({{"result", result}}).Increment();
  if (result == "ok") ingest_seconds_.Observe(seconds);
}

void ServerMetrics::AddIngestedBytes(int64_t bytes) {
  ingested_bytes_.Increment(static_cast<double>(bytes));
}

void ServerMetrics::RecordQuery(const std::string& rpc, double seconds) {
  query_seconds_.Add({{"rpc", rpc}}, SecondsBuckets()).Observe(seconds);
}

void ServerMetrics::RecordCapture(const std::string& state) {
  captures_.Add({{"state", state}}).Increment();
}

void ServerMetrics::RecordScheduledRun(const std::string& outcome) {
  scheduled_runs_.Add({{"outcome", outcome}}).Increment();
}

void ServerMetrics::SetSchedules(int64_t n) { schedules_.Set(static_cast<double>(n)); }

void ServerMetrics::RecordStorageError(const std::string& reason) {
  storage_errors_.Add({{"reason", reason}}).Increment();
}

void ServerMetrics::SetStorageHealth(bool serving, int64_t unreadable_records) {
  storage_serving_.Set(serving ? 1 : 0);
  unreadable_records_.Set(static_cast<double>(unreadable_records));
}

void ServerMetrics::RecordTokensReload(bool ok, int revoked_calls) {
  token_reloads_.Add({{"result", ok ? "ok" : "failed"}}).Increment();
  token_reload_failed_.Set(ok ? 0 : 1);
  revoked_calls_.Increment(revoked_calls);
}

void ServerMetrics::RecordCaptureTarget(const std::string& state) {
  capture_targets_.Add({{"state", state}}).Increment();
}

void ServerMetrics::SetConnectedAgents(int64_t n) { connected_agents_.Set(static_cast<double>(n)); }

void ServerMetrics::SetStoredProfiles(int64_t profiles, int64_t disk_bytes, int64_t events_bytes,
                                      int64_t raw_bytes) {
  stored_profiles_.Set(static_cast<double>(profiles));
  storage_bytes_.Set(static_cast<double>(disk_bytes));
  events_bytes_.Set(static_cast<double>(events_bytes));
  raw_bytes_.Set(static_cast<double>(raw_bytes));
}

void ServerMetrics::RecordRegression(const std::string& job) { regressions_.Add({{"job", job}}).Increment(); }

void ServerMetrics::RecordCaptureStarted(const std::string& reason) {
  sampling_captures_.Add({{"reason", reason}}).Increment();
}

void ServerMetrics::SetSamplingOverheadRatio(double ratio) { sampling_overhead_.Set(ratio); }

}  // namespace fleetprof
