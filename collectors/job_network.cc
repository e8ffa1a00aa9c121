#include "collectors/job_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/net_address.h"
#include "common/safe_paths.h"
#include "common/threads.h"

namespace fleetprof {
namespace {

struct HostPort {
  std::string host;  // without brackets
  int port = 0;
};

absl::StatusOr<HostPort> SplitHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  HostPort out;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &out.port) || out.port <= 0 ||
      out.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("'", address, "' is not HOST:PORT"));
  }
  out.host = address.substr(0, colon);
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  if (out.host == "localhost") out.host = "127.0.0.1";
  return out;
}

// /proc/net/tcp{,6} rows: "sl local rem st tx:rx tr:when retr uid timeout inode". A local
// address is hex in the kernel's byte order; only LISTEN (0A) rows on the port count, and
// only when they listen on loopback or on every address (a socket bound to another
// interface's address is not what "127.0.0.1:port" reaches).
bool JobListensOn(const std::string& table, int port, int64_t uid, bool v6) {
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() < 8 || fields[3] != "0A") continue;
    const size_t colon = fields[1].find(':');
    if (colon == std::string::npos) continue;
    const std::string local = fields[1].substr(0, colon);
    int local_port = 0;
    int64_t owner = -1;
    if (!absl::SimpleHexAtoi(fields[1].substr(colon + 1), &local_port) || local_port != port) continue;
    if (!absl::SimpleAtoi(fields[7], &owner) || owner != uid) continue;
    const bool any = local.find_first_not_of('0') == std::string::npos;
    // IPv4 127.x.x.x is stored little-endian on x86 ("0100007F"); ::1 as four 32-bit words.
    const bool loopback = v6 ? local == "00000000000000000000000001000000"
                             : local.size() == 8 && local.substr(6, 2) == "7F";
    if (any || loopback) return true;
  }
  return false;
}

}  // namespace

absl::Status CheckJobProfilerAddress(const std::string& proc_root, int32_t pid, const std::string& address) {
  if (!IsLoopbackAddress(address)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "refusing profiler address '", address, "' from the environment of pid ", pid,
        ": a job's FLEETPROF_XPROF_ADDR must be loopback (127.0.0.1:PORT); give other addresses to the agent "
        "with --target"));
  }
  auto parts = SplitHostPort(address);
  if (!parts.ok()) return parts.status();
  const int64_t uid = ProcessUid(proc_root, pid);
  if (uid < 0) return absl::NotFoundError(absl::StrCat("pid ", pid, " is gone"));
  const std::string net = absl::StrCat(proc_root, "/", pid, "/net/");
  if (JobListensOn(net + "tcp", parts->port, uid, false) || JobListensOn(net + "tcp6", parts->port, uid, true)) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "refusing profiler address '", address, "' from the environment of pid ", pid, ": nothing of uid ", uid,
      " listens on port ", parts->port, " in its network namespace (the job's own profiler server must)"));
}

absl::StatusOr<int> ConnectInJobNetwork(const std::string& proc_root, int32_t pid, const std::string& address,
                                        int timeout_ms) {
  auto parts = SplitHostPort(address);
  if (!parts.ok()) return parts.status();
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (in_addr v4{}; ::inet_pton(AF_INET, parts->host.c_str(), &v4) == 1) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&storage);
    sin->sin_family = AF_INET;
    sin->sin_addr = v4;
    sin->sin_port = htons(static_cast<uint16_t>(parts->port));
    length = sizeof(sockaddr_in);
  } else if (in6_addr v6{}; ::inet_pton(AF_INET6, parts->host.c_str(), &v6) == 1) {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&storage);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_addr = v6;
    sin6->sin6_port = htons(static_cast<uint16_t>(parts->port));
    length = sizeof(sockaddr_in6);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("'", address, "': want a numeric host"));
  }

  absl::StatusOr<int> result = absl::InternalError("not run");
  // A thread of its own: setns moves only the calling thread, and this one ends right after.
  absl::StatusOr<std::thread> dialer = StartThread("a connection in a job's network namespace", [&] {
    const std::string ns = absl::StrCat(proc_root, "/", pid, "/ns/net");
    struct stat theirs {}, ours {};
    if (::stat(ns.c_str(), &theirs) != 0) {
      result = absl::NotFoundError(absl::StrCat("cannot read the network namespace of pid ", pid, ": ",
                                                std::strerror(errno)));
      return;
    }
    if (::stat("/proc/self/ns/net", &ours) != 0 || theirs.st_ino != ours.st_ino || theirs.st_dev != ours.st_dev) {
      const int ns_fd = ::open(ns.c_str(), O_RDONLY | O_CLOEXEC);
      if (ns_fd < 0 || ::setns(ns_fd, CLONE_NEWNET) != 0) {
        result = absl::PermissionDeniedError(absl::StrCat("cannot enter the network namespace of pid ", pid, ": ",
                                                          std::strerror(errno)));
        if (ns_fd >= 0) ::close(ns_fd);
        return;
      }
      ::close(ns_fd);
    }
    const int fd = ::socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      result = absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
      return;
    }
    if (::connect(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 && errno != EINPROGRESS) {
      result = absl::UnavailableError(absl::StrCat("connect to ", address, ": ", std::strerror(errno)));
      ::close(fd);
      return;
    }
    pollfd wait{fd, POLLOUT, 0};
    int error = 0;
    socklen_t error_length = sizeof(error);
    if (::poll(&wait, 1, timeout_ms) != 1 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &error_length) != 0 ||
        error != 0) {
      result = absl::UnavailableError(absl::StrCat("connect to ", address, " in the network namespace of pid ", pid,
                                                   ": ", error != 0 ? std::strerror(error) : "timed out"));
      ::close(fd);
      return;
    }
    result = fd;
  });
  if (!dialer.ok()) return dialer.status();
  dialer->join();
  return result;
}

}  // namespace fleetprof
