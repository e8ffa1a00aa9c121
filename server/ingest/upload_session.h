#pragma once
// One upload in progress, fed the client's messages one at a time by its transport: the
// metadata first, then the chunks, then the end of the stream. Nothing here waits for the
// client, so a transport on gRPC's callback API holds no thread while the client is slow or
// stalled; Feed and Finish may block on storage and on the analysis, so they run on a worker
// (server/ingest_service.cc), one call at a time per session.

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "analysis/trace_summary.h"
#include "auth/scopes.h"
#include "common/clock.h"
#include "common/stopwatch.h"
#include "fleetprof/v1/ingest.pb.h"
#include "fleetprof/v1/records.pb.h"
#include "server/ingest/upload_guard.h"
#include "server/server_metrics.h"
#include "storage/storage.h"

namespace fleetprof {

struct IngestLimits;

// What an upload session asks of the ingest layer, named: the store and metrics it writes to,
// the limits, who may upload for a capture, one stream per upload id, and the commit and
// rejection of a finished upload. Ingestor implements it; a test may too.
class UploadSessionContext {
 public:
  virtual ~UploadSessionContext() = default;
  virtual Storage* store() = 0;
  virtual ServerMetrics* metrics() = 0;
  virtual const IngestLimits& limits() const = 0;
  // The time that stamps the upload's records and the profile id (retention ages them on it).
  virtual const Clock* clock() const = 0;
  // Whether `node` may upload for capture `capture_id` (always, when no check is set).
  virtual bool MayUploadForCapture(const std::string& capture_id, const std::string& node) const = 0;
  // Only one stream per upload id at a time: false while another holds it.
  virtual bool ClaimUploadId(const std::string& id) = 0;
  virtual void ReleaseUploadId(const std::string& id) = 0;
  // Stores the profile and its summary atomically; fills the response. `since_start` has run
  // since the upload's analysis started (the upload's latency).
  virtual absl::Status Commit(const v1::UploadRecord& record, const std::string& file_name,
                              const std::string& profile_id, const analysis::TraceSummary& summary,
                              const Stopwatch& since_start, v1::UploadResponse* response) = 0;
  // Drops an upload's bytes and returns `error`.
  virtual absl::Status Reject(const std::string& upload_id, absl::Status error) = 0;
};

class UploadSession {
 public:
  ~UploadSession();  // an upload not answered by Finish stops its analysis; its place is freed
  UploadSession(const UploadSession&) = delete;
  UploadSession& operator=(const UploadSession&) = delete;

  // The transport waits for the client's next message from now; the idle timeout runs.
  void WaitingForClient() { admission_->WaitingForClient(); }
  // The message came, or the stream ended.
  void ClientSent() { admission_->ClientSent(); }
  // True once the upload was broken off for the idle timeout (the transport's wait ended).
  bool timed_out() const { return admission_->timed_out(); }

  // The client's next message. True: read the next one. False: the upload is answered
  // without more of its bytes (an upload id already committed); Finish gives the answer.
  // An error is the upload's answer: read no more.
  absl::StatusOr<bool> Feed(v1::UploadRequest message);
  // The stream ended; `broken` when it did not end cleanly (the client went away, the call was
  // cancelled or timed out). The upload's answer:
  // - the profile; for an upload id committed before, that profile (already_existed);
  // - ABORTED when interrupted, also after the idle timeout: the bytes stay, and the client
  //   resumes from GetUploadState's received_bytes;
  // - INVALID_ARGUMENT for bad input and RESOURCE_EXHAUSTED for a trace over a limit, whose
  //   bytes are dropped; PERMISSION_DENIED (from Feed) for an upload id of another principal,
  //   or an agent uploading as another node; other errors (storage, threads) keep the bytes.
  absl::StatusOr<v1::UploadResponse> Finish(bool broken);

  // An admitted upload of `caller` (Ingestor::Admit makes them). `context` outlives the session.
  UploadSession(UploadSessionContext* context, Principal caller, std::unique_ptr<UploadGuard::Admission> admission);

 private:
  struct Receiving;  // the profile being made from the chunks (upload_session.cc)

  // The first message: checks the metadata and who may send it, and prepares the record.
  absl::StatusOr<bool> Begin(v1::UploadRequest first);
  // Whether the caller may send `metadata`: an agent uploads only as its own node (which an
  // empty node becomes), some labels are the server's or agents' own, and a capture's profile
  // comes only from one of its targets.
  absl::Status CheckSender(v1::UploadMetadata& metadata) const;
  // Holds upload `id` for this stream and returns the key it is stored under; ABORTED while
  // another stream holds it.
  absl::StatusOr<std::string> ClaimUpload(const std::string& id);
  // The answer for an upload id whose profile `profile_id` was committed before.
  absl::Status AnswerCommitted(const std::string& profile_id);
  // Stores the record the upload starts from: the `existing` one when resuming (its bytes must
  // be where the client resumes), else a fresh one.
  absl::Status StartRecord(v1::UploadMetadata metadata, const std::string& key,
                           const std::optional<v1::UploadRecord>& existing);
  // The profile being made, started on first use.
  Receiving& StartReceiving();
  // One chunk: stored, then handed to the analysis.
  absl::Status Receive(v1::UploadRequest message);
  // The end of the stream: interrupted, rejected or committed.
  absl::StatusOr<v1::UploadResponse> Answer(bool broken);
  // The analysis failed with `error`: bad input drops the upload, anything else keeps it.
  absl::Status AnalysisFailed(absl::Status error);

  UploadSessionContext* context_;
  const Principal caller_;
  std::unique_ptr<UploadGuard::Admission> admission_;
  bool begun_ = false;
  bool finished_ = false;
  std::string claimed_id_;  // the upload id this stream holds, released when destroyed
  std::optional<v1::UploadResponse> answered_;  // known from the metadata alone
  v1::UploadRecord record_;
  std::unique_ptr<Receiving> receiving_;
};

}  // namespace fleetprof
