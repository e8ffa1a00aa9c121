#pragma once
// What uploading a trace file takes and answers, free of any transport: the agent's capture
// logic holds an Uploader (a function), the daemon hands it one over gRPC (UploadFile in
// rpc/upload_client.h) and tests one of their own, so the capture code never sees a channel.

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "fleetprof/v1/ingest.pb.h"

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
  // The time the calls' deadlines and the pauses between attempts run on (null: RealClock()).
  const Clock* clock = nullptr;
};

// Uploads one file as `options` says and returns the server's answer.
using Uploader = std::function<absl::StatusOr<v1::UploadResponse>(const UploadOptions& options)>;

}  // namespace fleetprof
