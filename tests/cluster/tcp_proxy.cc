#include "tests/cluster/tcp_proxy.h"

#include <sys/socket.h>
#include <unistd.h>

#include <string_view>

#include "absl/strings/str_cat.h"
#include "tests/loopback_socket.h"

namespace fleetprof::testing {
namespace {

void Reset(int fd) {
  struct linger hard = {1, 0};  // RST: the peer sees a reset, not an orderly close
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
  ::shutdown(fd, SHUT_RDWR);
}

}  // namespace

TcpProxy::TcpProxy(int upstream_port) : upstream_port_(upstream_port) {
  listener_ = ListenOnLoopback(&port_);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

TcpProxy::~TcpProxy() {
  stopping_ = true;
  ::shutdown(listener_, SHUT_RDWR);
  acceptor_.join();
  ::close(listener_);
  std::vector<std::thread> pumps;
  {
    absl::MutexLock lock(&mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    pumps.swap(pumps_);
  }
  for (auto& t : pumps) t.join();
  absl::MutexLock lock(&mu_);
  for (int fd : fds_) ::close(fd);
}

std::string TcpProxy::address() const { return absl::StrCat("127.0.0.1:", port_); }

void TcpProxy::Cut() {
  cut_ = true;
  absl::MutexLock lock(&mu_);
  for (int fd : fds_) Reset(fd);
}

void TcpProxy::LoseRepliesAfter(std::string pattern) {
  absl::MutexLock lock(&mu_);
  lose_after_ = std::move(pattern);
}

void TcpProxy::Restore() {
  const bool was_silent = silent_.exchange(false);
  if (losing_.exchange(false) || was_silent) {
    absl::MutexLock lock(&mu_);
    for (int fd : fds_) Reset(fd);  // their HTTP/2 streams lost bytes: start over
  }
  {
    absl::MutexLock lock(&mu_);
    lose_after_.clear();
  }
  cut_ = false;
}

void TcpProxy::AcceptLoop() {
  while (!stopping_) {
    int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    if (cut_) {
      Reset(client);
      ::close(client);
      continue;
    }
    int upstream = ConnectToLoopback(upstream_port_);
    if (upstream < 0) {
      ::close(client);
      continue;
    }
    absl::MutexLock lock(&mu_);
    fds_.push_back(client);
    fds_.push_back(upstream);
    pumps_.emplace_back([this, client, upstream] { Pump(client, upstream, false); });
    pumps_.emplace_back([this, client, upstream] { Pump(upstream, client, true); });
  }
}

// Copies one direction until either side closes; then ends both (the fds are closed at the end).
void TcpProxy::Pump(int from, int to, bool replies) {
  char buf[65536];
  while (true) {
    ssize_t n = ::read(from, buf, sizeof(buf));
    if (n <= 0 || cut_) break;
    if (!replies && !losing_) {
      absl::MutexLock lock(&mu_);
      if (!lose_after_.empty() &&
          std::string_view(buf, static_cast<size_t>(n)).find(lose_after_) != std::string_view::npos) {
        losing_ = true;
      }
    }
    if ((replies && losing_) || silent_) continue;  // read, never delivered
    for (ssize_t sent = 0; sent < n;) {
      ssize_t m = ::send(to, buf + sent, static_cast<size_t>(n - sent), MSG_NOSIGNAL);
      if (m <= 0) {
        ::shutdown(from, SHUT_RDWR);
        return;
      }
      sent += m;
    }
  }
  ::shutdown(to, SHUT_RDWR);
  ::shutdown(from, SHUT_RDWR);
}

}  // namespace fleetprof::testing
