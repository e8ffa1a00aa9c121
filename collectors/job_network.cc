#include "collectors/job_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/net_address.h"
#include "common/safe_paths.h"
#include "common/threads.h"

namespace fleetprof {
namespace {

// The job's address as this file dials it: a port, and "localhost" as 127.0.0.1.
absl::StatusOr<HostPort> JobAddress(const std::string& address) {
  absl::StatusOr<HostPort> parts = ParseHostPort(address);
  if (!parts.ok()) return parts.status();
  if (parts->port == 0) return absl::InvalidArgumentError(absl::StrCat("'", address, "' has no port"));
  if (parts->host == "localhost") parts->host = "127.0.0.1";
  return parts;
}

// How /proc/net/tcp{,6} print an address: each 32-bit word of it, as stored, in %08X.
std::string ProcNetHex(const void* address, size_t bytes) {
  std::string hex;
  for (size_t i = 0; i < bytes; i += 4) {
    uint32_t word = 0;
    std::memcpy(&word, static_cast<const char*>(address) + i, 4);
    absl::StrAppendFormat(&hex, "%08X", word);
  }
  return hex;
}

struct Listening {
  int specificity = 0;  // how closely it matches the dialled address: the kernel picks the highest
  int64_t uid = -1;
};

// The listening sockets (state 0A) on `port` that a connection to `host` would reach, in
// order of how specifically they are bound: the exact address (or its v4-mapped form) beats
// the family's wildcard, which beats a dual-stack [::] for an IPv4 address. Only the most
// specific ones matter: they take the connection.
std::vector<Listening> ListenersFor(const std::string& net_dir, const std::string& host, int port) {
  std::string exact_v4, exact_v6, mapped_v6;
  if (in_addr v4{}; ::inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    exact_v4 = ProcNetHex(&v4, 4);
    in6_addr mapped{};
    mapped.s6_addr[10] = mapped.s6_addr[11] = 0xff;
    std::memcpy(&mapped.s6_addr[12], &v4, 4);
    mapped_v6 = ProcNetHex(&mapped, 16);
  } else if (in6_addr v6{}; ::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    exact_v6 = ProcNetHex(&v6, 16);
  }
  std::vector<Listening> found;
  for (const bool v6 : {false, true}) {
    std::ifstream in(net_dir + (v6 ? "tcp6" : "tcp"));
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (fields.size() < 8 || fields[3] != "0A") continue;
      const size_t colon = fields[1].find(':');
      int local_port = 0;
      Listening listening;
      if (colon == std::string::npos || !absl::SimpleHexAtoi(fields[1].substr(colon + 1), &local_port) ||
          local_port != port || !absl::SimpleAtoi(fields[7], &listening.uid)) {
        continue;
      }
      const std::string local = fields[1].substr(0, colon);
      const bool wildcard = local.find_first_not_of('0') == std::string::npos;
      if (!v6) {
        if (exact_v4.empty()) continue;
        listening.specificity = local == exact_v4 ? 3 : wildcard ? 2 : 0;
      } else if (!exact_v6.empty()) {
        listening.specificity = local == exact_v6 ? 3 : wildcard ? 2 : 0;
      } else {
        listening.specificity = local == mapped_v6 ? 3 : wildcard ? 1 : 0;
      }
      if (listening.specificity > 0) found.push_back(listening);
    }
  }
  return found;
}

}  // namespace

absl::Status CheckJobProfilerAddress(const std::string& proc_root, int32_t pid, const std::string& address) {
  if (!IsLoopbackAddress(address)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "refusing profiler address '", address, "' from the environment of pid ", pid,
        ": a job's FLEETPROF_XPROF_ADDR must be loopback (127.0.0.1:PORT); give other addresses to the agent "
        "with --target"));
  }
  auto parts = JobAddress(address);
  if (!parts.ok()) return parts.status();
  const int64_t uid = ProcessUid(proc_root, pid);
  if (uid < 0) return absl::NotFoundError(absl::StrCat("pid ", pid, " is gone"));
  const std::vector<Listening> listeners =
      ListenersFor(absl::StrCat(proc_root, "/", pid, "/net/"), parts->host, parts->port);
  int best = 0;
  for (const Listening& l : listeners) best = std::max(best, l.specificity);
  bool all_the_jobs = best > 0;
  for (const Listening& l : listeners) {
    if (l.specificity == best && l.uid != uid) all_the_jobs = false;
  }
  if (all_the_jobs) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      "refusing profiler address '", address, "' from the environment of pid ", pid, ": what listens there in its ",
      "network namespace is not a socket of uid ", uid, " (the job's own profiler server must be)"));
}

absl::StatusOr<int> ConnectInJobNetwork(const std::string& proc_root, int32_t pid, const std::string& address,
                                        int timeout_ms) {
  auto parts = JobAddress(address);
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
