#include "tests/cluster/cluster_engines.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {

std::string S3rverPath() {
  const char* env = std::getenv("FLEETPROF_S3RVER");
  return env != nullptr ? std::string(env) : std::string("/opt/fleetprof-test/node_modules/.bin/s3rver");
}

std::string EtcdPath() { return "/usr/bin/etcd"; }

int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t length = sizeof(addr);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

std::vector<int> FreeLoopbackPorts(int n) {
  // Every socket stays bound until all are chosen: the kernel cannot hand out one port twice.
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(addr);
    int port = -1;
    if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0) {
      port = ntohs(addr.sin_port);
    }
    fds.push_back(fd);
    ports.push_back(port);
  }
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  return ports;
}

namespace {

// etcd fsyncs every commit: on tmpfs that costs nothing, which a 2-core test machine needs.
std::string FastTempDir() {
  if (std::filesystem::is_directory("/dev/shm")) {
    char pattern[] = "/dev/shm/fleetprof-etcd-XXXXXX";
    if (::mkdtemp(pattern) != nullptr) return pattern;
  }
  return MakeTempDir();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

EtcdCluster::~EtcdCluster() {
  members_.clear();  // SIGKILLs
  if (!root_.empty()) std::filesystem::remove_all(root_);
}

void EtcdCluster::Launch(int member, bool fresh) {
  std::vector<std::string> initial;
  for (size_t i = 0; i < peer_ports_.size(); ++i) {
    initial.push_back(absl::StrCat("m", i, "=http://127.0.0.1:", peer_ports_[i]));
  }
  const std::string client = absl::StrCat(tls_flags_.empty() ? "http" : "https", "://127.0.0.1:", client_ports_[member]);
  const std::string peer = absl::StrCat("http://127.0.0.1:", peer_ports_[member]);
  std::vector<std::string> argv = {
      EtcdPath(), absl::StrCat("--name=m", member), absl::StrCat("--data-dir=", root_, "/m", member),
      "--listen-client-urls=" + client, "--advertise-client-urls=" + client, "--listen-peer-urls=" + peer,
      "--initial-advertise-peer-urls=" + peer, "--initial-cluster=" + absl::StrJoin(initial, ","),
      absl::StrCat("--initial-cluster-state=", fresh ? "new" : "existing"),
      "--initial-cluster-token=" + root_, "--log-level=warn",
      // Elections quick enough for tests on a loaded 2-core machine, not so quick that a busy
      // moment starts one.
      "--heartbeat-interval=100", "--election-timeout=1000"};
  if (!tls_flags_.empty()) {
    argv.insert(argv.end(), tls_flags_.begin(), tls_flags_.end());
    argv.push_back(absl::StrCat("--listen-metrics-urls=http://127.0.0.1:", metrics_ports_[member]));
  }
  members_[member] = std::make_unique<ChildProcess>();
  members_[member]->Start(argv, absl::StrCat(root_, "/m", member, ".log"));
}

bool EtcdCluster::Start(int members) {
  // A port chosen free may be taken by another test's process before etcd binds it: then the
  // whole cluster starts again on other ports (its logs say so).
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt > 0) {
      members_.clear();  // SIGKILLs
      std::filesystem::remove_all(root_);
    }
    root_ = FastTempDir();
    const std::vector<int> ports = FreeLoopbackPorts(3 * members);
    client_ports_.assign(ports.begin(), ports.begin() + members);
    peer_ports_.assign(ports.begin() + members, ports.begin() + 2 * members);
    metrics_ports_.assign(ports.begin() + 2 * members, ports.end());
    members_.clear();
    members_.resize(members);
    for (int i = 0; i < members; ++i) Launch(i, true);
    bool healthy = true;
    for (int i = 0; i < members && healthy; ++i) healthy = WaitHealthy(i, 30);
    if (healthy) return true;
  }
  return false;
}

void EtcdCluster::UseTls(const std::string& ca_file, const std::string& cert_file, const std::string& key_file) {
  tls_flags_ = {"--cert-file=" + cert_file, "--key-file=" + key_file, "--trusted-ca-file=" + ca_file,
                "--client-cert-auth"};
}

bool EtcdCluster::WaitHealthy(int member, double timeout_s) {
  const std::string address =
      absl::StrCat("127.0.0.1:", tls_flags_.empty() ? client_ports_[member] : metrics_ports_[member]);
  return Eventually(timeout_s, [&] { return HttpGet(address, "/health").find("\"true\"") != std::string::npos; });
}

std::string EtcdCluster::Endpoints() const { return absl::StrJoin(EndpointList(), ","); }

std::vector<std::string> EtcdCluster::EndpointList() const {
  std::vector<std::string> out;
  for (int port : client_ports_) out.push_back(absl::StrCat(tls_flags_.empty() ? "http" : "https", "://127.0.0.1:", port));
  return out;
}

void EtcdCluster::Kill(int member) { members_[member].reset(); }

bool EtcdCluster::Restart(int member) {
  Launch(member, false);
  return WaitHealthy(member, 30);
}

std::string EtcdCluster::Log(int member) const { return ReadFile(absl::StrCat(root_, "/m", member, ".log")); }

S3rver::~S3rver() {
  process_.reset();
  if (!root_.empty()) std::filesystem::remove_all(root_);
}

bool S3rver::Start(const std::string& bucket) {
  root_ = MakeTempDir();
  bucket_ = bucket;
  const int port = FreeLoopbackPort();
  endpoint_ = absl::StrCat("http://127.0.0.1:", port);
  process_ = std::make_unique<ChildProcess>();
  process_->Start({S3rverPath(), "-d", root_ + "/data", "-a", "127.0.0.1", "-p", std::to_string(port),
                   "--configure-bucket", bucket},
                  root_ + "/s3rver.log",
                  // s3rver's continuation tokens use DES, which Node's OpenSSL 3 keeps in its
                  // legacy provider: without it every listing past 1,000 keys fails with a 500.
                  {"NODE_OPTIONS=--openssl-legacy-provider"});
  return Eventually(30, [&] { return ReadFile(root_ + "/s3rver.log").find("listening") != std::string::npos; });
}

int64_t S3rver::DiskBytes() const {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root_ + "/data", ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return total;
}

}  // namespace fleetprof::testing
