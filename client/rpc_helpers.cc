#include "client/rpc_helpers.h"

#include <chrono>

#include "absl/strings/str_cat.h"

namespace fleetprof::cli {

int FailRpc(const grpc::Status& status, const CliOptions& options) {
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    // A TLS server answering a plaintext client, or a certificate that does not verify, looks
    // like an unreachable server to gRPC: say which side to check.
    const char* hint = options.security.ca_pem.empty()
                           ? "; if the server uses TLS, pass --tls_ca"
                           : "; check that --tls_ca signed the server's certificate and that it names this address";
    return Fail(absl::StrCat("cannot reach fleetprof-server at ", options.server, " (",
                             status.error_message(), hint, ")"));
  }
  return Fail(status.error_message());
}

void SetDeadline(grpc::ClientContext* context, const CliOptions& options) {
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(options.timeout_s));
}

}  // namespace fleetprof::cli
