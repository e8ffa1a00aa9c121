#pragma once
// Ingest, free of any transport: receives a trace file as a stream of UploadRequests (metadata
// first, then chunks), stores the original bytes, analyses them while they stream in, and
// commits the profile with its summary atomically. The gRPC IngestService
// (server/ingest_service.h) adapts its stream to UploadStream; tests can drive it directly.

#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "analysis/trace_limits.h"
#include "analysis/trace_summary.h"
#include "auth/scopes.h"
#include "fleetprof/v1/ingest.pb.h"
#include "fleetprof/v1/records.pb.h"
#include "server/server_metrics.h"
#include "server/upload_guard.h"
#include "server/upload_stream.h"
#include "storage/profile_store.h"

namespace fleetprof {

struct IngestLimits {
  int64_t max_upload_bytes = int64_t{16} << 30;
  int64_t max_chunk_bytes = 1 << 20;
  analysis::TraceLimits trace;  // what one upload's analysis may hold
  UploadGuard::Limits uploads;  // uploads at once (in all, per peer) and their idle timeout
};


class Ingestor {
 public:
  // Runs just before a profile is committed and may add to it (device series of captures).
  using BeforeCommit = std::function<void(v1::ProfileInfo&, v1::ProfileSummary&)>;
  // Runs once a profile is committed (per-job metrics).
  using AfterCommit = std::function<void(const v1::ProfileInfo&, const v1::ProfileSummary&)>;

  Ingestor(ProfileStore* store, ServerMetrics* metrics, IngestLimits limits, BeforeCommit before_commit,
           AfterCommit after_commit)
      : store_(store),
        metrics_(metrics),
        limits_(limits),
        guard_(limits.uploads),
        before_commit_(std::move(before_commit)),
        after_commit_(std::move(after_commit)) {}

  // Stores and indexes one trace. Idempotent on upload_id: the id of a committed upload
  // answers that profile (already_existed). ABORTED when interrupted (resume from
  // GetUploadState's received_bytes), also after the client sent nothing for the idle
  // timeout; INVALID_ARGUMENT for bad input and RESOURCE_EXHAUSTED for a trace over a limit,
  // whose bytes are dropped; UNAVAILABLE when as many uploads run already (retry later).
  // With tokens on, an upload id belongs to the principal that started it, and an agent
  // principal uploads only as its own node (PERMISSION_DENIED otherwise).
  absl::StatusOr<v1::UploadResponse> Upload(UploadStream& stream, const Principal& caller);
  // Where an upload stands, so an interrupted one can resume.
  absl::StatusOr<v1::UploadState> GetUploadState(const std::string& upload_id, const Principal& caller);

  // With tokens on, an upload labelled capture_id=C is accepted only when this says capture C
  // has a target on the uploading node. REQUIRES: before uploads start.
  void set_capture_target_check(std::function<bool(const std::string& capture_id, const std::string& node)> check) {
    capture_target_check_ = std::move(check);
  }

 private:
  absl::Status Receive(UploadStream& stream, const Principal& caller, v1::UploadResponse* response);
  // Receives the chunks after the metadata; commits or explains why not.
  absl::Status ReceiveAndCommit(UploadStream& stream, v1::UploadRecord record, v1::UploadResponse* response);
  // Stores the profile and its summary; fills the response.
  absl::Status Commit(const v1::UploadRecord& record, const std::string& file_name,
                      const std::string& profile_id, const analysis::TraceSummary& summary, std::chrono::steady_clock::time_point started,
                      v1::UploadResponse* response);
  // Drops an upload's bytes and returns `error`.
  absl::Status Reject(const std::string& upload_id, absl::Status error);
  // Only one stream per upload_id at a time.
  bool ClaimUploadId(const std::string& id);
  void ReleaseUploadId(const std::string& id);

  ProfileStore* store_;
  ServerMetrics* metrics_;
  IngestLimits limits_;
  UploadGuard guard_;
  BeforeCommit before_commit_;
  AfterCommit after_commit_;
  std::function<bool(const std::string&, const std::string&)> capture_target_check_;
  std::mutex active_mu_;
  std::set<std::string> active_uploads_;
};

// True when `id` is 1..128 characters of [A-Za-z0-9._:-].
bool IsValidUploadId(const std::string& id);

}  // namespace fleetprof
