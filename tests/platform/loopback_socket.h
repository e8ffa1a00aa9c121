#pragma once
// Plain TCP sockets on 127.0.0.1 for tests that play a peer gRPC does not control: a server
// that never answers, a link that goes dead.

namespace fleetprof::testing {

// A socket listening on a free loopback port (written to *port); -1 on failure.
int ListenOnLoopback(int* port);
// A socket connected to 127.0.0.1:`port`; -1 on failure.
int ConnectToLoopback(int port);

}  // namespace fleetprof::testing
