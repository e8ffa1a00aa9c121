#pragma once
// The cluster's real engines for tests, started as child processes on free loopback ports:
// etcd (Debian's etcd-server; one member or several) and s3rver (npm), with their data in a
// temporary folder (etcd's on tmpfs when there is one). Missing binaries skip the test, or fail
// it under CI=true.

#include <memory>
#include <string>
#include <vector>

#include "tests/e2e/process_runner.h"

namespace fleetprof::testing {

// The s3rver launcher: $FLEETPROF_S3RVER, else where scripts/install-deps.sh puts it.
std::string S3rverPath();
std::string EtcdPath();
// A loopback port free at the moment of the call.
int FreeLoopbackPort();
// `n` distinct free loopback ports (all held while choosing).
std::vector<int> FreeLoopbackPorts(int n);

class EtcdCluster {
 public:
  ~EtcdCluster();
  // Before Start: clients reach the members over TLS only, with certificates signed by the CA
  // `ca_file` (the server's certificate for 127.0.0.1), and must show one of its own
  // (--client-cert-auth). Health is then read from a plain-HTTP metrics port.
  void UseTls(const std::string& ca_file, const std::string& cert_file, const std::string& key_file);
  // Starts `members` members and waits until each says it is healthy; false with the reason in
  // the log when they do not within 30 s.
  bool Start(int members);
  // "http(s)://127.0.0.1:P,…" for --etcd_endpoints.
  std::string Endpoints() const;
  std::vector<std::string> EndpointList() const;
  void Kill(int member);      // SIGKILL
  bool Restart(int member);   // same name, data and ports; waits for it to serve
  std::string Log(int member) const;

 private:
  bool WaitHealthy(int member, double timeout_s);
  void Launch(int member, bool fresh);
  std::string root_;
  std::vector<int> client_ports_;
  std::vector<int> peer_ports_;
  std::vector<int> metrics_ports_;  // TLS only: where /health answers in plain HTTP
  std::vector<std::string> tls_flags_;
  std::vector<std::unique_ptr<ChildProcess>> members_;
};

class S3rver {
 public:
  ~S3rver();
  // Starts s3rver with bucket `bucket` and waits until it listens.
  bool Start(const std::string& bucket = "fleetprof");
  std::string endpoint() const { return endpoint_; }  // http://127.0.0.1:P
  std::string bucket() const { return bucket_; }
  const std::string& root() const { return root_; }
  // Bytes s3rver holds on disk (its objects' files).
  int64_t DiskBytes() const;

 private:
  std::string root_;
  std::string endpoint_;
  std::string bucket_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace fleetprof::testing

// Skips (or fails under CI=true) when etcd or s3rver is not installed.
#define FLEETPROF_REQUIRE_CLUSTER_ENGINES()                      \
  do {                                                           \
    FLEETPROF_REQUIRE_PATH(::fleetprof::testing::EtcdPath());    \
    FLEETPROF_REQUIRE_PATH(::fleetprof::testing::S3rverPath());  \
  } while (0)
