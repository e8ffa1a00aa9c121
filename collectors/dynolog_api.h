#pragma once
// dynolog's remote API (spec/PROTOCOLS.md §2), so the existing `dyno gputrace` CLI triggers
// PyTorch traces through the fleetprof agent unchanged: TCP, one request per connection,
// each message an int32 length (native byte order) followed by that many bytes of JSON.
//
// Requests by "fn": getStatus, getVersion, and setKinetOnDemandRequest (sic), which becomes
// KinetoEndpoint::Trigger(). dynolog has no authentication; we listen on loopback unless told
// otherwise, and then require a token ("auth_token" in each request).

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"

namespace fleetprof {

class KinetoEndpoint;

class DynologApiServer {
 public:
  struct Options {
    std::string listen_address = "127.0.0.1:1778";  // host:port; port 0 picks a free one
    // The whole request must arrive within this; a stalled client is dropped. Connections
    // are served one at a time, so this also bounds how long one client can hold others up.
    std::chrono::milliseconds request_timeout{2000};
    size_t max_request_bytes = 1 << 20;
    std::string version = "fleetprof 0.1.0";  // what getVersion answers
    // A trace request's ACTIVITIES_LOG_FILE must name a file directly in this folder (the
    // agent, as root, later reads and uploads it); empty: requests naming a file are refused.
    std::string log_dir;
    // When set, every request must carry "auth_token" with this value (for an exposed API).
    std::string token;
  };

  // `endpoint` must outlive this server.
  DynologApiServer(KinetoEndpoint& endpoint, Options options);
  ~DynologApiServer();  // Stop()s
  DynologApiServer(const DynologApiServer&) = delete;
  DynologApiServer& operator=(const DynologApiServer&) = delete;

  // Listens and starts serving. Unavailable, naming the address, when it cannot listen.
  absl::Status Start();
  // Stops serving and closes the listener. Safe to call twice, or without Start().
  void Stop();
  // The port actually bound (useful with port 0); 0 before Start().
  int port() const { return port_; }

  // The JSON reply to one JSON request. Never fails: bad requests get {"error": "..."}.
  std::string HandleRequest(std::string_view request);

 private:
  void AcceptLoop();
  void ServeConnection(int fd);

  KinetoEndpoint& endpoint_;
  const Options options_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace fleetprof
