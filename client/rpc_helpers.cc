#include "client/rpc_helpers.h"

#include <chrono>

#include "absl/strings/str_cat.h"

namespace fleetprof::cli {

int FailRpc(const grpc::Status& status, const CliOptions& options) {
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return Fail(absl::StrCat("cannot reach fleetprof-server at ", options.server, " (",
                             status.error_message(), ")"));
  }
  return Fail(status.error_message());
}

void SetDeadline(grpc::ClientContext* context, const CliOptions& options) {
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(options.timeout_s));
}

}  // namespace fleetprof::cli
