#include "server/ingest/ingestor.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "common/runtime.h"
#include "proto/summary_codec.h"
#include "server/ingest/upload_session.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

v1::ProfileInfo ProfileInfoFor(const v1::UploadRecord& record, const std::string& file_name,
                               const analysis::TraceSummary& summary, const std::string& profile_id,
                               int64_t ingested_at_ns) {
  const v1::UploadMetadata& metadata = record.metadata();
  v1::ProfileInfo info;
  info.set_profile_id(profile_id);
  info.set_job(metadata.job());
  info.set_node(metadata.node());
  info.set_format(analysis::TraceFormatName(summary.format));
  info.set_start_ns(summary.start_ns);
  info.set_end_ns(summary.end_ns);
  *info.mutable_labels() = metadata.labels();
  // Who uploaded it, where tokens say so (an agent's principal is its node).
  if (!record.owner().empty()) (*info.mutable_labels())[std::string(kUploadedByLabel)] = record.owner();
  if (auto rank = summary.metadata.find("rank"); rank != summary.metadata.end()) {
    info.mutable_labels()->insert({"rank", rank->second});  // an uploader's own label wins
  }
  info.set_file_name(file_name);
  info.set_upload_id(UploadKeyOf(record));  // where its original bytes are
  info.set_size_bytes(record.received_bytes());
  info.set_ingested_at_ns(ingested_at_ns);
  info.set_events(summary.events);
  info.set_skipped_events(summary.skipped_events);
  return info;
}

}  // namespace

absl::StatusOr<std::string> FindUploadKey(UploadTable& uploads, const Principal& caller, const std::string& id) {
  if (!caller.authenticated) return id;
  std::string key = absl::StrCat(caller.name, "~", id);
  auto own = uploads.Get(key);
  if (!own.ok()) return own.status();
  if (own->has_value()) return key;
  auto plain = uploads.Get(id);
  if (!plain.ok()) return plain.status();
  if (plain->has_value() && ((*plain)->owner().empty() || (*plain)->owner() == caller.name)) return id;
  return key;
}

bool IsValidUploadId(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

absl::Status Ingestor::Reject(const std::string& upload_id, absl::Status error) {
  store_->uploads().Abort(upload_id).IgnoreError();  // nothing of a rejected upload stays behind
  metrics_->RecordUpload(absl::IsResourceExhausted(error) ? "over_limit" : "invalid", 0);
  spdlog::warn("upload rejected upload_id={} error=\"{}\"", upload_id, std::string(error.message()));
  return error;
}

bool Ingestor::ClaimUploadId(const std::string& id) {
  absl::MutexLock lock(&active_mu_);
  return active_uploads_.insert(id).second;
}

void Ingestor::ReleaseUploadId(const std::string& id) {
  absl::MutexLock lock(&active_mu_);
  active_uploads_.erase(id);
}

absl::StatusOr<v1::UploadState> Ingestor::GetUploadState(const std::string& upload_id, const Principal& caller) {
  if (!IsValidUploadId(upload_id)) {
    return absl::InvalidArgumentError("upload_id must be 1-128 of [A-Za-z0-9._:-]");
  }
  auto key = FindUploadKey(store_->uploads(), caller, upload_id);
  if (!key.ok()) return key.status();
  auto record = store_->uploads().Get(*key);
  if (!record.ok()) return record.status();
  v1::UploadState response;
  if (!record->has_value()) {
    response.set_state(v1::UploadState::UNKNOWN);
  } else if (!(*record)->profile_id().empty()) {
    response.set_state(v1::UploadState::COMMITTED);
    response.set_profile_id((*record)->profile_id());
    response.set_received_bytes((*record)->received_bytes());
  } else {
    response.set_state(v1::UploadState::PARTIAL);
    response.set_received_bytes((*record)->received_bytes());
  }
  return response;
}

absl::StatusOr<std::unique_ptr<UploadSession>> Ingestor::Admit(const Principal& caller, const std::string& peer,
                                                                 std::function<bool()> abort) {
  auto admission = guard_.Admit(peer, std::move(abort));
  if (!admission.ok()) {
    metrics_->RecordUpload("busy", 0);
    return admission.status();
  }
  return std::unique_ptr<UploadSession>(new UploadSession(this, caller, *std::move(admission)));
}

absl::StatusOr<v1::UploadResponse> Ingestor::Upload(UploadStream& stream, const Principal& caller) {
  auto admitted = Admit(caller, stream.Peer(), [&stream] {
    stream.Abort();
    return true;
  });
  if (!admitted.ok()) return admitted.status();
  UploadSession& session = **admitted;
  for (;;) {
    v1::UploadRequest message;
    session.WaitingForClient();
    const bool got = stream.Read(&message);
    session.ClientSent();
    if (!got || session.timed_out()) return session.Finish(stream.Cancelled() || session.timed_out());
    absl::StatusOr<bool> more = session.Feed(std::move(message));
    if (!more.ok()) return more.status();
    if (!*more) return session.Finish(/*broken=*/false);
  }
}

absl::Status Ingestor::Commit(const v1::UploadRecord& record, const std::string& file_name,
                              const std::string& profile_id, const analysis::TraceSummary& summary,
                              const Stopwatch& since_start, v1::UploadResponse* response) {
  v1::ProfileInfo info = ProfileInfoFor(record, file_name, summary, profile_id, clock_->Now());
  v1::ProfileSummary stored = SummaryToProto(summary);
  if (before_commit_) before_commit_(info, stored);
  if (absl::Status s = store_->profiles().Commit(info, stored); !s.ok()) {
    metrics_->RecordUpload("error", 0);
    return s;
  }
  if (after_commit_) after_commit_(info, stored);
  const double seconds = since_start.ElapsedSeconds();
  metrics_->RecordUpload("ok", seconds);
  spdlog::info("profile stored profile_id={} job={} node={} format={} bytes={} events={} seconds={:.3f}",
               info.profile_id(), info.job(), info.node(), info.format(), info.size_bytes(),
               info.events(), seconds);
  response->set_profile_id(info.profile_id());
  *response->mutable_profile() = info;
  return absl::OkStatus();
}

}  // namespace fleetprof
