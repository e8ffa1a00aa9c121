#pragma once
// What every CLI command that calls the server shares: the deadline and the error line.

#include "client/cli.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"

namespace fleetprof::cli {

// Prints the RPC's failure as one line ("cannot reach fleetprof-server at …" when the server
// is unreachable) and returns 1.
int FailRpc(const grpc::Status& status, const CliOptions& options);
// Applies --timeout_s to one call.
void SetDeadline(grpc::ClientContext* context, const CliOptions& options);

}  // namespace fleetprof::cli
