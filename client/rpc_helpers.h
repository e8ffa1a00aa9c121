#pragma once
// What every CLI command that calls the server shares: the deadline, the error line, and the
// trace-window flags of the commands that ask for a window.

#include <chrono>
#include <cstdint>
#include <string>

#include "client/cli.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"

namespace fleetprof::cli {

// Prints the RPC's failure as one line ("cannot reach fleetprof-server at …" when the server
// is unreachable) and returns 1.
int FailRpc(const grpc::Status& status, const CliOptions& options);
// Applies --timeout_s to one call, from RealClock()'s now.
void SetDeadline(grpc::ClientContext* context, const CliOptions& options);
// A Clock's unix nanoseconds (common/clock.h) as gRPC's deadline type.
inline std::chrono::system_clock::time_point GrpcDeadlineAt(int64_t unix_ns) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(unix_ns)));
}

// The trace-window flags (--start_ns, --end_ns, --resolution_ns, --track, --search, --args) into
// a request that has them: a profile's window (TraceWindowRequest) or a job's (JobTraceRequest).
template <typename WindowRequest>
void FillWindowFlags(const CliOptions& options, WindowRequest* request) {
  request->set_start_ns(options.start_ns);
  request->set_end_ns(options.end_ns);
  request->set_resolution_ns(options.resolution_ns);
  for (const std::string& track : options.tracks) request->add_tracks(track);
  request->set_search(options.search);
  request->set_args(options.args_wanted);
}

}  // namespace fleetprof::cli
