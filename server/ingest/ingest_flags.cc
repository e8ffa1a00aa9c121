#include "server/ingest/ingest_flags.h"

#include "common/flags.h"
#include "server/ingest/regression_webhook.h"

namespace fleetprof {

void IngestFlags::AddFlags(FlagSet* flags) {
  flags->AddInt("max_upload_mb", &max_upload_mb, "largest accepted trace file, MiB");
  trace_limits.AddFlags(flags);
  flags->AddInt("max_concurrent_uploads", &max_concurrent_uploads,
                "uploads indexed at once (more are refused as UNAVAILABLE: clients retry with backoff)");
  flags->AddInt("max_uploads_per_peer", &max_uploads_per_peer, "uploads at once from one client address");
  flags->AddInt("upload_idle_timeout_s", &upload_idle_timeout_s,
                "an upload whose client sends nothing for this long is broken off (it can resume)");
  flags->AddInt("upload_workers", &upload_workers,
                "threads that store uploads' chunks, hand them to the analysis and commit (an upload waiting "
                "for its client holds none)");
  flags->AddInt("stale_upload_hours", &stale_upload_hours, "interrupted uploads older than this are deleted at start");
  flags->AddInt("max_job_series", &max_job_series,
                "job label values per metric family; past it, jobs add up under job=\"other\" (device memory) "
                "or the least recently profiled goes (profile gauges)");
  flags->AddInt("job_idle_minutes", &job_idle_minutes,
                "per-job profile gauges disappear after this long without a new profile");
  flags->AddString("regression_webhook", &regression_webhook,
                   "http:// or https:// URL that each regression record is POSTed to as JSON (retried with "
                   "backoff from a background queue; never holds ingest up); empty: none");
}

absl::StatusOr<IngestLimits> IngestFlags::Limits() const {
  for (absl::Status s : {CheckFlagRange("max_upload_mb", max_upload_mb, 1, int64_t{1} << 30),
                         CheckFlagRange("max_concurrent_uploads", max_concurrent_uploads, 1, 100'000),
                         CheckFlagRange("max_uploads_per_peer", max_uploads_per_peer, 1, 100'000),
                         CheckFlagRange("upload_idle_timeout_s", upload_idle_timeout_s, 1, 86400),
                         CheckFlagRange("upload_workers", upload_workers, 1, 256),
                         CheckFlagRange("stale_upload_hours", stale_upload_hours, 0, 1'000'000),
                         CheckFlagRange("max_job_series", max_job_series, 1, 1'000'000),
                         CheckFlagRange("job_idle_minutes", job_idle_minutes, 1, 1'000'000), trace_limits.Validate()}) {
    if (!s.ok()) return s;
  }
  if (!regression_webhook.empty()) {
    if (absl::Status s = RegressionWebhook::CheckUrl(regression_webhook); !s.ok()) return s;
  }
  IngestLimits limits;
  limits.max_upload_bytes = max_upload_mb << 20;
  limits.trace = trace_limits;
  limits.uploads.max_uploads = static_cast<int>(max_concurrent_uploads);
  limits.uploads.max_per_peer = static_cast<int>(max_uploads_per_peer);
  limits.uploads.idle_timeout = std::chrono::milliseconds(upload_idle_timeout_s * 1000);
  return limits;
}

}  // namespace fleetprof
