#pragma once
// Uploads one trace file to fleetprof-server, resuming after interruptions. Shared by the
// CLI (`fleetprof upload`) and the agent (trace folders, captures): the RPC client code both
// need lives in rpc/, so the agent does not link the CLI.

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "fleetprof/v1/ingest.grpc.pb.h"
#include "grpcpp/channel.h"
#include "rpc/channel.h"

namespace fleetprof {

struct UploadOptions {
  std::string path;
  std::string file_name;  // sent for format detection and messages; empty: the path's base name
  std::string job;
  std::string node;
  std::string format;     // empty: the server detects it
  std::string upload_id;  // empty: a new random id (no idempotence across invocations)
  std::map<std::string, std::string> labels;
  int max_attempts = 5;
  int64_t chunk_bytes = 1 << 20;
  // Sends at most this many bytes (-1: the file's size when the upload starts). A file another
  // process writes (a job's trace) may grow after its size was checked: the checked size holds.
  int64_t max_bytes = -1;
  // Called after each chunk with bytes sent so far and the file size.
  std::function<void(int64_t sent, int64_t total)> progress;
  // Polled between chunks and attempts; true abandons the upload (the server keeps what it
  // received, so the same upload_id resumes later). Lets daemons stop promptly.
  std::function<bool()> cancelled;
};

// Sends the file, each chunk as one gzip member unless the file is gzip already; on UNAVAILABLE
// or an interrupted stream asks the server how much it holds and resumes from there. Returns the server's answer (already_existed set when the upload_id
// had been committed before).
absl::StatusOr<v1::UploadResponse> UploadFile(const std::shared_ptr<grpc::Channel>& channel,
                                              const UploadOptions& options);

}  // namespace fleetprof
