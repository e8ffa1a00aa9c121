#include "common/net_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
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

absl::StatusOr<HostPort> ParseHostPort(std::string_view address) {
  const absl::string_view text(address.data(), address.size());
  const size_t colon = text.rfind(':');
  HostPort out;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(text.substr(colon + 1), &out.port) || out.port < 0 ||
      out.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not HOST:PORT"));
  }
  out.host = std::string(text.substr(0, colon));
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  if (out.host.empty()) return absl::InvalidArgumentError(absl::StrCat("'", text, "' has no host"));
  return out;
}

}  // namespace fleetprof
