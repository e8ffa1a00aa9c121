#pragma once
// How a server that is up but busy (too many uploads at once) starts its UNAVAILABLE answer,
// so that clients retry it without calling the server unreachable. UNAVAILABLE, because clients
// retry that code with backoff (rpc/upload_client.cc).

namespace fleetprof {

inline constexpr char kServerBusy[] = "the server is busy";

}  // namespace fleetprof
