// Where the agent may dial for an address a job gave (collectors/job_network.h): only the
// job's own profiler server on loopback. On 52e8783 FLEETPROF_XPROF_ADDR could name any host,
// or another user's service on the node's loopback, and the root agent called it.
#include "collectors/job_network.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

namespace fs = std::filesystem;

// A socket of this process listening on 127.0.0.1 (port chosen by the kernel).
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd_, 4) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
      ADD_FAILURE() << "cannot listen on loopback";
    }
    port_ = ntohs(addr.sin_port);
  }
  ~Listener() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(JobNetwork, TheJobsOwnLoopbackListenerIsAccepted) {
  Listener listener;
  EXPECT_TRUE(CheckJobProfilerAddress("/proc", ::getpid(), absl::StrCat("127.0.0.1:", listener.port())).ok());
  EXPECT_TRUE(CheckJobProfilerAddress("/proc", ::getpid(), absl::StrCat("localhost:", listener.port())).ok());
  absl::StatusOr<int> fd = ConnectInJobNetwork("/proc", ::getpid(), absl::StrCat("127.0.0.1:", listener.port()), 2000);
  ASSERT_TRUE(fd.ok()) << fd.status();
  ::close(*fd);
}

TEST(JobNetwork, OtherHostsAndPortsNobodyOfTheJobListensOnAreRefused) {
  Listener listener;
  for (const std::string& address : std::vector<std::string>{absl::StrCat("10.1.2.3:", listener.port()), std::string("169.254.169.254:80"),
                                    absl::StrCat("metadata.internal:", listener.port())}) {
    absl::Status s = CheckJobProfilerAddress("/proc", ::getpid(), address);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << address;
    EXPECT_NE(s.message().find("must be loopback"), std::string::npos) << s;
  }
  int closed_port = 0;
  {
    Listener gone;
    closed_port = gone.port();
  }
  absl::Status nobody = CheckJobProfilerAddress("/proc", ::getpid(), absl::StrCat("127.0.0.1:", closed_port));
  EXPECT_EQ(nobody.code(), absl::StatusCode::kPermissionDenied) << nobody;
  EXPECT_NE(nobody.message().find("is not a socket of uid"), std::string::npos) << nobody;
}

// Another user's service on the node's loopback: the listener is there, but not the job's.
TEST(JobNetwork, AListenerOfAnotherUserIsRefused) {
  Listener listener;
  char pattern[] = "/tmp/fleetprof_job_network_XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string root = pattern;
  const std::string job = root + "/4242";
  fs::create_directories(job + "/net");
  fs::copy_file("/proc/self/net/tcp", job + "/net/tcp");
  fs::copy_file("/proc/self/net/tcp6", job + "/net/tcp6");
  std::ofstream(job + "/status") << "Name:\tpython3\nUid:\t" << ::getuid() + 1001 << "\t" << ::getuid() + 1001 << "\t"
                                 << ::getuid() + 1001 << "\t" << ::getuid() + 1001 << "\n";
  absl::Status s = CheckJobProfilerAddress(root, 4242, absl::StrCat("127.0.0.1:", listener.port()));
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find(absl::StrCat("not a socket of uid ", ::getuid() + 1001)), std::string::npos) << s;
  fs::remove_all(root);
}

// The listener that takes a connection to 127.0.0.1:P is the most specifically bound one:
// a job of uid 1001 listening on 127.0.0.2:P, 0.0.0.0:P or [::]:P must not make root's
// 127.0.0.1:P its own (a review found this against the first version of the check).
TEST(JobNetwork, TheListenerThatTakesTheConnectionIsTheOneJudged) {
  char pattern[] = "/tmp/fleetprof_job_network_XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string root = pattern;
  const std::string job = root + "/77";
  fs::create_directories(job + "/net");
  std::ofstream(job + "/status") << "Name:\tjax\nUid:\t1001\t1001\t1001\t1001\n";
  const std::string header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
  // Port 9999 = 0x270F. Rows: local, remote, state, queues, timer, retransmits, uid.
  const auto row = [](const std::string& local, int uid) {
    return absl::StrCat("   0: ", local, ":270F 00000000:0000 0A 00000000:00000000 00:00000000 00000000 ", uid,
                        "        0 12345 1 0000000000000000 100 0 0 10 0\n");
  };
  const std::string v6_any = "00000000000000000000000000000000";
  const std::string v6_loopback = "00000000000000000000000001000000";
  const auto check = [&](const std::string& tcp, const std::string& tcp6, const std::string& address) {
    std::ofstream(job + "/net/tcp") << header << tcp;
    std::ofstream(job + "/net/tcp6") << header << tcp6;
    return CheckJobProfilerAddress(root, 77, address).code();
  };
  using absl::StatusCode;
  // root holds 127.0.0.1:9999; the job holds something broader or elsewhere.
  EXPECT_EQ(check(row("0100007F", 0) + row("0200007F", 1001), "", "127.0.0.1:9999"), StatusCode::kPermissionDenied);
  EXPECT_EQ(check(row("0100007F", 0) + row("00000000", 1001), "", "127.0.0.1:9999"), StatusCode::kPermissionDenied);
  EXPECT_EQ(check(row("0100007F", 0), row(v6_any, 1001), "127.0.0.1:9999"), StatusCode::kPermissionDenied);
  EXPECT_EQ(check("", row(v6_loopback, 0) + row(v6_any, 1001), "[::1]:9999"), StatusCode::kPermissionDenied);
  // The job's own listener is the one taken.
  EXPECT_EQ(check(row("0100007F", 1001), row(v6_any, 0), "127.0.0.1:9999"), StatusCode::kOk);
  EXPECT_EQ(check("", row(v6_any, 1001), "127.0.0.1:9999"), StatusCode::kOk) << "a dual-stack JAX server";
  EXPECT_EQ(check(row("00000000", 1001), "", "localhost:9999"), StatusCode::kOk);
  EXPECT_EQ(check("", row(v6_loopback, 1001), "[::1]:9999"), StatusCode::kOk);
  fs::remove_all(root);
}

}  // namespace
}  // namespace fleetprof
