#pragma once
// A TCP proxy on loopback that a test can cut: Cut() resets every connection through it and
// resets each new one at once (a replica cut off from etcd), Restore() forwards again. A
// partition without network namespaces, for one link between two processes.
// LoseRepliesAfter(pattern) lets requests through but, from the first client bytes that hold
// `pattern` on (a request of a known kind), drops every byte coming back: the request reaches
// the server and is applied, its reply is lost. Restore() then resets the connections so the
// client starts clean.

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace fleetprof::testing {

class TcpProxy {
 public:
  explicit TcpProxy(int upstream_port);
  ~TcpProxy();
  std::string address() const;  // 127.0.0.1:P
  void Cut();
  void LoseRepliesAfter(std::string pattern);
  // Holds every byte both ways from now on, connections left open: a peer that lost power
  // behind a half-open connection. Restore() resets them.
  void Silence() { silent_ = true; }
  void Restore();
  // Whether LoseRepliesAfter's pattern went by (replies are being dropped).
  bool losing_replies() const { return losing_.load(); }

 private:
  void AcceptLoop();
  void Pump(int from, int to, bool replies);

  const int upstream_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> cut_{false};
  std::atomic<bool> losing_{false};
  std::atomic<bool> silent_{false};
  std::string lose_after_ ABSL_GUARDED_BY(mu_);  // "" when not armed
  std::thread acceptor_;
  absl::Mutex mu_;
  std::vector<int> fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> pumps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fleetprof::testing
