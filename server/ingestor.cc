#include "server/ingestor.h"

#include <chrono>
#include <functional>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/runtime.h"
#include "common/text_checks.h"
#include "proto/summary_codec.h"
#include "server/streaming_analysis.h"
#include "timeline/timeline_builder.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

// An upload id started by one principal cannot be resumed, read or taken over by another.
// Uploads from before tokens were turned on (no owner) stay open to any ingest principal.
absl::Status CheckOwner(const v1::UploadRecord& record, const Principal& caller) {
  if (!caller.authenticated || record.owner().empty() || record.owner() == caller.name) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat("upload ", record.metadata().upload_id(), " belongs to another principal"));
}

std::string NewProfileId() {
  // Time-ordered prefix so ids sort by ingest time, then randomness against collisions.
  return absl::StrCat(absl::Hex(UnixNanos(), absl::kZeroPad16), RandomHex(4));
}

v1::ProfileInfo ProfileInfoFor(const v1::UploadRecord& record, const std::string& file_name,
                               const analysis::TraceSummary& summary, const std::string& profile_id) {
  const v1::UploadMetadata& metadata = record.metadata();
  v1::ProfileInfo info;
  info.set_profile_id(profile_id);
  info.set_job(metadata.job());
  info.set_node(metadata.node());
  info.set_format(analysis::TraceFormatName(summary.format));
  info.set_start_ns(summary.start_ns);
  info.set_end_ns(summary.end_ns);
  *info.mutable_labels() = metadata.labels();
  if (auto rank = summary.metadata.find("rank"); rank != summary.metadata.end()) {
    info.mutable_labels()->insert({"rank", rank->second});  // an uploader's own label wins
  }
  info.set_file_name(file_name);
  info.set_upload_id(metadata.upload_id());
  info.set_size_bytes(record.received_bytes());
  info.set_ingested_at_ns(UnixNanos());
  info.set_events(summary.events);
  info.set_skipped_events(summary.skipped_events);
  return info;
}

// The event store written while an upload is analysed belongs to a profile id that exists
// only once committed; any other way out of ingest deletes it.
class TimelineCleanup {
 public:
  TimelineCleanup(ProfileStore* store, std::string profile_id) : store_(store), id_(std::move(profile_id)) {}
  ~TimelineCleanup() {
    if (armed_) {
      if (absl::Status s = store_->DeleteTimeline(id_); !s.ok()) {
        spdlog::warn("could not delete the event blocks of uncommitted profile {}: {}", id_, std::string(s.message()));
      }
    }
  }
  void Disarm() { armed_ = false; }

 private:
  ProfileStore* store_;
  std::string id_;
  bool armed_ = true;
};

// Job, node, labels and file name end up in keys, labels of metrics, tables and logs: printable
// UTF-8 of sane length, or the upload is refused before any byte is stored.
absl::Status CheckUploadTexts(const v1::UploadMetadata& metadata) {
  auto bad = [](const char* what, const std::string& text, size_t max) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be 1-", max,
                                                    " bytes of printable UTF-8 (no control characters), got ",
                                                    text.size(), " bytes"));
  };
  if (!IsPrintableUtf8(metadata.job(), 253)) return bad("job", metadata.job(), 253);
  if (!metadata.node().empty() && !IsPrintableUtf8(metadata.node(), 253)) return bad("node", metadata.node(), 253);
  if (!metadata.file_name().empty() && !IsPrintableUtf8(metadata.file_name(), 1024)) {
    return bad("file_name", metadata.file_name(), 1024);
  }
  if (metadata.labels_size() > 64) return absl::InvalidArgumentError("at most 64 labels per upload");
  for (const auto& [key, value] : metadata.labels()) {
    if (!IsPrintableUtf8(key, 128)) return bad("a label key", key, 128);
    if (!value.empty() && !IsPrintableUtf8(value, 1024)) return bad(absl::StrCat("label ", key).c_str(), value, 1024);
  }
  return absl::OkStatus();
}

class UploadIdClaim {
 public:
  UploadIdClaim(std::function<void()> release) : release_(std::move(release)) {}
  ~UploadIdClaim() { release_(); }

 private:
  std::function<void()> release_;
};

}  // namespace

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
  store_->AbortUpload(upload_id).IgnoreError();  // nothing of a rejected upload stays behind
  metrics_->RecordUpload(absl::IsResourceExhausted(error) ? "over_limit" : "invalid", 0);
  spdlog::warn("upload rejected upload_id={} error=\"{}\"", upload_id, std::string(error.message()));
  return error;
}

bool Ingestor::ClaimUploadId(const std::string& id) {
  std::lock_guard lock(active_mu_);
  return active_uploads_.insert(id).second;
}

void Ingestor::ReleaseUploadId(const std::string& id) {
  std::lock_guard lock(active_mu_);
  active_uploads_.erase(id);
}

absl::StatusOr<v1::UploadState> Ingestor::GetUploadState(const std::string& upload_id, const Principal& caller) {
  if (!IsValidUploadId(upload_id)) {
    return absl::InvalidArgumentError("upload_id must be 1-128 of [A-Za-z0-9._:-]");
  }
  auto record = store_->GetUpload(upload_id);
  if (!record.ok()) return record.status();
  if (record->has_value()) {
    if (absl::Status s = CheckOwner(**record, caller); !s.ok()) return s;
  }
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

absl::StatusOr<v1::UploadResponse> Ingestor::Upload(UploadStream& stream, const Principal& caller) {
  auto admission = guard_.Admit(stream.Peer());
  if (!admission.ok()) {
    metrics_->RecordUpload("busy", 0);
    return admission.status();
  }
  std::unique_ptr<UploadGuard::WatchedStream> watched = guard_.Watch(&stream);
  v1::UploadResponse response;
  absl::Status s = Receive(*watched, caller, &response);
  if (!s.ok() && watched->timed_out()) {
    return absl::AbortedError(absl::StrCat("the client sent nothing for ", limits_.uploads.idle_timeout.count() / 1000.0,
                                           " s (--upload_idle_timeout_s): ", s.message()));
  }
  if (!s.ok()) return s;
  return response;
}

absl::Status Ingestor::Receive(UploadStream& stream, const Principal& caller, v1::UploadResponse* response) {
  v1::UploadRequest first;
  if (!stream.Read(&first) || !first.has_metadata()) {
    metrics_->RecordUpload("invalid", 0);
    return absl::InvalidArgumentError("the first upload message must carry the metadata");
  }
  v1::UploadMetadata metadata = first.metadata();
  const std::string id = metadata.upload_id();
  if (!IsValidUploadId(id)) {
    metrics_->RecordUpload("invalid", 0);
    return absl::InvalidArgumentError("upload_id must be 1-128 characters of [A-Za-z0-9._:-]");
  }
  if (metadata.job().empty()) metadata.set_job("unassigned");
  if (absl::Status s = CheckUploadTexts(metadata); !s.ok()) {
    metrics_->RecordUpload("invalid", 0);
    return s;
  }
  if (!caller.node().empty()) {
    if (metadata.node().empty()) metadata.set_node(std::string(caller.node()));
    if (metadata.node() != caller.node()) {
      return absl::PermissionDeniedError(absl::StrCat("agent '", caller.name, "' may upload only as node '",
                                                      caller.name, "', not '", metadata.node(), "'"));
    }
  } else if (caller.authenticated && metadata.labels().count("capture_id")) {
    return absl::PermissionDeniedError("the capture_id label is set by agents only (this token has no agent scope)");
  }
  if (auto label = metadata.labels().find("capture_id");
      caller.authenticated && label != metadata.labels().end() && capture_target_check_ &&
      !capture_target_check_(label->second, metadata.node())) {
    return absl::PermissionDeniedError(
        absl::StrCat("capture ", label->second, " has no target on node ", metadata.node()));
  }
  if (!ClaimUploadId(id)) {
    return absl::AbortedError(absl::StrCat("upload ", id, " is already in progress on another stream"));
  }
  UploadIdClaim claim([this, id] { ReleaseUploadId(id); });

  auto existing = store_->GetUpload(id);
  if (!existing.ok()) return existing.status();
  if (existing->has_value()) {
    if (absl::Status s = CheckOwner(**existing, caller); !s.ok()) return s;
  }
  if (existing->has_value() && !(*existing)->profile_id().empty()) {
    // Idempotent: the same upload_id again gets the profile it made the first time.
    auto info = store_->GetProfile((*existing)->profile_id());
    if (!info.ok()) return info.status();
    response->set_profile_id(info->profile_id());
    response->set_already_existed(true);
    *response->mutable_profile() = *info;
    metrics_->RecordUpload("duplicate", 0);
    return absl::OkStatus();
  }

  v1::UploadRecord record;
  const int64_t offset = metadata.resume_offset();
  if (offset > 0) {
    int64_t have = existing->has_value() ? (*existing)->received_bytes() : 0;
    if (have != offset) {
      return absl::FailedPreconditionError(absl::StrCat("server holds ", have, " bytes of upload ", id,
                                       "; resume from offset ", have));
    }
    record = **existing;
  } else if (existing->has_value()) {
    // A fresh start of an upload that broke off earlier: drop what it left.
    if (absl::Status s = store_->AbortUpload(id); !s.ok()) return s;
  }
  metadata.set_resume_offset(0);
  *record.mutable_metadata() = metadata;
  record.set_owner(caller.authenticated ? caller.name : "");
  record.set_updated_at_ns(UnixNanos());
  if (absl::Status s = store_->PutUpload(id, record); !s.ok()) return s;
  return ReceiveAndCommit(stream, std::move(record), response);
}

absl::Status Ingestor::ReceiveAndCommit(UploadStream& stream, v1::UploadRecord record,
                                        v1::UploadResponse* response) {
  const auto started = std::chrono::steady_clock::now();
  const v1::UploadMetadata& metadata = record.metadata();
  const std::string& id = metadata.upload_id();
  const std::string file_name = metadata.file_name().empty() ? id : metadata.file_name();
  const std::string profile_id = NewProfileId();
  std::unique_ptr<timeline::TimelineWriter> timeline_writer = store_->NewTimelineWriter(profile_id);
  timeline::TimelineSink timeline_sink(timeline_writer.get());
  TimelineCleanup cleanup(store_, profile_id);  // declared before the analysis: runs after it stops
  StreamingAnalysis analysis(file_name, metadata.format(),
                             record.received_bytes() > 0 ? store_->ReadRaw(id) : nullptr, &timeline_sink,
                             limits_.trace);

  v1::UploadRequest message;
  bool analysis_failed = false;
  while (stream.Read(&message)) {
    if (!message.has_chunk()) {
      analysis.Cancel();
      return Reject(id, absl::InvalidArgumentError("only the first upload message may carry metadata"));
    }
    std::string* chunk = message.mutable_chunk();
    if (static_cast<int64_t>(chunk->size()) > limits_.max_chunk_bytes ||
        record.received_bytes() + static_cast<int64_t>(chunk->size()) > limits_.max_upload_bytes) {
      analysis.Cancel();
      return Reject(id, absl::ResourceExhaustedError(absl::StrCat("upload exceeds the limits: chunks of at most ",
                                 limits_.max_chunk_bytes, " bytes, files of at most ",
                                 limits_.max_upload_bytes, " bytes")));
    }
    record.set_updated_at_ns(UnixNanos());
    if (absl::Status s = store_->AppendRaw(id, record, *chunk); !s.ok()) {
      analysis.Cancel();
      metrics_->RecordUpload("error", 0);
      return s;
    }
    metrics_->AddIngestedBytes(static_cast<int64_t>(chunk->size()));
    if (!analysis.Push(std::move(*chunk))) {
      analysis_failed = true;  // the reader found an error; Finish says which
      break;
    }
  }

  std::optional<absl::StatusOr<analysis::TraceSummary>> early;
  if (analysis_failed) {
    early = analysis.Finish();
    // A reader that stopped early without an error ignores trailing bytes; keep them anyway.
    while (early->ok() && stream.Read(&message) && message.has_chunk()) {
      if (static_cast<int64_t>(message.chunk().size()) > limits_.max_chunk_bytes ||
          record.received_bytes() + static_cast<int64_t>(message.chunk().size()) > limits_.max_upload_bytes) {
        return Reject(id, absl::ResourceExhaustedError("upload exceeds the size limits"));
      }
      if (absl::Status s = store_->AppendRaw(id, record, message.chunk()); !s.ok()) {
        return s;
      }
    }
  }
  const bool complete = metadata.total_bytes() <= 0 ||
                        record.received_bytes() >= metadata.total_bytes();
  if ((!early || early->ok()) && (stream.Cancelled() || !complete)) {
    // Keep the bytes: the client can resume from received_bytes.
    analysis.Cancel();
    metrics_->RecordUpload("interrupted", 0);
    return absl::AbortedError(absl::StrCat("upload ", id, " interrupted after ", record.received_bytes(),
                                     " bytes; resume from that offset"));
  }

  absl::StatusOr<analysis::TraceSummary> summary =
      early ? *std::move(early) : analysis.Finish();
  if (!summary.ok()) {
    // Bad input drops the upload; anything else (storage, threads) keeps it resumable.
    if (absl::IsInvalidArgument(summary.status()) || absl::IsDataLoss(summary.status())) {
      return Reject(id, absl::InvalidArgumentError(std::string(summary.status().message())));
    }
    // Over a trace limit (analysis/trace_limits.h): resuming would only fail again.
    if (absl::IsResourceExhausted(summary.status())) return Reject(id, summary.status());
    metrics_->RecordUpload("error", 0);
    return summary.status();
  }

  if (absl::Status s = Commit(record, file_name, profile_id, *summary, started, response); !s.ok()) return s;
  cleanup.Disarm();
  return absl::OkStatus();
}

absl::Status Ingestor::Commit(const v1::UploadRecord& record, const std::string& file_name,
                                       const std::string& profile_id, const analysis::TraceSummary& summary,
                                       std::chrono::steady_clock::time_point started,
                                       v1::UploadResponse* response) {
  v1::ProfileInfo info = ProfileInfoFor(record, file_name, summary, profile_id);
  v1::ProfileSummary stored = SummaryToProto(summary);
  if (before_commit_) before_commit_(info, stored);
  if (absl::Status s = store_->CommitProfile(info, stored); !s.ok()) {
    metrics_->RecordUpload("error", 0);
    return s;
  }
  if (after_commit_) after_commit_(info, stored);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  metrics_->RecordUpload("ok", seconds);
  spdlog::info("profile stored profile_id={} job={} node={} format={} bytes={} events={} seconds={:.3f}",
               info.profile_id(), info.job(), info.node(), info.format(), info.size_bytes(),
               info.events(), seconds);
  response->set_profile_id(info.profile_id());
  *response->mutable_profile() = info;
  return absl::OkStatus();
}

}  // namespace fleetprof
