#include "auth/exposure.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace fleetprof {

bool IsLoopbackAddress(const std::string& address) {
  std::string host = address;
  if (absl::StartsWith(host, "ipv4:") || absl::StartsWith(host, "ipv6:")) host = host.substr(5);
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string::npos) return false;
    host = host.substr(1, close - 1);
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    host = host.substr(0, host.find(':'));
  }
  if (host == "localhost") return true;
  // Numeric addresses only: a name such as 127.example.com could resolve anywhere.
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return ::inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
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
