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
#include "rpc/uploader.h"

namespace fleetprof {


// The Uploader over gRPC (rpc/uploader.h): sends the file, each chunk as one gzip member unless the file is gzip already; on UNAVAILABLE
// or an interrupted stream asks the server how much it holds and resumes from there. Returns the server's answer (already_existed set when the upload_id
// had been committed before).
absl::StatusOr<v1::UploadResponse> UploadFile(const std::shared_ptr<grpc::Channel>& channel,
                                              const UploadOptions& options);

}  // namespace fleetprof
