#include "collectors/kineto_ipc.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fleetprof {
namespace {

// The daemon's abstract name includes a trailing NUL: libkineto connects with
// addrlen = offsetof(sun_path) + 9, so binding "\0dynolog" (8 bytes) would never match.
constexpr char kAbstractName[] = "\0dynolog\0";
constexpr size_t kAbstractNameLength = sizeof(kAbstractName) - 1;  // 9
constexpr char kSocketFileName[] = "dynolog";

constexpr socklen_t kPathOffset = offsetof(sockaddr_un, sun_path);

std::string ErrnoText(int err) { return std::strerror(err); }

template <typename T>
T ReadNative(std::string_view bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

absl::StatusOr<int> NewDatagramSocket() {
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket(AF_UNIX): ", ErrnoText(errno)));
  return fd;
}

// A socket file left by a daemon that died refuses connections; a live one accepts them.
// Only a stale file may be removed: unlinking a live daemon's socket would silently steal
// its clients.
absl::Status RemoveStaleSocketFile(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(path, ": ", ErrnoText(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " exists and is not a socket; not removing it"));
  }
  absl::StatusOr<int> probe = NewDatagramSocket();
  if (!probe.ok()) return probe.status();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int rc = ::connect(*probe, reinterpret_cast<sockaddr*>(&addr),
                           static_cast<socklen_t>(kPathOffset + path.size() + 1));
  const int err = errno;
  ::close(*probe);
  if (rc == 0) {
    return absl::AlreadyExistsError(absl::StrCat(
        "Kineto IPC address ", path, " is held by another daemon (dynolog or a fleetprof agent)"));
  }
  if (err != ECONNREFUSED) {
    return absl::FailedPreconditionError(absl::StrCat("probing ", path, ": ", ErrnoText(err)));
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::FailedPreconditionError(
        absl::StrCat("removing stale socket ", path, ": ", ErrnoText(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<KinetoPoll> ParseKinetoPoll(std::string_view payload) {
  if (payload.size() < 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("req payload of ", payload.size(), " bytes is shorter than 16"));
  }
  KinetoPoll poll;
  poll.type = ReadNative<int32_t>(payload, 0);
  const int32_t n = ReadNative<int32_t>(payload, 4);
  poll.job_id = ReadNative<int64_t>(payload, 8);
  if (n < 1) return absl::InvalidArgumentError(absl::StrCat("req with ", n, " pids"));
  const uint64_t expected = 16 + 4 * static_cast<uint64_t>(n);
  if (payload.size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat("req with n=", n, " must be ", expected,
                                                   " bytes, got ", payload.size()));
  }
  poll.pids.resize(static_cast<size_t>(n));
  std::memcpy(poll.pids.data(), payload.data() + 16, 4 * static_cast<size_t>(n));
  return poll;
}

absl::StatusOr<KinetoContext> ParseKinetoContext(std::string_view payload) {
  if (payload.size() != 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("ctxt payload must be 16 bytes, got ", payload.size()));
  }
  KinetoContext context;
  context.gpu = ReadNative<int32_t>(payload, 0);
  context.pid = ReadNative<int32_t>(payload, 4);
  context.job_id = ReadNative<int64_t>(payload, 8);
  return context;
}

std::string DescribeUnixAddress(const sockaddr_un& address, socklen_t length) {
  if (length <= kPathOffset) return "(unnamed socket)";
  const size_t path_length =
      std::min<size_t>(length - kPathOffset, sizeof(address.sun_path));
  std::string_view path(address.sun_path, path_length);
  if (path.front() != '\0') return std::string(path.substr(0, path.find('\0')));
  std::string out = "abstract \"";
  for (char c : path) {
    if (c == '\0') {
      out += "\\0";
    } else if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      out += absl::StrFormat("\\x%02x", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

namespace {

// Makes the socket file just bound at `path` writable by every user. The folder is shared with
// jobs, so the name is judged on the file it opens without following a link: a name swapped
// for a link or for someone else's file in between is refused, never chmod'ed (as root, a
// chmod through a link would open any file on the node).
absl::Status OpenToEveryUser(const std::string& path) {
  const int fd = ::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat("opening the Kineto socket ", path, ": ", ErrnoText(errno)));
  }
  struct stat st {};
  absl::Status result;
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != ::geteuid()) {
    result = absl::FailedPreconditionError(
        absl::StrCat(path, " is no longer the socket this agent bound (replaced meanwhile?)"));
  } else if (::chmod(absl::StrCat("/proc/self/fd/", fd).c_str(), 0666) != 0) {
    result = absl::FailedPreconditionError(absl::StrCat("chmod 0666 ", path, ": ", ErrnoText(errno)));
  }
  ::close(fd);
  return result;
}

}  // namespace

absl::StatusOr<std::unique_ptr<KinetoIpcSocket>> KinetoIpcSocket::Bind(
    const std::string& socket_dir) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  socklen_t addr_len = 0;
  std::string file_path;
  if (socket_dir.empty()) {
    std::memcpy(addr.sun_path, kAbstractName, kAbstractNameLength);
    addr_len = static_cast<socklen_t>(kPathOffset + kAbstractNameLength);
  } else {
    file_path = absl::StrCat(socket_dir, "/", kSocketFileName);
    if (file_path.size() >= sizeof(addr.sun_path)) {
      return absl::InvalidArgumentError(absl::StrCat("socket path ", file_path, " is longer than ",
                                                     sizeof(addr.sun_path) - 1, " bytes"));
    }
    if (absl::Status stale = RemoveStaleSocketFile(file_path); !stale.ok()) return stale;
    std::memcpy(addr.sun_path, file_path.data(), file_path.size());
    addr_len = static_cast<socklen_t>(kPathOffset + file_path.size() + 1);
  }
  const std::string description = DescribeUnixAddress(addr, addr_len);

  absl::StatusOr<int> fd = NewDatagramSocket();
  if (!fd.ok()) return fd.status();
  // Credentials tell us the sender's pid in our own pid namespace: a containerized job
  // reports its namespace-local pid, which names some other process in our /proc.
  // Without them no registration can be checked (KinetoEndpoint refuses those): fail here.
  const int one = 1;
  if (::setsockopt(*fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) != 0) {
    const int err = errno;
    ::close(*fd);
    return absl::InternalError(absl::StrCat("SO_PASSCRED on the Kineto socket: ", ErrnoText(err)));
  }
  if (::bind(*fd, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0) {
    const int err = errno;
    ::close(*fd);
    if (err == EADDRINUSE) {
      return absl::AlreadyExistsError(
          absl::StrCat("Kineto IPC address ", description,
                       " is held by another daemon (dynolog or a fleetprof agent)"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("binding Kineto IPC address ", description, ": ", ErrnoText(err)));
  }
  // Jobs of every user poll this socket (as they do dynolog's abstract one): sending to a
  // socket file needs write permission on it. Who a sender is comes from its credentials.
  if (!file_path.empty()) {
    if (absl::Status open = OpenToEveryUser(file_path); !open.ok()) {
      ::close(*fd);
      return open;
    }
  }
  return std::unique_ptr<KinetoIpcSocket>(
      new KinetoIpcSocket(*fd, description, std::move(file_path)));
}

KinetoIpcSocket::KinetoIpcSocket(int fd, std::string address, std::string file_path)
    : fd_(fd), address_(std::move(address)), file_path_(std::move(file_path)) {}

KinetoIpcSocket::~KinetoIpcSocket() {
  ::close(fd_);
  if (!file_path_.empty()) ::unlink(file_path_.c_str());
}

absl::StatusOr<KinetoDatagram> KinetoIpcSocket::Receive() {
  char header[kKinetoHeaderSize];
  ssize_t peeked;
  do {
    peeked = ::recv(fd_, header, sizeof(header), MSG_PEEK | MSG_DONTWAIT);
  } while (peeked < 0 && errno == EINTR);
  if (peeked < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return absl::UnavailableError("no datagram");
    return absl::InternalError(absl::StrCat("recv on ", address_, ": ", ErrnoText(errno)));
  }

  // Decide from the header alone whether the datagram deserves a buffer; a bad one is
  // consumed with a zero-length read, which discards a whole datagram.
  uint64_t size = 0;
  if (static_cast<size_t>(peeked) == kKinetoHeaderSize) std::memcpy(&size, header, sizeof(size));
  const bool header_ok =
      static_cast<size_t>(peeked) == kKinetoHeaderSize && size <= kKinetoMaxPayload;

  KinetoDatagram datagram;
  std::string buffer(header_ok ? kKinetoHeaderSize + size : 0, '\0');
  iovec iov{buffer.data(), buffer.size()};
  msghdr msg{};
  msg.msg_name = &datagram.sender;
  msg.msg_namelen = sizeof(datagram.sender);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t received;
  do {
    received = ::recvmsg(fd_, &msg, MSG_DONTWAIT | MSG_TRUNC);
  } while (received < 0 && errno == EINTR);
  if (received < 0) {
    return absl::InternalError(absl::StrCat("recvmsg on ", address_, ": ", ErrnoText(errno)));
  }
  datagram.sender_len = msg.msg_namelen;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
      ucred credentials;
      std::memcpy(&credentials, CMSG_DATA(c), sizeof(credentials));
      datagram.sender_pid = credentials.pid;
      datagram.sender_uid = credentials.uid;
    }
  }
  const std::string from = DescribeUnixAddress(datagram.sender, datagram.sender_len);

  if (!header_ok) {
    // Not read into a buffer: the header alone says why (too short, or too large).
    absl::Status why = DecodeKinetoDatagram(std::string_view(header, static_cast<size_t>(peeked)), from, &datagram);
    return why.ok() ? absl::InvalidArgumentError(absl::StrCat("malformed datagram from ", from)) : why;
  }
  if (static_cast<uint64_t>(received) != kKinetoHeaderSize + size) {
    return absl::InvalidArgumentError(absl::StrCat("datagram from ", from, " has ", received,
                                                   " bytes, its header announces 40 + ", size));
  }
  if (absl::Status s = DecodeKinetoDatagram(buffer, from, &datagram); !s.ok()) return s;
  return datagram;
}

absl::Status DecodeKinetoDatagram(std::string_view bytes, const std::string& from, KinetoDatagram* out) {
  if (bytes.size() < kKinetoHeaderSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "datagram of ", bytes.size(), " bytes from ", from, " is shorter than the 40-byte header"));
  }
  const uint64_t size = ReadNative<uint64_t>(bytes, 0);
  if (size > kKinetoMaxPayload) {
    return absl::InvalidArgumentError(absl::StrCat("datagram from ", from, " announces ", size,
                                                   " payload bytes (limit ", kKinetoMaxPayload, ")"));
  }
  if (bytes.size() != kKinetoHeaderSize + size) {
    return absl::InvalidArgumentError(absl::StrCat("datagram from ", from, " has ", bytes.size(),
                                                   " bytes, its header announces 40 + ", size));
  }
  std::string_view type = bytes.substr(8, kKinetoTypeSize);
  out->type = std::string(type.substr(0, type.find('\0')));
  out->payload = std::string(bytes.substr(kKinetoHeaderSize));
  return absl::OkStatus();
}

absl::Status KinetoIpcSocket::Send(const sockaddr_un& to, socklen_t to_len, std::string_view type,
                                   std::string_view payload) {
  if (to_len <= kPathOffset) {
    return absl::FailedPreconditionError("sender has no address to answer");
  }
  if (type.size() >= kKinetoTypeSize) {
    return absl::InvalidArgumentError(absl::StrCat("message type too long: ", std::string(type)));
  }
  char header[kKinetoHeaderSize] = {};
  const uint64_t size = payload.size();
  std::memcpy(header, &size, sizeof(size));
  std::memcpy(header + 8, type.data(), type.size());
  iovec iov[2] = {{header, sizeof(header)},
                  {const_cast<char*>(payload.data()), payload.size()}};
  msghdr msg{};
  msg.msg_name = const_cast<sockaddr_un*>(&to);
  msg.msg_namelen = to_len;
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  ssize_t sent;
  do {
    sent = ::sendmsg(fd_, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    return absl::UnavailableError(absl::StrCat("reply to ", DescribeUnixAddress(to, to_len), ": ",
                                               ErrnoText(errno)));
  }
  return absl::OkStatus();
}

}  // namespace fleetprof
