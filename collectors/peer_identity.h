#pragma once
// Who is on the other end of a local stream connection, as the kernel tells it. The dynolog
// API has no tokens on loopback (`dyno` sends none), so the caller's uid is the only thing
// that can decide whose jobs it may trace.

#include <cstdint>
#include <optional>

namespace fleetprof {

// The uid owning the client socket of an accepted TCP connection `fd`, looked up with
// NETLINK_SOCK_DIAG by the exact 4-tuple (IPv4, IPv6 and v4-mapped). nullopt when the client
// is not a live socket on this host: a remote peer, another network namespace, or a socket
// its owner already closed (a closed or TIME_WAIT socket reports uid 0, so it never counts).
std::optional<int64_t> TcpPeerUid(int fd);

// The effective uid of the process that connected to unix stream socket `fd` (SO_PEERCRED),
// nullopt when the kernel does not say.
std::optional<int64_t> UnixPeerUid(int fd);

}  // namespace fleetprof
