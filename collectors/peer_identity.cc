#include "collectors/peer_identity.h"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fleetprof {
namespace {

// The kernel shows a uid without a mapping in our user namespace as the overflow uid
// (65534): many users at once, so nobody in particular.
constexpr uint32_t kOverflowUid = 65534;

std::optional<int64_t> KnownUid(uint32_t uid) {
  if (uid == kOverflowUid || uid == static_cast<uint32_t>(-1)) return std::nullopt;
  return uid;
}

// One end of a TCP connection, in the form inet_diag wants it (network byte order).
struct Endpoint {
  int family = AF_UNSPEC;
  uint16_t port = 0;
  uint32_t addr[4] = {0, 0, 0, 0};
};

std::optional<Endpoint> EndpointOf(const sockaddr_storage& storage) {
  Endpoint end;
  if (storage.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(storage);
    end.family = AF_INET;
    end.port = in.sin_port;
    std::memcpy(end.addr, &in.sin_addr, 4);
    return end;
  }
  if (storage.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(storage);
    end.port = in6.sin6_port;
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
      // An IPv4 client reaching a dual-stack listener: its own socket is an IPv4 one.
      end.family = AF_INET;
      std::memcpy(end.addr, &in6.sin6_addr.s6_addr[12], 4);
    } else {
      end.family = AF_INET6;
      std::memcpy(end.addr, &in6.sin6_addr, 16);
    }
    return end;
  }
  return std::nullopt;
}

// States of a client socket that a process still holds: connected, or half-closed by its
// own shutdown(SHUT_WR). TIME_WAIT and LISTEN answers are someone else's socket or none.
bool IsLiveClientState(uint8_t state) {
  return state == TCP_ESTABLISHED || state == TCP_FIN_WAIT1 || state == TCP_FIN_WAIT2 ||
         state == TCP_CLOSE_WAIT;
}

// Asks the kernel for the one TCP socket whose local end is `local` and remote end `remote`.
std::optional<int64_t> SocketOwner(const Endpoint& local, const Endpoint& remote) {
  const int nl = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) return std::nullopt;
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof(message);
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;  // no NLM_F_DUMP: an exact lookup
  message.header.nlmsg_seq = 1;
  message.request.sdiag_family = static_cast<uint8_t>(local.family);
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_states = ~0u;
  message.request.id.idiag_sport = local.port;
  message.request.id.idiag_dport = remote.port;
  std::memcpy(message.request.id.idiag_src, local.addr, sizeof(local.addr));
  std::memcpy(message.request.id.idiag_dst, remote.addr, sizeof(remote.addr));
  message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  std::optional<int64_t> uid;
  if (::sendto(nl, &message, sizeof(message), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) ==
      static_cast<ssize_t>(sizeof(message))) {
    alignas(nlmsghdr) char buffer[8192];
    pollfd ready{nl, POLLIN, 0};
    sockaddr_nl from{};
    socklen_t from_len = sizeof(from);
    ssize_t n = -1;
    if (::poll(&ready, 1, 1000) == 1) {
      n = ::recvfrom(nl, buffer, sizeof(buffer), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &from_len);
    }
    const auto* reply = reinterpret_cast<const nlmsghdr*>(buffer);
    // Only the kernel's answer to our request, and only a socket still held by a process
    // (an orphaned socket has no inode) on exactly this connection.
    if (n > 0 && from.nl_pid == 0 && NLMSG_OK(reply, static_cast<unsigned>(n)) &&
        reply->nlmsg_type == SOCK_DIAG_BY_FAMILY && reply->nlmsg_seq == 1 &&
        reply->nlmsg_len >= NLMSG_LENGTH(sizeof(inet_diag_msg))) {
      const auto* diag = static_cast<const inet_diag_msg*>(NLMSG_DATA(reply));
      if (IsLiveClientState(diag->idiag_state) && diag->idiag_inode != 0 &&
          diag->id.idiag_sport == local.port && diag->id.idiag_dport == remote.port) {
        uid = KnownUid(diag->idiag_uid);
      }
    }
  }
  ::close(nl);
  return uid;
}

}  // namespace

std::optional<int64_t> TcpPeerUid(int fd) {
  sockaddr_storage ours{}, theirs{};
  socklen_t ours_len = sizeof(ours), theirs_len = sizeof(theirs);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ours), &ours_len) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&theirs), &theirs_len) != 0) {
    return std::nullopt;
  }
  std::optional<Endpoint> server = EndpointOf(ours), client = EndpointOf(theirs);
  if (!server || !client || server->family != client->family) return std::nullopt;
  // The client's socket: its local end is our peer, its remote end is us.
  return SocketOwner(*client, *server);
}

std::optional<int64_t> UnixPeerUid(int fd) {
  ucred credentials{};
  socklen_t length = sizeof(credentials);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0 || length != sizeof(credentials)) {
    return std::nullopt;
  }
  return KnownUid(credentials.uid);
}

}  // namespace fleetprof
