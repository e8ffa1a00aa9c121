#pragma once
// Ingest, free of any transport: receives a trace file as a stream of UploadRequests (metadata
// first, then chunks), stores the original bytes, analyses them while they stream in, and
// commits the profile with its summary atomically. One upload is an UploadSession
// (server/upload_session.h) that the transport feeds message by message: the gRPC
// IngestService (server/ingest_service.h) from its reactor, tests through UploadStream.

#include <functional>
#include <set>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/status/statusor.h"
#include "analysis/trace_limits.h"
#include "common/clock.h"
#include "common/stopwatch.h"
#include "analysis/trace_summary.h"
#include "auth/scopes.h"
#include "fleetprof/v1/ingest.pb.h"
#include "fleetprof/v1/records.pb.h"
#include "server/server_metrics.h"
#include "server/ingest/upload_guard.h"
#include "server/ingest/upload_session.h"
#include "server/ingest/upload_stream.h"
#include "storage/storage.h"

namespace fleetprof {

struct IngestLimits {
  int64_t max_upload_bytes = int64_t{16} << 30;
  int64_t max_chunk_bytes = 1 << 20;
  analysis::TraceLimits trace;  // what one upload's analysis may hold
  UploadGuard::Limits uploads;  // uploads at once (in all, per peer) and their idle timeout
};


class Ingestor : private UploadSessionContext {
 public:
  // Runs just before a profile is committed and may add to it (device series of captures).
  using BeforeCommit = std::function<void(v1::ProfileInfo&, v1::ProfileSummary&)>;
  // Runs once a profile is committed (per-job metrics).
  using AfterCommit = std::function<void(const v1::ProfileInfo&, const v1::ProfileSummary&)>;

  // `clock` stamps each profile's ingested_at_ns and id, and each upload record's updated_at_ns
  // (retention and the stale-upload cleanup age them on the same clock); the idle timeout of
  // uploads runs on it too.
  Ingestor(Storage* store, ServerMetrics* metrics, IngestLimits limits, BeforeCommit before_commit,
           AfterCommit after_commit, Clock* clock = RealClock())
      : store_(store),
        metrics_(metrics),
        clock_(clock),
        limits_(limits),
        guard_(limits.uploads, clock),
        before_commit_(std::move(before_commit)),
        after_commit_(std::move(after_commit)) {}

  // Starts one upload from `peer` (an address without its port; uploads at once are limited
  // per peer): UNAVAILABLE when as many run already (retry later). The transport then feeds
  // the session the client's messages (server/upload_session.h). `abort` breaks the
  // transport's wait for the client off, from another thread, when the client sent nothing
  // for the idle timeout; false when a message came meanwhile (UploadGuard::Admission).
  absl::StatusOr<std::unique_ptr<UploadSession>> Admit(const Principal& caller, const std::string& peer,
                                                       std::function<bool()> abort);
  // The same for a transport that reads its messages with a blocking call (tests, tools).
  absl::StatusOr<v1::UploadResponse> Upload(UploadStream& stream, const Principal& caller);
  // Where an upload stands, so an interrupted one can resume. Another principal's upload
  // answers UNKNOWN, as one never seen does.
  absl::StatusOr<v1::UploadState> GetUploadState(const std::string& upload_id, const Principal& caller);

  // With tokens on, an upload labelled capture_id=C is accepted only when this says capture C
  // has a target on the uploading node. REQUIRES: before uploads start.
  void set_capture_target_check(std::function<bool(const std::string& capture_id, const std::string& node)> check) {
    capture_target_check_ = std::move(check);
  }

 private:
  // UploadSessionContext: what its sessions ask of it (server/ingest/upload_session.h).
  Storage* store() override { return store_; }
  ServerMetrics* metrics() override { return metrics_; }
  const IngestLimits& limits() const override { return limits_; }
  const Clock* clock() const override { return clock_; }
  bool MayUploadForCapture(const std::string& capture_id, const std::string& node) const override {
    return !capture_target_check_ || capture_target_check_(capture_id, node);
  }
  bool ClaimUploadId(const std::string& id) override;
  void ReleaseUploadId(const std::string& id) override;
  absl::Status Commit(const v1::UploadRecord& record, const std::string& file_name, const std::string& profile_id,
                      const analysis::TraceSummary& summary, const Stopwatch& since_start,
                      v1::UploadResponse* response) override;
  absl::Status Reject(const std::string& upload_id, absl::Status error) override;

  Storage* store_;
  ServerMetrics* metrics_;
  Clock* clock_;
  IngestLimits limits_;
  UploadGuard guard_;
  BeforeCommit before_commit_;
  AfterCommit after_commit_;
  std::function<bool(const std::string&, const std::string&)> capture_target_check_;
  absl::Mutex active_mu_;
  std::set<std::string> active_uploads_ ABSL_GUARDED_BY(active_mu_);
};

// The label the server gives each profile uploaded with a token: the principal's name. A
// client may not set it.
inline constexpr std::string_view kUploadedByLabel = "uploaded_by";

// Where `caller`'s upload `id` is stored. With tokens on, in the caller's own namespace, so an
// id of another principal is simply another upload; an upload from before tokens (no owner) or
// from an older build (its owner's plain id) keeps its plain key. Without tokens, the plain id.
absl::StatusOr<std::string> FindUploadKey(UploadTable& uploads, const Principal& caller, const std::string& id);
// The key `record` is stored under.
inline const std::string& UploadKeyOf(const v1::UploadRecord& record) {
  return record.key().empty() ? record.metadata().upload_id() : record.key();
}

// True when `id` is 1..128 characters of [A-Za-z0-9._:-].
bool IsValidUploadId(const std::string& id);

}  // namespace fleetprof
