#pragma once
// dynolog's remote API (docs/protocols.md, dynolog's TCP API), so the existing `dyno gputrace` CLI
// triggers PyTorch traces through the fleetprof agent unchanged: TCP, one request per connection,
// each message an int32 length (native byte order) followed by that many bytes of JSON.
// The same framing is also offered on a unix stream socket.
//
// Requests by "fn": getStatus, getVersion, and setKinetOnDemandRequest (sic), which becomes
// KinetoEndpoint::Trigger(). dynolog has no authentication; we listen on loopback unless told
// otherwise, and then require a token ("auth_token" in each request). Whoever calls, the
// kernel names the caller's uid (the client socket's owner over TCP, SO_PEERCRED on the unix
// socket): root may trace every process, any other user only its own, and a caller the
// kernel cannot name (a remote one without a token) none.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "collectors/dynolog_listeners.h"

namespace fleetprof {

class KinetoEndpoint;

class DynologApiServer {
 public:
  struct Options {
    // host:port; port 0 picks a free one; empty: no TCP listener.
    std::string listen_address = "127.0.0.1:1778";
    // An absolute path for a unix stream socket too (see UnixListener); empty: none.
    std::string unix_socket;
    // The whole request must arrive within this; a stalled client is dropped.
    std::chrono::milliseconds request_timeout{2000};
    size_t max_request_bytes = 1 << 20;
    // Connections served at once, in all and per caller uid (callers the kernel cannot
    // name share one count). Past either, a connection gets {"error": ...} and is closed.
    int max_connections = 64;
    int max_connections_per_uid = 16;
    std::string version = "fleetprof 0.1.0";  // what getVersion answers
    // A trace request's ACTIVITIES_LOG_FILE must name a file directly in this folder (the
    // agent, as root, later reads and uploads it); empty: requests naming a file are refused.
    std::string log_dir;
    // Where processes of a uid write the traces a request asks for (their private folder; see
    // KinetoEndpoint::Trigger); unset: directly in log_dir, as requested.
    std::function<absl::StatusOr<std::string>(int64_t uid)> trace_folder_for;
    // When set, every request must carry "auth_token" with this value (for an exposed API).
    // A caller with the token that the kernel cannot name (a remote host) acts as root.
    std::string token;
  };

  // `endpoint` must outlive this server.
  DynologApiServer(KinetoEndpoint& endpoint, Options options);
  ~DynologApiServer();  // Stop()s
  DynologApiServer(const DynologApiServer&) = delete;
  DynologApiServer& operator=(const DynologApiServer&) = delete;

  // Listens and starts serving. Unavailable, naming the address, when it cannot listen.
  absl::Status Start();
  // Stops serving, waits for the connections in progress, closes the listeners and removes
  // the unix socket. Safe to call twice, or without Start().
  void Stop();
  // The TCP port actually bound (useful with port 0); 0 before Start() or without TCP.
  int port() const { return port_; }

  // The JSON reply to one JSON request from `caller_uid` (nullopt: the kernel could not say
  // who called). Never fails: bad or unauthorized requests get {"error": "..."}.
  std::string HandleRequest(std::string_view request, std::optional<int64_t> caller_uid);

 private:
  void AcceptLoop();
  // Serves `fd` on a thread of its own, or refuses it when a limit is reached.
  void Admit(int fd, std::optional<int64_t> caller_uid);
  void ServeConnection(int fd, std::optional<int64_t> caller_uid);

  // Connections in progress, by caller uid (-1: callers not named). Shared with their
  // threads, so the last one's unlock never touches a server that Stop() has let go.
  struct ConnectionCounts {
    absl::Mutex mutex;
    int active ABSL_GUARDED_BY(mutex) = 0;
    std::map<int64_t, int> by_uid ABSL_GUARDED_BY(mutex);
    void Release(int64_t uid_key);
  };

  KinetoEndpoint& endpoint_;
  const Options options_;
  int listen_fd_ = -1;
  UnixListener unix_;
  int wake_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  const std::shared_ptr<ConnectionCounts> connections_ = std::make_shared<ConnectionCounts>();
};

}  // namespace fleetprof
