#pragma once
// The ingest layer's flags: how large and how many uploads, what one analysis may hold, and
// how long an interrupted upload is kept. They register themselves on the server's FlagSet.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "analysis/trace_limits.h"
#include "server/ingest/ingestor.h"

namespace fleetprof {

class FlagSet;

struct IngestFlags {
  int64_t max_upload_mb = 16384;
  analysis::TraceLimits trace_limits;  // --max_trace_mb, --max_trace_events, …
  int64_t max_concurrent_uploads = 16;
  int64_t max_uploads_per_peer = 8;
  int64_t upload_idle_timeout_s = 60;
  int64_t upload_workers = 4;
  int64_t stale_upload_hours = 24;
  int64_t max_job_series = 1'000;
  int64_t job_idle_minutes = 15;
  std::string regression_webhook;  // empty: none (server/ingest/regression_webhook.h)

  void AddFlags(FlagSet* flags);
  // INVALID_ARGUMENT naming the first flag out of its range.
  absl::StatusOr<IngestLimits> Limits() const;
};

}  // namespace fleetprof
