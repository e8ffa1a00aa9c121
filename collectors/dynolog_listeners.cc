#include "collectors/dynolog_listeners.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/net_address.h"

namespace fleetprof {
namespace {

// The path that reaches `name` inside the folder open as `dir_fd`, whatever has been renamed
// or linked along the folder's own path since it was opened (unix sockets have no bindat).
std::string BeneathPath(int dir_fd, const std::string& name) {
  return absl::StrCat("/proc/self/fd/", dir_fd, "/", name);
}

bool FillUnixAddress(const std::string& path, sockaddr_un* address) {
  *address = {};
  address->sun_family = AF_UNIX;
  if (path.size() >= sizeof(address->sun_path)) return false;
  std::memcpy(address->sun_path, path.c_str(), path.size() + 1);
  return true;
}

int OpenFolder(const std::string& dir) {
  return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

// Makes room for the socket at `name`: nothing there, or a stale socket nobody answers on.
absl::Status ClearStaleSocket(int dir_fd, const std::string& name, const std::string& path) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::UnavailableError(absl::StrCat("dynolog socket ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("dynolog socket ", path, " exists and is not a socket; refusing to replace it"));
  }
  sockaddr_un address;
  const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool live = probe >= 0 && FillUnixAddress(BeneathPath(dir_fd, name), &address) &&
                    ::connect(probe, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  if (probe >= 0) ::close(probe);
  if (live) return absl::AlreadyExistsError(absl::StrCat("dynolog socket ", path, " is served by another process"));
  if (::unlinkat(dir_fd, name.c_str(), 0) != 0 && errno != ENOENT) {
    return absl::UnavailableError(absl::StrCat("cannot remove stale ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int> ListenTcp(const std::string& address, int* port) {
  absl::StatusOr<HostPort> parts = ParseHostPort(address);
  if (!parts.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("dynolog API address \"", address, "\" is not host:port"));
  }
  const std::string& host = parts->host;
  const std::string service = absl::StrCat(parts->port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat("dynolog API address ", address, ": ", ::gai_strerror(rc)));
  }
  int listen_fd = -1;
  std::string last_error = "no usable address";
  for (addrinfo* ai = found; ai != nullptr && listen_fd < 0; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 64) == 0) {
      listen_fd = fd;
    } else {
      last_error = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (listen_fd < 0) {
    return absl::UnavailableError(absl::StrCat("dynolog API cannot listen on ", address, ": ", last_error));
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  ::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &bound_len);
  *port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return listen_fd;
}

absl::StatusOr<UnixListener> UnixListener::Listen(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (path.empty() || path[0] != '/' || slash + 1 == path.size()) {
    return absl::InvalidArgumentError(absl::StrCat("dynolog socket \"", path, "\" must be an absolute file path"));
  }
  UnixListener listener;
  listener.path_ = path;
  listener.name_ = path.substr(slash + 1);
  const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  if (listener.name_ == "." || listener.name_ == "..") {
    return absl::InvalidArgumentError(absl::StrCat("dynolog socket \"", path, "\" names no file"));
  }
  listener.dir_fd_ = OpenFolder(dir);
  if (listener.dir_fd_ < 0 && errno == ENOENT && ::mkdir(dir.c_str(), 0755) == 0) listener.dir_fd_ = OpenFolder(dir);
  if (listener.dir_fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("dynolog socket folder ", dir, ": ", std::strerror(errno), " (a symlink is refused)"));
  }
  struct stat st {};
  if (::fstat(listener.dir_fd_, &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "dynolog socket folder ", dir, " must belong to the agent's user and be writable by no one else"));
  }
  if (absl::Status s = ClearStaleSocket(listener.dir_fd_, listener.name_, path); !s.ok()) return s;
  sockaddr_un address;
  if (!FillUnixAddress(BeneathPath(listener.dir_fd_, listener.name_), &address)) {
    return absl::InvalidArgumentError(absl::StrCat("dynolog socket name \"", listener.name_, "\" is too long"));
  }
  listener.fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  // bind() creates the file and fails on anything already there (a symlink included).
  if (listener.fd_ < 0 || ::bind(listener.fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    return absl::UnavailableError(absl::StrCat("dynolog socket ", path, ": ", std::strerror(errno)));
  }
  if (::fstatat(listener.dir_fd_, listener.name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(st.st_mode) ||
      ::fchmodat(listener.dir_fd_, listener.name_.c_str(), 0666, 0) != 0 || ::listen(listener.fd_, 64) != 0) {
    return absl::UnavailableError(absl::StrCat("dynolog socket ", path, ": ", std::strerror(errno)));
  }
  listener.dev_ = st.st_dev;
  listener.ino_ = st.st_ino;
  return listener;
}

UnixListener& UnixListener::operator=(UnixListener&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    dir_fd_ = std::exchange(other.dir_fd_, -1);
    path_ = std::move(other.path_);
    name_ = std::move(other.name_);
    dev_ = std::exchange(other.dev_, 0);
    ino_ = std::exchange(other.ino_, 0);
  }
  return *this;
}

UnixListener::~UnixListener() { Close(); }

void UnixListener::Close() {
  if (fd_ >= 0) ::close(fd_);
  if (dir_fd_ >= 0) {
    struct stat st {};
    if (ino_ != 0 && ::fstatat(dir_fd_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == dev_ &&
        st.st_ino == ino_) {
      ::unlinkat(dir_fd_, name_.c_str(), 0);
    }
    ::close(dir_fd_);
  }
  fd_ = dir_fd_ = -1;
  ino_ = 0;
}

}  // namespace fleetprof
