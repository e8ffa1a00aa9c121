// The datagram layer at its edges: the real abstract "\0dynolog\0" address, and datagrams
// that are not what libkineto sends.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <optional>
#include <set>
#include <thread>

#include "collectors/kineto_endpoint.h"
#include "collectors/kineto_ipc.h"
#include "gtest/gtest.h"
#include "tests/kineto/kineto_test_env.h"

namespace fleetprof {
namespace {

using namespace std::chrono_literals;
using ::fleetprof::testing::CountOccurrences;
using ::fleetprof::testing::kPython;
using ::fleetprof::testing::StartKinetoStandin;
using ::fleetprof::testing::TempDir;

bool WaitUntilRegistered(const KinetoEndpoint& endpoint, int32_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (std::chrono::steady_clock::now() < deadline) {
    for (const KinetoProcess& process : endpoint.Processes()) {
      if (process.pid == pid) return true;
    }
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

TEST(KinetoAbstractAddress, StandinReachesEndpointOnDynologAbstractName) {
  FLEETPROF_REQUIRE_PATH(kPython);
  TempDir dir;
  auto endpoint = std::make_unique<KinetoEndpoint>(KinetoEndpoint::Options{});
  absl::Status started = endpoint->Start();
  std::string socket_dir;  // "": the stand-in talks to the abstract name too
  if (started.ok()) {
    EXPECT_EQ(endpoint->address(), "abstract \"\\0dynolog\\0\"");
    // Only one daemon per network namespace can hold the name.
    KinetoEndpoint second(KinetoEndpoint::Options{});
    absl::Status again = second.Start();
    EXPECT_TRUE(absl::IsAlreadyExists(again)) << again;
    EXPECT_NE(again.message().find("abstract \"\\0dynolog\\0\""), absl::string_view::npos)
        << again;
  } else {
    // Someone else (a dynolog, an agent) holds the name on this host: that refusal is the
    // behaviour under test for the second daemon; the exchange then runs on a socket file.
    ASSERT_TRUE(absl::IsAlreadyExists(started)) << started;
    EXPECT_NE(started.message().find("abstract \"\\0dynolog\\0\""), absl::string_view::npos)
        << started;
    std::cout << "NOTE: " << started.message()
              << "; falling back to a filesystem socket in " << dir.path()
              << " for the stand-in exchange" << std::endl;
    KinetoEndpoint::Options options;
    options.socket_dir = socket_dir = dir.path();
    endpoint = std::make_unique<KinetoEndpoint>(options);
    ASSERT_TRUE(endpoint->Start().ok());
  }

  auto standin = StartKinetoStandin(socket_dir, dir.path(), "abstract");
  ASSERT_TRUE(WaitUntilRegistered(*endpoint, standin->pid())) << standin->Output();
  KinetoTraceRequest request;
  request.log_file = dir.path() + "/abstract.json";
  request.duration_ms = 50;
  EXPECT_EQ(endpoint->Trigger({standin->pid()}, 0, request, 1)
                .triggered.size(),
            1u);
  ASSERT_TRUE(standin->WaitForOutput("\"event\": \"wrote\"", 15s)) << standin->Output();
  EXPECT_TRUE(::fleetprof::testing::PathExists(
      KinetoTracePath(request.log_file, standin->pid())));
}

// A datagram socket of our own with an abstract name, so the endpoint can answer it.
class RawClient {
 public:
  explicit RawClient(const std::string& daemon_path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un self{};
    self.sun_family = AF_UNIX;
    const std::string name = "fleetprof-garbage-" + std::to_string(::getpid());
    std::memcpy(self.sun_path + 1, name.data(), name.size());
    ::bind(fd_, reinterpret_cast<sockaddr*>(&self),
           static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size()));
    daemon_.sun_family = AF_UNIX;
    std::memcpy(daemon_.sun_path, daemon_path.c_str(), daemon_path.size() + 1);
    timeval timeout{2, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  }
  ~RawClient() { ::close(fd_); }

  bool Send(const std::string& bytes) {
    return ::sendto(fd_, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&daemon_),
                    sizeof(daemon_)) == static_cast<ssize_t>(bytes.size());
  }
  std::optional<std::string> Receive() {
    std::string buffer(1 << 16, '\0');
    const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
    if (n < 0) return std::nullopt;
    buffer.resize(static_cast<size_t>(n));
    return buffer;
  }

 private:
  int fd_ = -1;
  sockaddr_un daemon_{};
};

std::string Message(uint64_t size, const std::string& type, const std::string& payload) {
  std::string bytes(40, '\0');
  std::memcpy(bytes.data(), &size, 8);
  std::memcpy(bytes.data() + 8, type.data(), std::min<size_t>(type.size(), 32));
  return bytes + payload;
}

std::string Ints(std::initializer_list<int32_t> values, int64_t job_id_after_two = 0) {
  std::string out;
  int i = 0;
  for (int32_t v : values) {
    out.append(reinterpret_cast<const char*>(&v), 4);
    if (++i == 2) out.append(reinterpret_cast<const char*>(&job_id_after_two), 8);
  }
  return out;
}

TEST(KinetoDatagrams, MalformedDatagramsAreDroppedAndServiceContinues) {
  FLEETPROF_REQUIRE_PATH(kPython);
  TempDir dir;
  KinetoEndpoint::Options options;
  options.socket_dir = dir.path();
  KinetoEndpoint endpoint(options);
  ASSERT_TRUE(endpoint.Start().ok());

  RawClient client(dir.path() + "/dynolog");
  const std::string valid_poll = Ints({2, 1, 4242});  // type 2, n 1, job 0, pids {4242}
  const std::vector<std::string> garbage = {
      "",                                                 // empty datagram
      "short",                                            // shorter than the header
      Message(1ull << 63, "req", ""),                     // absurd size
      Message(100, "req", std::string(10, 'x')),          // fewer bytes than announced
      Message(4, "req", valid_poll),                      // more bytes than announced
      Message(70000, "req", std::string(70000, 'x')),     // over the payload cap
      Message(20, "req", Ints({2, 2, 4242})),             // n = 2 but one pid
      Message(16, "req", Ints({2, -5})),                  // negative n
      Message(16, "req", Ints({2, 0})),                   // no pids
      Message(3, "ctxt", "abc"),                          // short ctxt
      Message(valid_poll.size(), "bogus", valid_poll),    // unknown type
      Message(valid_poll.size(), std::string(32, 'A'), valid_poll),  // type without NUL
  };
  for (const std::string& datagram : garbage) ASSERT_TRUE(client.Send(datagram));

  // A well-formed poll from a socket without an address cannot be answered: no crash.
  {
    int unnamed = ::socket(AF_UNIX, SOCK_DGRAM, 0);
    sockaddr_un daemon{};
    daemon.sun_family = AF_UNIX;
    const std::string path = dir.path() + "/dynolog";
    std::memcpy(daemon.sun_path, path.c_str(), path.size() + 1);
    const std::string poll = Message(valid_poll.size(), "req", Ints({2, 1, 31337}));
    ::sendto(unnamed, poll.data(), poll.size(), 0, reinterpret_cast<sockaddr*>(&daemon),
             sizeof(daemon));
    ::close(unnamed);
  }

  // The legacy "ctxt" message is answered with an int32 count of registered processes.
  int32_t gpu = 1, pid = 555;
  ASSERT_TRUE(client.Send(Message(16, "ctxt", Ints({gpu, pid}, 7))));
  std::optional<std::string> reply = client.Receive();
  ASSERT_TRUE(reply.has_value()) << "no ctxt reply";
  ASSERT_EQ(reply->size(), 44u);
  uint64_t size = 0;
  std::memcpy(&size, reply->data(), 8);
  EXPECT_EQ(size, 4u);
  EXPECT_EQ(std::string(reply->c_str() + 8), "ctxt");
  int32_t count = 0;
  std::memcpy(&count, reply->data() + 40, 4);
  EXPECT_EQ(count, 1);

  // Still serving real clients, and none of the garbage registered a process.
  auto standin = StartKinetoStandin(dir.path(), dir.path(), "after-garbage");
  const int32_t standin_pid = standin->pid();
  ASSERT_TRUE(WaitUntilRegistered(endpoint, standin_pid)) << standin->Output();
  KinetoTraceRequest request;
  request.duration_ms = 10;
  endpoint.Trigger({standin_pid}, 0, request, 0);
  ASSERT_TRUE(standin->WaitForOutput("\"event\": \"config\"", 15s)) << standin->Output();
  EXPECT_EQ(standin->Stop(), 0);
  EXPECT_EQ(CountOccurrences(standin->Output(), "\"bad_reply\""), 0) << standin->Output();
  std::set<int32_t> registered;
  for (const KinetoProcess& process : endpoint.Processes()) registered.insert(process.pid);
  // The unnamed poll claimed pid 31337 from this test's process: the kernel's credentials
  // contradict it, so it registered nothing.
  EXPECT_EQ(registered, (std::set<int32_t>{standin_pid}));
}

}  // namespace
}  // namespace fleetprof
