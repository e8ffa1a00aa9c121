#pragma once
// Plain sockets on 127.0.0.1 (and unix stream sockets) for tests that play a peer no library
// controls: a server that never answers, a link that goes dead, a slow or hostile client.

#include <string>

namespace fleetprof::testing {

// A socket listening on a free loopback port (written to *port); -1 on failure.
int ListenOnLoopback(int* port);
// A socket connected to 127.0.0.1:`port`; -1 on failure.
int ConnectToLoopback(int port);
// The same for "HOST:PORT" (only the port is read: the host is loopback).
int ConnectToLoopback(const std::string& host_port);
// A stream socket connected to the unix socket at `path`; -1 on failure.
int ConnectToUnixSocket(const std::string& path);

}  // namespace fleetprof::testing
