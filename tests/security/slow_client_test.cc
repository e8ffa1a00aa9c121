// Issue 21, item 5: clients that connect and then say nothing, or trickle a header one line
// every second (slowloris), or send 20,000 headers, against the real server's HTTP port,
// plain and TLS. On 52e8783 (cpp-httplib, a thread per connection) 16 such connections
// stopped every other request. Now ordinary requests keep being answered while 1,000 are
// open; the latencies are printed (bench/slow_clients.sh measures them properly).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/loopback_socket.h"
#include "tests/e2e/process_runner.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

using Clock = std::chrono::steady_clock;

int PortOf(const std::string& host_port) { return std::stoi(host_port.substr(host_port.rfind(':') + 1)); }

void SendAll(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

// `idle` connections that send nothing and `slow` ones that send a request header one line
// per second, never finishing it (after `first_bytes`: a request line, or 5 bytes of a TLS
// record for a handshake that never completes). Each slow one reconnects when the server
// closes it, so the pressure stays on for as long as the object lives.
class SlowClients {
 public:
  SlowClients(int port, int idle, int slow, std::string first_bytes)
      : port_(port), first_bytes_(std::move(first_bytes)) {
    for (int i = 0; i < idle; ++i) idle_.push_back(ConnectToLoopback(port));
    for (int i = 0; i < slow; ++i) slow_.push_back(OpenSlow());
    thread_ = std::thread([this] { Trickle(); });
  }
  ~SlowClients() {
    stop_ = true;
    thread_.join();
    for (int fd : idle_) ::close(fd);
    for (int fd : slow_) ::close(fd);
  }
  int connected() const {
    return static_cast<int>(std::count_if(idle_.begin(), idle_.end(), [](int fd) { return fd >= 0; }) +
                            std::count_if(slow_.begin(), slow_.end(), [](int fd) { return fd >= 0; }));
  }
  int reconnects() const { return reconnects_.load(); }

 private:
  int OpenSlow() {
    const int fd = ConnectToLoopback(port_);
    if (fd >= 0) SendAll(fd, first_bytes_);
    return fd;
  }
  void Trickle() {
    int line = 0;
    while (!stop_) {
      for (int& fd : slow_) {
        char scratch[4096];
        if (fd >= 0 && ::recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT) == 0) {  // closed by the server
          ::close(fd);
          fd = OpenSlow();
          ++reconnects_;
          continue;
        }
        if (fd >= 0) SendAll(fd, absl::StrCat("X-Slow-", line, ": x\r\n"));
      }
      ++line;
      for (int i = 0; i < 10 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  const int port_;
  const std::string first_bytes_;
  std::vector<int> idle_, slow_;
  std::atomic<bool> stop_{false};
  std::atomic<int> reconnects_{0};
  std::thread thread_;
};

struct Timings {
  std::vector<double> ms;
  int failed = 0;
  double Median() {
    std::sort(ms.begin(), ms.end());
    return ms.empty() ? -1 : ms[ms.size() / 2];
  }
  double Max() { return ms.empty() ? -1 : *std::max_element(ms.begin(), ms.end()); }
};

// `count` requests, each on a new connection; a request not answered within 5 s fails.
template <typename Client>
Timings Measure(int count, Client make_client) {
  Timings timings;
  for (int i = 0; i < count; ++i) {
    auto client = make_client();
    client->set_connection_timeout(5, 0);
    client->set_read_timeout(5, 0);
    const auto start = Clock::now();
    httplib::Result res = client->Get(i % 2 == 0 ? "/healthz" : "/api/v1/profiles");
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (res && res->status == 200) {
      timings.ms.push_back(ms);
    } else {
      ++timings.failed;
    }
  }
  return timings;
}

int64_t RssKb(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

constexpr int kIdle = 500, kSlow = 500;

TEST(SlowClients, AThousandIdleAndSlowConnectionsDoNotStopOrdinaryRequests) {
  ::signal(SIGPIPE, SIG_IGN);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  const int port = PortOf(cluster.http_addr());
  const auto plain = [&] { return std::make_unique<httplib::Client>("127.0.0.1", port); };
  Timings before = Measure(20, plain);
  SlowClients slow(port, kIdle, kSlow, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  ASSERT_EQ(slow.connected(), kIdle + kSlow);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // a few trickled lines on each
  Timings during = Measure(40, plain);
  std::cout << "plain HTTP, 1 request at a time: median " << before.Median() << " ms alone; with " << kIdle
            << " idle + " << kSlow << " slow connections open: median " << during.Median() << " ms, max "
            << during.Max() << " ms" << std::endl;
  EXPECT_EQ(before.failed, 0);
  EXPECT_EQ(during.failed, 0) << "requests went unanswered for 5 s while slow clients were connected";
}

TEST(SlowClients, TlsPortKeepsAnsweringWhileHandshakesStall) {
  ::signal(SIGPIPE, SIG_IGN);
  TestCluster cluster;
  const std::string pki = cluster.root() + "/pki";
  std::filesystem::create_directories(pki);
  CommandResult made = RunCommand(
      {"/bin/sh", "-c",
       "set -e; cd '" + pki + "'; printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext; "
       "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=ca 2>/dev/null; "
       "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null; "
       "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 "
       "-extfile san.ext 2>/dev/null"},
      120);
  FLEETPROF_REQUIRE(made.exit_code == 0, "openssl, to make test certificates: " << made.err);
  ASSERT_TRUE(cluster.StartServer("127.0.0.1:0", {"--tls_cert=" + pki + "/server.pem", "--tls_key=" + pki + "/server.key"}))
      << cluster.ServerLog();
  const int port = PortOf(cluster.http_addr());
  const auto tls = [&] {
    auto client = std::make_unique<httplib::SSLClient>("127.0.0.1", port);
    client->set_ca_cert_path((pki + "/ca.pem").c_str());
    client->enable_server_certificate_verification(true);
    return client;
  };
  Timings before = Measure(10, tls);
  // A TLS record header (handshake, TLS 1.0 framing, 512 bytes to come) and then nothing
  // but the trickle: a handshake that never completes.
  SlowClients slow(port, kIdle, kSlow, std::string("\x16\x03\x01\x02\x00", 5));
  ASSERT_EQ(slow.connected(), kIdle + kSlow);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  Timings during = Measure(20, tls);
  std::cout << "HTTPS, 1 request at a time: median " << before.Median() << " ms alone; with " << kIdle
            << " bare TCP + " << kSlow << " stalled handshakes: median " << during.Median() << " ms, max "
            << during.Max() << " ms" << std::endl;
  EXPECT_EQ(before.failed, 0);
  EXPECT_EQ(during.failed, 0) << "HTTPS requests went unanswered for 5 s while handshakes stalled";
}

TEST(SlowClients, TwentyThousandHeadersAreRefusedWithBoundedMemory) {
  ::signal(SIGPIPE, SIG_IGN);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  const int port = PortOf(cluster.http_addr());
  const int64_t rss_before = RssKb(cluster.server_pid());
  std::vector<std::thread> senders;
  std::atomic<int> refused{0};
  for (int c = 0; c < 2; ++c) {
    senders.emplace_back([&] {
      const int fd = ConnectToLoopback(port);
      std::string request = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n";
      for (int i = 0; i < 20000; ++i) absl::StrAppend(&request, "X-H", i, ": ", std::string(20, 'v'), "\r\n");
      request += "\r\n";
      SendAll(fd, request);  // the server may stop reading and answer early
      timeval timeout{10, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
      char answer[4096];
      const ssize_t n = ::recv(fd, answer, sizeof(answer), 0);
      if (n > 0 && std::string(answer, n).rfind("HTTP/1.1 431", 0) == 0) ++refused;
      ::close(fd);
    });
  }
  for (auto& t : senders) t.join();
  const int64_t rss_after = RssKb(cluster.server_pid());
  std::cout << "2 x 20,000 headers: server RSS " << rss_before / 1024 << " MB -> " << rss_after / 1024 << " MB, "
            << refused.load() << " answered 431" << std::endl;
  EXPECT_EQ(refused.load(), 2);
  EXPECT_LT(rss_after - rss_before, 32 * 1024) << "header memory must stay bounded (was +468 MB on 52e8783)";
  EXPECT_EQ(HttpGet(cluster.http_addr(), "/healthz"), "ok\n");
}

TEST(SlowClients, AtTheConnectionCapTheLongestIdleIsShedNotTheNewcomer) {
  ::signal(SIGPIPE, SIG_IGN);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer("127.0.0.1:0", {"--http_max_connections=40"})) << cluster.ServerLog();
  const int port = PortOf(cluster.http_addr());
  std::vector<int> idle;
  for (int i = 0; i < 40; ++i) {
    idle.push_back(ConnectToLoopback(port));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // an order of age
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(HttpGet(cluster.http_addr(), "/healthz"), "ok\n") << "the newcomer is served";
  // The oldest idle connection was closed for it: reading it now says end of stream.
  pollfd first{idle.front(), POLLIN, 0};
  ASSERT_EQ(::poll(&first, 1, 3000), 1);
  char byte;
  EXPECT_EQ(::recv(idle.front(), &byte, 1, 0), 0);
  pollfd last{idle.back(), POLLIN, 0};
  EXPECT_EQ(::poll(&last, 1, 0), 0) << "the youngest idle one is still open";
  for (int fd : idle) ::close(fd);
}

}  // namespace
}  // namespace fleetprof::testing
