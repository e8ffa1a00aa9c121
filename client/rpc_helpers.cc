#include "client/rpc_helpers.h"

#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"

namespace fleetprof::cli {

int FailRpc(const grpc::Status& status, const CliOptions& options) {
  const std::string& message = status.error_message();
  // The server itself answers UNAVAILABLE while a store it needs is down (cluster mode: etcd,
  // S3): it was reached, and a TLS hint would send the user the wrong way.
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
      (absl::StrContains(message, "etcd") || absl::StrContains(message, "S3") ||
       absl::StrContains(message, "object store"))) {
    return Fail(absl::StrCat("fleetprof-server at ", options.server, " cannot answer now: ", message));
  }
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
  context->set_deadline(GrpcDeadlineAt(RealClock()->Now()) + std::chrono::seconds(options.timeout_s));
}

}  // namespace fleetprof::cli
