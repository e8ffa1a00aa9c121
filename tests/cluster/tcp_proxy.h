#pragma once
// A TCP proxy on loopback that a test can cut: Cut() resets every connection through it and
// resets each new one at once (a replica cut off from etcd), Restore() forwards again. A
// partition without network namespaces, for one link between two processes.

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
  void Restore() { cut_ = false; }

 private:
  void AcceptLoop();
  void Pump(int from, int to);

  const int upstream_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> cut_{false};
  std::thread acceptor_;
  absl::Mutex mu_;
  std::vector<int> fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> pumps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fleetprof::testing
