#include "server/ingest/upload_session.h"

#include "absl/strings/str_cat.h"
#include "analysis/event_array.h"
#include "common/clock_sync_labels.h"
#include "common/gzip_member.h"
#include "common/runtime.h"
#include "common/text_checks.h"
#include "server/ingest/ingestor.h"
#include "storage/catalog.h"
#include "server/ingest/streaming_analysis.h"
#include "spdlog/spdlog.h"
#include "timeline/timeline_builder.h"

namespace fleetprof {
namespace {

std::string NewProfileId(const Clock& clock) {
  // Time-ordered prefix so ids sort by ingest time, then randomness against collisions.
  return absl::StrCat(absl::Hex(clock.Now(), absl::kZeroPad16), RandomHex(4));
}

// The event store written while an upload is analysed belongs to a profile id that exists
// only once committed; any other way out of ingest deletes it.
class TimelineCleanup {
 public:
  TimelineCleanup(Storage* store, std::string profile_id) : store_(store), id_(std::move(profile_id)) {}
  ~TimelineCleanup() {
    if (armed_) {
      if (absl::Status s = store_->events().Delete(id_); !s.ok()) {
        spdlog::warn("could not delete the event blocks of uncommitted profile {}: {}", id_, std::string(s.message()));
      }
    }
  }
  void Disarm() { armed_ = false; }

 private:
  Storage* store_;
  std::string id_;
  bool armed_ = true;
};

// Hands a read trace's events on to the event store. First, for a large upload, it gives back
// to the system the memory that carried the upload's bytes (chunks, gRPC's and RocksDB's
// buffers), free by now in malloc's arenas, and the event arrays kept from earlier uploads
// that this one did not take, so that building the event store and the summaries
// adds to the events alone: a 637 MB upload's peak was 17 MB lower. Small uploads skip it; it
// walks every arena.
class ReleasingSink : public analysis::TraceEventsSink {
 public:
  explicit ReleasingSink(analysis::TraceEventsSink* next) : next_(next) {}
  absl::Status Consume(const analysis::TraceEvents& events) override {
    constexpr size_t kLargeTraceEvents = 1'000'000;
    if (events.host.size() + events.activity.size() >= kLargeTraceEvents) {
      ReleaseFreeMemory();
      analysis::ReleaseKeptEventMemory();
    }
    return next_->Consume(events);
  }

 private:
  analysis::TraceEventsSink* next_;
};

// Job, node, labels and file name end up in keys, labels of metrics, tables and logs: printable
// UTF-8 of sane length, or the upload is refused before any byte is stored.
absl::Status CheckUploadTexts(const v1::UploadMetadata& metadata) {
  if (absl::Status s = CheckPrintableText("job", metadata.job(), 253); !s.ok()) return s;
  if (!metadata.node().empty()) {
    if (absl::Status s = CheckPrintableText("node", metadata.node(), 253); !s.ok()) return s;
  }
  if (!metadata.file_name().empty()) {
    if (absl::Status s = CheckPrintableText("file_name", metadata.file_name(), 1024); !s.ok()) return s;
  }
  if (metadata.labels_size() > 64) return absl::InvalidArgumentError("at most 64 labels per upload");
  for (const auto& [key, value] : metadata.labels()) {
    if (absl::Status s = CheckPrintableText("a label key", key, 128); !s.ok()) return s;
    if (value.empty()) continue;
    if (absl::Status s = CheckPrintableText(absl::StrCat("label ", key), value, 1024); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The metadata's own fields, whoever sends them: the upload id, the chunk encoding and the
// texts (CheckUploadTexts). An upload without a job is of job "unassigned".
absl::Status CheckUploadMetadata(v1::UploadMetadata& metadata) {
  if (!IsValidUploadId(metadata.upload_id())) {
    return absl::InvalidArgumentError("upload_id must be 1-128 characters of [A-Za-z0-9._:-]");
  }
  if (!metadata.chunk_encoding().empty() && metadata.chunk_encoding() != UploadTable::kGzipParts) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk_encoding must be \"\" or \"gzip\", not \"", metadata.chunk_encoding().substr(0, 32), "\""));
  }
  if (metadata.job().empty()) metadata.set_job("unassigned");
  return CheckUploadTexts(metadata);
}

}  // namespace

// Declared in this order so that they are destroyed in the reverse one: the analysis stops
// before its events' blocks are cleaned up, and those before the writer goes.
struct UploadSession::Receiving {
  Receiving(Storage* store, const Clock& clock, const v1::UploadRecord& record, const analysis::TraceLimits& limits)
      : file_name(record.metadata().file_name().empty() ? record.metadata().upload_id() : record.metadata().file_name()),
        profile_id(NewProfileId(clock)),
        timeline_writer(store->events().NewWriter(profile_id)),
        timeline_sink(timeline_writer.get()),
        releasing_sink(&timeline_sink),
        cleanup(store, profile_id),
        analysis(file_name, record.metadata().format(),
                 record.received_bytes() > 0 ? store->uploads().ReadRaw(UploadKeyOf(record), record) : nullptr,
                 &releasing_sink, limits) {}

  const Stopwatch started;  // the upload's latency, from the start of its analysis
  const std::string file_name;
  const std::string profile_id;
  std::unique_ptr<timeline::TimelineWriter> timeline_writer;
  timeline::TimelineSink timeline_sink;
  ReleasingSink releasing_sink;
  TimelineCleanup cleanup;
  StreamingAnalysis analysis;
  // Set once the reader stopped before the end of the bytes: its result. A reader that
  // stopped without an error ignores the rest, which is stored anyway.
  std::optional<absl::StatusOr<analysis::TraceSummary>> early;
};

UploadSession::UploadSession(UploadSessionContext* context, Principal caller,
                             std::unique_ptr<UploadGuard::Admission> admission)
    : context_(context), caller_(std::move(caller)), admission_(std::move(admission)) {}

UploadSession::~UploadSession() {
  receiving_.reset();  // before the upload id is free for another stream
  if (!claimed_id_.empty()) context_->ReleaseUploadId(claimed_id_);
}

absl::StatusOr<bool> UploadSession::Feed(v1::UploadRequest message) {
  if (finished_ || answered_) return absl::FailedPreconditionError("the upload is answered already");
  if (!begun_) {
    begun_ = true;
    absl::StatusOr<bool> more = Begin(std::move(message));
    if (!more.ok()) finished_ = true;
    return more;
  }
  if (absl::Status s = Receive(std::move(message)); !s.ok()) {
    finished_ = true;
    return s;
  }
  return true;
}

absl::StatusOr<v1::UploadResponse> UploadSession::Finish(bool broken) {
  if (answered_) return *answered_;
  if (finished_) return absl::FailedPreconditionError("the upload is answered already");
  finished_ = true;
  absl::StatusOr<v1::UploadResponse> answer = Answer(broken);
  if (!answer.ok() && timed_out()) {
    return absl::AbortedError(absl::StrCat("the client sent nothing for ",
                                           context_->limits().uploads.idle_timeout.count() / 1000.0,
                                           " s (--upload_idle_timeout_s): ", answer.status().message()));
  }
  return answer;
}

absl::StatusOr<bool> UploadSession::Begin(v1::UploadRequest first) {
  if (!first.has_metadata()) {
    context_->metrics()->RecordUpload("invalid", 0);
    return absl::InvalidArgumentError("the first upload message must carry the metadata");
  }
  v1::UploadMetadata metadata = std::move(*first.mutable_metadata());
  if (absl::Status s = CheckUploadMetadata(metadata); !s.ok()) {
    context_->metrics()->RecordUpload("invalid", 0);
    return s;
  }
  if (absl::Status s = CheckSender(metadata); !s.ok()) return s;
  absl::StatusOr<std::string> key = ClaimUpload(metadata.upload_id());
  if (!key.ok()) return key.status();
  // Read under the claim: another stream may have committed it meanwhile.
  auto existing = context_->store()->uploads().Get(*key);
  if (!existing.ok()) return existing.status();
  if (existing->has_value() && !(*existing)->profile_id().empty()) {
    // Idempotent: the same upload_id again gets the profile it made the first time.
    if (absl::Status s = AnswerCommitted((*existing)->profile_id()); !s.ok()) return s;
    return false;
  }
  if (absl::Status s = StartRecord(std::move(metadata), *key, *existing); !s.ok()) return s;
  return true;  // the analysis starts with the first chunk: a client that stalls before holds no thread
}

absl::Status UploadSession::CheckSender(v1::UploadMetadata& metadata) const {
  if (!caller_.node().empty()) {
    if (metadata.node().empty()) metadata.set_node(std::string(caller_.node()));
    if (metadata.node() != caller_.node()) {
      return absl::PermissionDeniedError(absl::StrCat("agent '", caller_.name, "' may upload only as node '",
                                                      caller_.name, "', not '", metadata.node(), "'"));
    }
  }
  if (metadata.labels().count(std::string(kUploadedByLabel))) {
    return absl::InvalidArgumentError(absl::StrCat("the ", std::string(kUploadedByLabel), " label is set by the server"));
  }
  if (caller_.node().empty() && caller_.authenticated) {
    // What only an agent can vouch for: that a profile came from its own capture, and what its
    // node's clock was then (a job timeline trusts the smaller uncertainty it is told).
    for (const char* reserved : {"capture_id", "source", kClockOffsetLabel, kClockUncertaintyLabel,
                                 kCaptureStartLabel, kCaptureWindowLabel}) {
      if (metadata.labels().count(reserved)) {
        return absl::PermissionDeniedError(
            absl::StrCat("the ", reserved, " label is set by agents only (this token has no agent scope)"));
      }
    }
  }
  if (auto label = metadata.labels().find("capture_id");
      caller_.authenticated && label != metadata.labels().end() &&
      !context_->MayUploadForCapture(label->second, metadata.node())) {
    return absl::PermissionDeniedError(
        absl::StrCat("capture ", label->second, " has no target on node ", metadata.node()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> UploadSession::ClaimUpload(const std::string& id) {
  // An id lives in its principal's namespace: another principal's upload of the same id is
  // another upload, so no attempt of theirs holds, reads or learns of this one.
  auto key = FindUploadKey(context_->store()->uploads(), caller_, id);
  if (!key.ok()) return key.status();
  if (!context_->ClaimUploadId(*key)) {
    return absl::AbortedError(absl::StrCat("upload ", id, " is already in progress on another stream"));
  }
  claimed_id_ = *key;
  return key;
}

absl::Status UploadSession::AnswerCommitted(const std::string& profile_id) {
  auto info = context_->store()->profiles().Get(profile_id);
  if (!info.ok()) return info.status();
  v1::UploadResponse response;
  response.set_profile_id(info->profile_id());
  response.set_already_existed(true);
  *response.mutable_profile() = *info;
  context_->metrics()->RecordUpload("duplicate", 0);
  answered_ = std::move(response);
  return absl::OkStatus();
}

absl::Status UploadSession::StartRecord(v1::UploadMetadata metadata, const std::string& key,
                                        const std::optional<v1::UploadRecord>& existing) {
  UploadTable& uploads = context_->store()->uploads();
  const int64_t offset = metadata.resume_offset();
  if (offset > 0) {
    const int64_t have = existing.has_value() ? existing->received_bytes() : 0;
    if (have != offset) {
      return absl::FailedPreconditionError(absl::StrCat("server holds ", have, " bytes of upload ",
                                                        metadata.upload_id(), "; resume from offset ", have));
    }
    record_ = *existing;
  } else if (existing.has_value()) {
    // A fresh start of an upload that broke off earlier: drop what it left.
    if (absl::Status s = uploads.Abort(key); !s.ok()) return s;
  }
  metadata.set_resume_offset(0);
  *record_.mutable_metadata() = std::move(metadata);
  record_.set_owner(caller_.authenticated ? caller_.name : "");
  record_.set_key(key == record_.metadata().upload_id() ? "" : key);
  record_.set_updated_at_ns(context_->clock()->Now());
  return uploads.Put(key, record_);
}

UploadSession::Receiving& UploadSession::StartReceiving() {
  if (!receiving_) {
    receiving_ = std::make_unique<Receiving>(context_->store(), *context_->clock(), record_, context_->limits().trace);
  }
  return *receiving_;
}

absl::Status UploadSession::Receive(v1::UploadRequest message) {
  const IngestLimits& limits = context_->limits();
  const std::string& id = UploadKeyOf(record_);
  auto stop_analysis = [this] {
    if (receiving_) receiving_->analysis.Cancel();
  };
  if (!message.has_chunk()) {
    stop_analysis();
    return context_->Reject(id, absl::InvalidArgumentError("only the first upload message may carry metadata"));
  }
  const auto over_limits = [&] {
    stop_analysis();
    return context_->Reject(id, absl::ResourceExhaustedError(absl::StrCat(
                                    "upload exceeds the limits: chunks of at most ", limits.max_chunk_bytes,
                                    " bytes, files of at most ", limits.max_upload_bytes, " bytes")));
  };
  // What the chunk carries: the file's bytes, or one gzip member of them, checked whole here
  // and inflated no further than a chunk may be.
  std::string* chunk = message.mutable_chunk();
  const bool gzip_chunk = record_.metadata().chunk_encoding() == UploadTable::kGzipParts;
  // A member of a chunk of incompressible bytes is a little longer than the chunk.
  const size_t max_chunk = static_cast<size_t>(limits.max_chunk_bytes);
  if (chunk->size() > (gzip_chunk ? GzipMemberBound(max_chunk) : max_chunk)) return over_limits();
  std::string inflated = gzip_chunk && receiving_ != nullptr ? receiving_->analysis.TakeSpare() : std::string();
  if (gzip_chunk) {
    absl::Status s = GunzipMember(*chunk, max_chunk, &inflated);
    if (absl::IsResourceExhausted(s)) return over_limits();
    if (!s.ok()) {
      stop_analysis();
      return context_->Reject(id, absl::InvalidArgumentError(absl::StrCat(
                                      "the chunk at file byte ", record_.received_bytes(), ": ", s.message())));
    }
  }
  std::string& file_bytes = gzip_chunk ? inflated : *chunk;
  if (record_.received_bytes() + static_cast<int64_t>(file_bytes.size()) > limits.max_upload_bytes) {
    return over_limits();
  }
  // A chunk of no bytes adds nothing: nothing is stored, not even an empty member.
  if (file_bytes.empty()) return absl::OkStatus();
  if (UploadTable::StoredBytes(record_) == 0 && record_.received_bytes() == 0) {
    // Kept as gzip members unless the file is compressed already. Decided at the first byte and
    // kept for the upload's life, a resume included.
    record_.set_parts_encoding(LooksGzipped(file_bytes) ? "" : std::string(UploadTable::kGzipParts));
  }
  Receiving& r = StartReceiving();  // before the chunk is stored: it replays only earlier bytes
  record_.set_updated_at_ns(context_->clock()->Now());
  std::string member;
  std::string_view stored = file_bytes;
  if (!record_.parts_encoding().empty()) {
    // The client's member is kept as it came, unless it takes more room than ours would (its
    // header may carry a name or comment of any length): the stored bytes stay bounded by the
    // file's.
    if (gzip_chunk && chunk->size() <= GzipMemberBound(file_bytes.size())) {
      stored = *chunk;
    } else {
      member = GzipMember(file_bytes);
      stored = member;
    }
  }
  const auto file_size = static_cast<int64_t>(file_bytes.size());
  if (absl::Status s = context_->store()->uploads().AppendRaw(id, record_, stored, file_size); !s.ok()) {
    r.analysis.Cancel();
    context_->metrics()->RecordUpload("error", 0);
    return s;
  }
  context_->metrics()->AddIngestedBytes(file_size);
  if (r.early) return absl::OkStatus();  // bytes past where the reader stopped: stored only
  if (!r.analysis.Push(std::move(file_bytes))) {
    r.early = r.analysis.Finish();  // the reader stopped: with an error, or at its trace's end
    if (!r.early->ok()) return AnalysisFailed(r.early->status());
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::UploadResponse> UploadSession::Answer(bool broken) {
  if (!begun_) {
    context_->metrics()->RecordUpload("invalid", 0);
    return absl::InvalidArgumentError("the first upload message must carry the metadata");
  }
  const v1::UploadMetadata& metadata = record_.metadata();
  const bool complete = metadata.total_bytes() <= 0 || record_.received_bytes() >= metadata.total_bytes();
  if (broken || !complete) {
    // Keep the bytes: the client can resume from received_bytes.
    if (receiving_) receiving_->analysis.Cancel();
    context_->metrics()->RecordUpload("interrupted", 0);
    return absl::AbortedError(absl::StrCat("upload ", metadata.upload_id(), " interrupted after ",
                                           record_.received_bytes(), " bytes; resume from that offset"));
  }
  Receiving& r = StartReceiving();  // an upload resumed with every byte stored sends no chunk
  const Stopwatch stream_ended;
  absl::StatusOr<analysis::TraceSummary> summary = r.early ? *std::move(r.early) : r.analysis.Finish();
  if (!summary.ok()) return AnalysisFailed(summary.status());
  const Stopwatch analysed;
  v1::UploadResponse response;
  if (absl::Status s = context_->Commit(record_, r.file_name, r.profile_id, *summary, r.started, &response);
      !s.ok()) {
    // The profile may be listed already (its commit's reply was lost): its events stay. A
    // client's retry finds it committed, whole; if it was not, they are blocks of no profile.
    if (IsCommitOutcomeUnknown(s)) {
      r.cleanup.Disarm();
      spdlog::warn("upload {}: the commit of profile {} may have been applied; its event blocks are kept: {}",
                   record_.metadata().upload_id(), r.profile_id, std::string(s.message()));
    }
    return s;
  }
  r.cleanup.Disarm();
  // Where an upload's time goes (bench/ingest_speed.sh reads it at --log_level=debug): receiving
  // and storing the chunks while the analysis runs, the analysis left after the last chunk, and
  // the commit (the raw bytes' flush, the event store's last blocks, the catalog).
  spdlog::debug("upload phases profile_id={} receive_s={:.3f} analysis_after_stream_s={:.3f} commit_s={:.3f}",
                r.profile_id, stream_ended.SecondsSince(r.started), analysed.SecondsSince(stream_ended),
                analysed.ElapsedSeconds());
  return response;
}

absl::Status UploadSession::AnalysisFailed(absl::Status error) {
  const std::string& id = UploadKeyOf(record_);
  if (absl::IsInvalidArgument(error) || absl::IsDataLoss(error)) {
    return context_->Reject(id, absl::InvalidArgumentError(std::string(error.message())));
  }
  // Over a trace limit (analysis/trace_limits.h): resuming would only fail again.
  if (absl::IsResourceExhausted(error)) return context_->Reject(id, error);
  context_->metrics()->RecordUpload("error", 0);  // storage, threads: the upload stays resumable
  return error;
}

}  // namespace fleetprof
