#include "auth/exposure.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace fleetprof {

bool IsLoopbackAddress(const std::string& address) {
  std::string host = address;
  if (!host.empty() && host.front() == '[') {
    host = host.substr(1, host.find(']') == std::string::npos ? std::string::npos : host.find(']') - 1);
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    host = host.substr(0, host.find(':'));
  }
  if (absl::StartsWith(host, "ipv4:")) host = host.substr(5);
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

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
