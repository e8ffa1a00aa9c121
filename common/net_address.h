#pragma once
// Addresses as fleetprof's flags and other processes give them ("host:port").

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace fleetprof {

// True for numeric 127.0.0.0/8 and ::1, and "localhost" (with or without :port, [ ] and
// gRPC's ipv4:/ipv6: prefixes). Other names are not loopback, whatever they resolve to.
bool IsLoopbackAddress(const std::string& address);

struct HostPort {
  std::string host;  // without the [ ] of an IPv6 address
  int port = 0;
};
// "host:port" or "[v6]:port" with a port in 0..65535 (0: let the kernel pick, for listeners);
// INVALID_ARGUMENT naming the address otherwise.
absl::StatusOr<HostPort> ParseHostPort(std::string_view address);

}  // namespace fleetprof
