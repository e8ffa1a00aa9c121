#pragma once
// The datagram layer of libkineto's on-demand protocol (docs/protocols.md, PyTorch on-demand
// tracing): the unix datagram socket a PyTorch process started with KINETO_USE_DAEMON=1 polls, the
// 40-byte message header, and the "req" / "ctxt" payloads. Everything about bytes on the wire lives
// here; what a poll means (registration, pending configs) lives in KinetoEndpoint.

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fleetprof {

// Every datagram starts with { uint64 size; char type[32]; } in native byte order.
inline constexpr size_t kKinetoHeaderSize = 40;
inline constexpr size_t kKinetoTypeSize = 32;
// Real payloads are a few hundred bytes (a config, or 16 + 4 * ancestors); anything far
// larger is garbage and is dropped without allocating for it.
inline constexpr size_t kKinetoMaxPayload = 64 * 1024;

inline constexpr std::string_view kKinetoPollType = "req";
inline constexpr std::string_view kKinetoContextType = "ctxt";

// Bits of a poll's `type`. 0 means the client's profiler is busy (tracing already).
inline constexpr int32_t kKinetoEventsBit = 1;
inline constexpr int32_t kKinetoActivitiesBit = 2;

// A "req" payload: { int32 type; int32 n; int64 jobid; int32 pids[n]; }.
struct KinetoPoll {
  int32_t type = 0;
  int64_t job_id = 0;
  std::vector<int32_t> pids;  // the client and its ancestors, leaf first
};

// A "ctxt" payload: { int32 gpu; int32 pid; int64 jobid; }.
struct KinetoContext {
  int32_t gpu = 0;
  int32_t pid = 0;
  int64_t job_id = 0;
};

// Decodes a "req" payload. InvalidArgument unless it is exactly 16 + 4n bytes with n >= 1.
absl::StatusOr<KinetoPoll> ParseKinetoPoll(std::string_view payload);
// Decodes a "ctxt" payload. InvalidArgument unless it is exactly 16 bytes.
absl::StatusOr<KinetoContext> ParseKinetoContext(std::string_view payload);

// One datagram as received, with the address to answer.
struct KinetoDatagram {
  std::string type;  // the header's type up to its first NUL
  std::string payload;
  sockaddr_un sender{};
  socklen_t sender_len = 0;
  // The sending process in our pid namespace (SCM_CREDENTIALS), 0 when the kernel gave none.
  int32_t sender_pid = 0;
  int64_t sender_uid = -1;  // likewise; -1 when unknown
};

// Splits one whole datagram (40-byte header, then payload) into its type (up to the first
// NUL) and payload. InvalidArgument, naming `from`, unless the header's size is at most
// kKinetoMaxPayload and matches the bytes. The socket's Receive uses it; so does the fuzzer.
absl::Status DecodeKinetoDatagram(std::string_view bytes, const std::string& from, KinetoDatagram* out);

// The daemon's bound socket. Non-blocking; not thread-safe (one event loop owns it).
class KinetoIpcSocket {
 public:
  // Binds `socket_dir`/dynolog when socket_dir is set (removing a stale socket file that no
  // daemon answers on), else the abstract name "\0dynolog\0" with its trailing NUL.
  // AlreadyExists, naming the address, when another daemon holds it.
  static absl::StatusOr<std::unique_ptr<KinetoIpcSocket>> Bind(const std::string& socket_dir);

  ~KinetoIpcSocket();  // closes the socket and removes a socket file we created
  KinetoIpcSocket(const KinetoIpcSocket&) = delete;
  KinetoIpcSocket& operator=(const KinetoIpcSocket&) = delete;

  int fd() const { return fd_; }
  // Human-readable address, e.g. `abstract "\0dynolog\0"` or `/run/kineto/dynolog`.
  const std::string& address() const { return address_; }

  // Takes the next datagram off the socket. Unavailable when none is waiting.
  // InvalidArgument for a malformed datagram, which is consumed and must just be dropped.
  absl::StatusOr<KinetoDatagram> Receive();

  // Sends header + payload to `to` without blocking. A client that stopped listening is an
  // error the caller logs at debug level; it never blocks the loop.
  absl::Status Send(const sockaddr_un& to, socklen_t to_len, std::string_view type,
                    std::string_view payload);

 private:
  KinetoIpcSocket(int fd, std::string address, std::string file_path);

  int fd_;
  std::string address_;
  std::string file_path_;  // empty for the abstract socket
};

// Renders a unix socket address for logs: abstract names with their NULs spelled as "\0".
std::string DescribeUnixAddress(const sockaddr_un& address, socklen_t length);

}  // namespace fleetprof
