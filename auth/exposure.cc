#include "auth/exposure.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace fleetprof {

absl::Status CheckExposure(const std::string& flag, const std::string& address, const ListenerSecurity& security) {
  if (security.insecure || IsLoopbackAddress(address)) return absl::OkStatus();
  if (!security.tokens) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing --", flag, "=", address, ": a non-loopback listener needs --auth_tokens_file "
        "(anyone who reaches it could read profiles and start captures); --insecure overrides"));
  }
  if (!security.tls) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing --", flag, "=", address, ": tokens would cross the network in clear text; give "
        "--tls_cert and --tls_key, or --insecure to accept that"));
  }
  return absl::OkStatus();
}

}  // namespace fleetprof
