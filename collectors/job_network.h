#pragma once
// Where the root agent may dial on a job's behalf. A job names its profiler server in its own
// environment (FLEETPROF_XPROF_ADDR), so that address is the job's word, not the operator's:
// taken at face value it would point the agent at any host, or at another user's service on
// the node's loopback. An address from a job must therefore be loopback, a socket listening
// on that port in the job's network namespace must belong to the job's user, and the
// connection is made from inside that namespace (a container's 127.0.0.1 is its own).

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace fleetprof {

// OK when `address` (host:port) is loopback and the listening sockets that a connection to it
// would reach in the job's network namespace (`proc_root`/`pid`/net/tcp and tcp6: the most
// specifically bound ones on that port) all belong to the uid of `pid`. Another user's
// 127.0.0.1:P is not the job's, even when the job listens on [::]:P or 127.0.0.2:P.
// PERMISSION_DENIED otherwise, saying which.
absl::Status CheckJobProfilerAddress(const std::string& proc_root, int32_t pid, const std::string& address);

// A TCP socket connected to `address` (numeric loopback host:port) from inside the network
// namespace of `pid` (entered on a thread of its own, so no other thread of the agent moves),
// within `timeout_ms`. The caller owns the descriptor. UNAVAILABLE when the connection fails,
// PERMISSION_DENIED when the namespace cannot be entered.
absl::StatusOr<int> ConnectInJobNetwork(const std::string& proc_root, int32_t pid, const std::string& address,
                                        int timeout_ms);

}  // namespace fleetprof
