#pragma once
// An HTTP/1.1 proxy between a client and a real server (s3rver) that injects the faults object
// storage really has: 503 SlowDown, a connection reset before the answer, an answer whose body is
// cut short, and a slow answer. Each request is forwarded on a connection of its own; the fault,
// if any, is chosen per request by the policy.

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace fleetprof::testing {

enum class Fault { kNone, kServiceUnavailable, kReset, kTruncatedBody, kSlow };

class FaultProxy {
 public:
  // Forwards to 127.0.0.1:`upstream_port`; `policy` picks the fault of the n-th request (from 0).
  FaultProxy(int upstream_port, std::function<Fault(int64_t n)> policy);
  ~FaultProxy();
  std::string endpoint() const;  // http://127.0.0.1:P
  int64_t requests() const { return requests_.load(); }
  int64_t faults() const { return faults_.load(); }

 private:
  void AcceptLoop();
  void Serve(int client);

  const int upstream_port_;
  const std::function<Fault(int64_t)> policy_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> faults_{0};
  std::thread acceptor_;
  absl::Mutex mu_;
  std::vector<std::thread> connections_;
  std::vector<int> client_fds_;
};

}  // namespace fleetprof::testing
