#include "rpc/upload_client.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/runtime.h"
#include "common/server_busy.h"
#include "common/system_time.h"
#include "grpcpp/grpcpp.h"
#include "rpc/chunk_producer.h"

namespace fleetprof {
namespace {

absl::Status FromGrpc(const grpc::Status& s, absl::string_view what) {
  std::string message = s.error_message();
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE && !message.starts_with(kServerBusy)) {
    message = absl::StrCat("server unreachable (", message, ")");
  }
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      what.empty() ? message : absl::StrCat(what, ": ", message));
}

bool Retryable(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::ABORTED ||
         code == grpc::StatusCode::DEADLINE_EXCEEDED || code == grpc::StatusCode::FAILED_PRECONDITION;
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// One attempt: sends the producer's chunks, from its offset on, on one stream.
grpc::Status SendOnce(v1::IngestService::Stub& stub, const UploadOptions& options, const Clock& clock,
                      const std::string& upload_id, ChunkProducer& producer, int64_t size,
                      v1::UploadResponse* response) {
  if (!producer.status().ok()) return grpc::Status(grpc::StatusCode::NOT_FOUND, std::string(producer.status().message()));
  const int64_t offset = producer.offset();
  grpc::ClientContext context;
  // Every call has a deadline: 5 minutes plus a second per MiB to send (a 1 GiB trace: 22
  // minutes), so a server that stopped reading cannot hold an agent's uploader for good.
  context.set_deadline(DeadlineAfter(clock, std::chrono::minutes(5) + std::chrono::seconds((size - offset) >> 20)));
  auto writer = stub.Upload(&context, response);
  v1::UploadRequest request;
  v1::UploadMetadata* metadata = request.mutable_metadata();
  metadata->set_upload_id(upload_id);
  metadata->set_job(options.job);
  metadata->set_node(options.node);
  metadata->set_format(options.format);
  metadata->set_file_name(options.file_name.empty() ? BaseName(options.path) : options.file_name);
  metadata->set_resume_offset(offset);
  metadata->set_total_bytes(size);
  // Each chunk goes as a gzip member of the file's bytes (about a ninth of them for JSON), unless
  // the file is compressed already: fewer bytes on the network, and the server keeps them as
  // they came instead of compressing them itself.
  if (producer.compressed()) metadata->set_chunk_encoding("gzip");
  for (const auto& [key, value] : options.labels) (*metadata->mutable_labels())[key] = value;
  bool open = writer->Write(request);
  int64_t sent = offset;
  while (open) {
    if (options.cancelled && options.cancelled()) {
      context.TryCancel();
      break;
    }
    std::optional<ChunkProducer::Chunk> chunk = producer.Next();
    if (!chunk) break;
    request.Clear();
    request.set_chunk(std::move(chunk->body));
    open = writer->Write(request);
    sent += chunk->file_bytes;
    if (open && options.progress) options.progress(sent, size);
  }
  if (open) writer->WritesDone();
  return writer->Finish();
}

}  // namespace

absl::StatusOr<v1::UploadResponse> UploadFile(const std::shared_ptr<grpc::Channel>& channel,
                                              const UploadOptions& options) {
  std::error_code ec;
  auto size = std::filesystem::file_size(options.path, ec);
  if (ec) return absl::NotFoundError(absl::StrCat("cannot read ", options.path, ": ", ec.message()));
  if (options.max_bytes >= 0) size = std::min<decltype(size)>(size, static_cast<decltype(size)>(options.max_bytes));
  const std::string upload_id =
      options.upload_id.empty() ? absl::StrCat("cli-", RandomHex(12)) : options.upload_id;
  const Clock& clock = options.clock != nullptr ? *options.clock : *RealClock();
  auto stub = v1::IngestService::NewStub(channel);
  // A new random id starts at byte 0: its first chunks are read and compressed while the channel
  // connects and the server is asked about the upload. A given id (an agent's) may be committed
  // or partly stored already: its chunks wait for the answer.
  const auto chunk_bytes = static_cast<size_t>(std::max<int64_t>(options.chunk_bytes, 1));
  std::unique_ptr<ChunkProducer> producer;
  if (options.upload_id.empty()) {
    producer = std::make_unique<ChunkProducer>(options.path, 0, static_cast<int64_t>(size), chunk_bytes);
  }

  grpc::Status last;
  for (int attempt = 1; attempt <= options.max_attempts; ++attempt) {
    if (options.cancelled && options.cancelled()) {
      return absl::CancelledError(absl::StrCat("upload of ", options.path, " cancelled"));
    }
    if (attempt > 1) {
      SleepUntil(clock, clock.MonotonicNanos() + int64_t{1'000'000} * (200 << std::min(attempt, 6)));
    }
    // Ask where the server stands: committed already, or how many bytes it holds. (Also for a
    // new random id: the short deadline finds a server that accepts and never answers.)
    grpc::ClientContext state_context;
    state_context.set_deadline(DeadlineAfter(clock, std::chrono::seconds(10)));
    v1::GetUploadStateRequest state_request;
    state_request.set_upload_id(upload_id);
    v1::UploadState state;
    last = stub->GetUploadState(&state_context, state_request, &state);
    if (!last.ok()) {
      if (Retryable(last.error_code())) continue;
      return FromGrpc(last, "upload");
    }
    v1::UploadResponse response;
    if (state.state() == v1::UploadState::COMMITTED) {
      response.set_profile_id(state.profile_id());
      response.set_already_existed(true);
      return response;
    }
    int64_t offset = state.state() == v1::UploadState::PARTIAL ? state.received_bytes() : 0;
    if (producer == nullptr || producer->offset() != offset) {
      producer = std::make_unique<ChunkProducer>(options.path, offset, static_cast<int64_t>(size), chunk_bytes);
    }
    last = SendOnce(*stub, options, clock, upload_id, *producer, static_cast<int64_t>(size), &response);
    producer.reset();  // another attempt starts where the server says it stands
    if (last.ok()) return response;
    if (!Retryable(last.error_code())) return FromGrpc(last, "");
  }
  return FromGrpc(last, absl::StrCat("upload failed after ", options.max_attempts, " attempts"));
}

}  // namespace fleetprof
