#pragma once
// Addresses as fleetprof's flags and other processes give them ("host:port").

#include <string>

namespace fleetprof {

// True for numeric 127.0.0.0/8 and ::1, and "localhost" (with or without :port, [ ] and
// gRPC's ipv4:/ipv6: prefixes). Other names are not loopback, whatever they resolve to.
bool IsLoopbackAddress(const std::string& address);

}  // namespace fleetprof
