#include "tests/cluster/fault_proxy.h"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/loopback_socket.h"

namespace fleetprof::testing {
namespace {

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// The Content-Length of a header block, or 0.
int64_t ContentLength(std::string_view head) {
  for (absl::string_view line : absl::StrSplit(absl::string_view(head.data(), head.size()), "\r\n")) {
    if (absl::StartsWithIgnoreCase(line, "content-length:")) {
      int64_t n = 0;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(15)), &n)) return n;
    }
  }
  return 0;
}

// Reads one request (head and Content-Length body) from `fd`, keeping leftovers in `buffer`.
bool ReadRequest(int fd, std::string* buffer, std::string* request) {
  char chunk[65536];
  size_t end;
  while ((end = buffer->find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n <= 0) return false;
    buffer->append(chunk, static_cast<size_t>(n));
  }
  const size_t total = end + 4 + static_cast<size_t>(ContentLength(std::string_view(*buffer).substr(0, end + 4)));
  while (buffer->size() < total) {
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n <= 0) return false;
    buffer->append(chunk, static_cast<size_t>(n));
  }
  *request = buffer->substr(0, total);
  buffer->erase(0, total);
  return true;
}

// Sends `request` upstream with "Connection: close" and returns the whole answer.
std::string Forward(int upstream_port, std::string request) {
  const size_t head_end = request.find("\r\n\r\n");
  request.insert(head_end, "\r\nConnection: close");
  int fd = ConnectToLoopback(upstream_port);
  if (fd < 0) return "";
  std::string answer;
  if (WriteAll(fd, request)) {
    char chunk[65536];
    ssize_t n;
    while ((n = ::read(fd, chunk, sizeof(chunk))) > 0) answer.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return answer;
}

}  // namespace

FaultProxy::FaultProxy(int upstream_port, std::function<Fault(int64_t)> policy)
    : upstream_port_(upstream_port), policy_(std::move(policy)) {
  listener_ = ListenOnLoopback(&port_);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

FaultProxy::~FaultProxy() {
  stopping_ = true;
  ::shutdown(listener_, SHUT_RDWR);
  acceptor_.join();
  ::close(listener_);
  std::vector<std::thread> connections;
  {
    absl::MutexLock lock(&mu_);
    for (int fd : client_fds_) ::shutdown(fd, SHUT_RDWR);
    connections.swap(connections_);
  }
  for (auto& t : connections) t.join();
}

std::string FaultProxy::endpoint() const { return absl::StrCat("http://127.0.0.1:", port_); }

void FaultProxy::AcceptLoop() {
  while (!stopping_) {
    int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      ::close(client);
      return;
    }
    client_fds_.push_back(client);
    connections_.emplace_back([this, client] { Serve(client); });
  }
}

void FaultProxy::Serve(int client) {
  std::string buffer, request;
  while (!stopping_ && ReadRequest(client, &buffer, &request)) {
    const Fault fault = policy_(requests_.fetch_add(1));
    if (fault != Fault::kNone) faults_.fetch_add(1);
    if (fault == Fault::kReset) {
      struct linger hard = {1, 0};  // RST, not FIN
      ::setsockopt(client, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
      break;
    }
    if (fault == Fault::kServiceUnavailable) {
      const std::string body = "<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
      if (!WriteAll(client, absl::StrCat("HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: ",
                                         body.size(), "\r\n\r\n", body))) {
        break;
      }
      continue;
    }
    std::string answer = Forward(upstream_port_, request);
    if (answer.empty()) break;
    if (fault == Fault::kSlow) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    if (fault == Fault::kTruncatedBody) {
      const size_t head_end = answer.find("\r\n\r\n") + 4;
      const size_t body = answer.size() - head_end;
      if (body > 1) {
        // Half the body, then the connection goes: the client sees fewer bytes than announced.
        WriteAll(client, std::string_view(answer).substr(0, head_end + body / 2));
        break;
      }
    }
    // The upstream's "Connection: close" would end our client's connection too: keep it open.
    size_t at = answer.find("Connection: close\r\n");
    if (at != std::string::npos && at < answer.find("\r\n\r\n")) answer.replace(at, 19, "Connection: keep-alive\r\n");
    if (!WriteAll(client, answer)) break;
  }
  absl::MutexLock lock(&mu_);
  std::erase(client_fds_, client);
  ::close(client);
}

}  // namespace fleetprof::testing
