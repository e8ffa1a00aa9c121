// The caller identity behind the dynolog API: the kernel's owner of a TCP client socket
// (NETLINK_SOCK_DIAG) and of a unix socket peer (SO_PEERCRED), and the unix listener's care
// with its path. Real sockets; a second uid where the test runs as root.
#include "collectors/peer_identity.h"

#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include "collectors/dynolog_listeners.h"
#include "gtest/gtest.h"
#include "tests/kineto/script_process.h"
#include "tests/test_support.h"

namespace fleetprof {
namespace {

using ::fleetprof::testing::TempDir;

// A listening socket on loopback of `family` (port chosen by the kernel); -1 when the host
// has no such loopback. `*address` gets where to connect.
int ListenLoopback(int family, sockaddr_storage* address, socklen_t* length) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  *address = {};
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(address);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    *length = sizeof(*in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(address);
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = in6addr_loopback;
    *length = sizeof(*in6);
  }
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(address), *length) != 0 || ::listen(fd, 8) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  ::getsockname(fd, reinterpret_cast<sockaddr*>(address), length);
  return fd;
}

int Connect(const sockaddr_storage& address, socklen_t length) {
  const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(PeerIdentity, LoopbackTcpClientIsTheTestsOwnUid) {
  for (int family : {AF_INET, AF_INET6}) {
    sockaddr_storage address;
    socklen_t length;
    const int listener = ListenLoopback(family, &address, &length);
    if (listener < 0) {
      std::cout << "no loopback for family " << family << ", skipped\n";
      continue;
    }
    const int client = Connect(address, length);
    ASSERT_GE(client, 0);
    const int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(accepted, 0);
    const std::optional<int64_t> uid = TcpPeerUid(accepted);
    std::cout << (family == AF_INET ? "IPv4" : "IPv6") << " loopback client uid: "
              << (uid ? std::to_string(*uid) : "unknown") << " (ours: " << ::getuid() << ")\n";
    EXPECT_EQ(uid, static_cast<int64_t>(::getuid()));
    ::close(accepted);
    ::close(client);
    ::close(listener);
  }
}

TEST(PeerIdentity, IPv4ClientOfADualStackListenerIsNamedToo) {
  const int listener = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 any{};
  any.sin6_family = AF_INET6;
  any.sin6_addr = in6addr_any;
  const int zero = 0;
  ::setsockopt(listener, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
  const bool listening = ::bind(listener, reinterpret_cast<sockaddr*>(&any), sizeof(any)) == 0 && ::listen(listener, 8) == 0;
  if (!listening) ::close(listener);
  FLEETPROF_REQUIRE(listening, "IPv6 on this host");
  socklen_t length = sizeof(any);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&any), &length);
  sockaddr_storage v4{};
  auto* in = reinterpret_cast<sockaddr_in*>(&v4);
  in->sin_family = AF_INET;
  in->sin_port = any.sin6_port;
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int client = Connect(v4, sizeof(*in));
  ASSERT_GE(client, 0);
  const int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  EXPECT_EQ(TcpPeerUid(accepted), static_cast<int64_t>(::getuid()));  // peer is ::ffff:127.0.0.1
  ::close(accepted);
  ::close(client);
  ::close(listener);
}

// A client that sent its bytes and closed leaves an orphaned or TIME_WAIT socket, which the
// kernel reports as uid 0: that must never make a caller root.
TEST(PeerIdentity, ClientThatAlreadyClosedIsUnknown) {
  sockaddr_storage address;
  socklen_t length;
  const int listener = ListenLoopback(AF_INET, &address, &length);
  ASSERT_GE(listener, 0);
  const int client = Connect(address, length);
  ASSERT_GE(client, 0);
  ::send(client, "x", 1, MSG_NOSIGNAL);
  ::close(client);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the FIN is acknowledged
  const int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(accepted, 0);
  EXPECT_EQ(TcpPeerUid(accepted), std::nullopt);
  ::close(accepted);
  ::close(listener);
}

TEST(PeerIdentity, AnotherUsersTcpClientIsThatUser) {
  FLEETPROF_REQUIRE(::geteuid() == 0, "root, to be a second user");
  sockaddr_storage address;
  socklen_t length;
  const int listener = ListenLoopback(AF_INET, &address, &length);
  ASSERT_GE(listener, 0);
  int done[2];
  ASSERT_EQ(::pipe(done), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(1001, 1001, 1001) != 0 || ::setresuid(1001, 1001, 1001) != 0) {
      ::_exit(97);
    }
    const int fd = Connect(address, length);
    char byte;
    (void)!::read(done[0], &byte, 1);  // holds the connection until the parent has looked
    ::_exit(fd >= 0 ? 0 : 98);
  }
  const int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(accepted, 0);
  const std::optional<int64_t> uid = TcpPeerUid(accepted);
  (void)!::write(done[1], "x", 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(uid, 1001);
  ::close(accepted);
  ::close(listener);
  ::close(done[0]);
  ::close(done[1]);
}

TEST(PeerIdentity, UnixSocketPeerIsTheTestsOwnUid) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  EXPECT_EQ(UnixPeerUid(pair[0]), static_cast<int64_t>(::getuid()));
  ::close(pair[0]);
  ::close(pair[1]);
}

int ConnectUnix(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(UnixListener, ServesAt0666AndRemovesItsSocketOnClose) {
  TempDir dir;
  const std::string path = dir.path() + "/dyno.sock";
  absl::StatusOr<UnixListener> listener = UnixListener::Listen(path);
  ASSERT_TRUE(listener.ok()) << listener.status();
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0666u);
  const int client = ConnectUnix(path);
  ASSERT_GE(client, 0);
  const int accepted = ::accept4(listener->fd(), nullptr, nullptr, SOCK_CLOEXEC);
  EXPECT_EQ(UnixPeerUid(accepted), static_cast<int64_t>(::getuid()));
  ::close(accepted);
  ::close(client);
  // A second listener on a live socket is refused; the first one's socket stays.
  EXPECT_TRUE(absl::IsAlreadyExists(UnixListener::Listen(path).status()));
  listener->Close();
  EXPECT_NE(::lstat(path.c_str(), &st), 0) << "the socket was left behind";
}

TEST(UnixListener, ReplacesAStaleSocket) {
  TempDir dir;
  const std::string path = dir.path() + "/dyno.sock";
  // What a crashed agent leaves behind: a socket file nobody listens on.
  const int stale = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(stale, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ::close(stale);
  absl::StatusOr<UnixListener> listener = UnixListener::Listen(path);
  ASSERT_TRUE(listener.ok()) << listener.status();
  const int client = ConnectUnix(path);
  EXPECT_GE(client, 0);
  if (client >= 0) ::close(client);
}

TEST(UnixListener, NeverFollowsOrReplacesWhatIsNotItsSocket) {
  TempDir dir;
  const std::string target = dir.path() + "/victim";
  const std::string link = dir.path() + "/link.sock";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  absl::Status linked = UnixListener::Listen(link).status();
  EXPECT_FALSE(linked.ok());
  EXPECT_NE(std::string(linked.message()).find("not a socket"), std::string::npos) << linked;
  struct stat st {};
  EXPECT_NE(::lstat(target.c_str(), &st), 0) << "created through the symlink";

  std::ofstream(dir.path() + "/file.sock") << "keep";
  EXPECT_FALSE(UnixListener::Listen(dir.path() + "/file.sock").ok());
  EXPECT_EQ(::lstat((dir.path() + "/file.sock").c_str(), &st), 0);

  // A folder reached through a symlink, or one others can write, is refused.
  ASSERT_EQ(::mkdir((dir.path() + "/real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((dir.path() + "/real").c_str(), (dir.path() + "/linkdir").c_str()), 0);
  EXPECT_FALSE(UnixListener::Listen(dir.path() + "/linkdir/dyno.sock").ok());
  ASSERT_EQ(::mkdir((dir.path() + "/open").c_str(), 0777), 0);
  ::chmod((dir.path() + "/open").c_str(), 0777);
  absl::Status open = UnixListener::Listen(dir.path() + "/open/dyno.sock").status();
  EXPECT_NE(std::string(open.message()).find("writable by no one else"), std::string::npos) << open;
  EXPECT_FALSE(UnixListener::Listen("relative.sock").ok());
}

}  // namespace
}  // namespace fleetprof
