#pragma once
// IngestService: receives trace files as chunked client streams, stores the original bytes,
// analyses them while they stream in, and commits the profile with its summary atomically.

#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <string>

#include "analysis/trace_summary.h"
#include "fleetprof/v1/ingest.grpc.pb.h"
#include "server/server_metrics.h"
#include "storage/profile_store.h"

namespace fleetprof {

struct IngestLimits {
  int64_t max_upload_bytes = int64_t{16} << 30;
  int64_t max_chunk_bytes = 1 << 20;
};

class IngestServiceImpl final : public v1::IngestService::Service {
 public:
  // Runs just before a profile is committed and may add to it (device series of captures).
  using BeforeCommit = std::function<void(v1::ProfileInfo&, v1::ProfileSummary&)>;
  // Runs once a profile is committed (per-job metrics).
  using AfterCommit = std::function<void(const v1::ProfileInfo&, const v1::ProfileSummary&)>;

  IngestServiceImpl(ProfileStore* store, ServerMetrics* metrics, IngestLimits limits,
                    BeforeCommit before_commit, AfterCommit after_commit)
      : store_(store),
        metrics_(metrics),
        limits_(limits),
        before_commit_(std::move(before_commit)),
        after_commit_(std::move(after_commit)) {}

  grpc::Status Upload(grpc::ServerContext* context,
                      grpc::ServerReader<v1::UploadRequest>* reader,
                      v1::UploadResponse* response) override;
  grpc::Status GetUploadState(grpc::ServerContext* context,
                              const v1::GetUploadStateRequest* request,
                              v1::UploadState* response) override;

 private:
  // Receives the chunks after the metadata; commits or explains why not.
  grpc::Status ReceiveAndCommit(grpc::ServerContext* context,
                                grpc::ServerReader<v1::UploadRequest>* reader,
                                v1::UploadRecord record, v1::UploadResponse* response);
  // Stores the profile and its summary; fills the response.
  grpc::Status Commit(const v1::UploadRecord& record, const std::string& file_name,
                      const analysis::TraceSummary& summary,
                      std::chrono::steady_clock::time_point started, v1::UploadResponse* response);
  // Drops an upload's bytes and answers `code` with `message`.
  grpc::Status Reject(const std::string& upload_id, grpc::StatusCode code, const std::string& message);
  // Only one stream per upload_id at a time.
  bool ClaimUploadId(const std::string& id);
  void ReleaseUploadId(const std::string& id);

  ProfileStore* store_;
  ServerMetrics* metrics_;
  IngestLimits limits_;
  BeforeCommit before_commit_;
  AfterCommit after_commit_;
  std::mutex active_mu_;
  std::set<std::string> active_uploads_;
};

// True when `id` is 1..128 characters of [A-Za-z0-9._:-].
bool IsValidUploadId(const std::string& id);

}  // namespace fleetprof
