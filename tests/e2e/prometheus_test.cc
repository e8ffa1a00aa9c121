// A real Prometheus scrapes the agent (fed by the stand-in NVML library) and the server; the
// numbers that come back through PromQL must be the stand-in's script, in base units.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

namespace fs = std::filesystem;
constexpr char kMiB10240[] = "10737418240";  // device 0 memory used: 10240 MiB

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '_' || c == '.' || c == '-') {
      out.push_back(static_cast<char>(c));
    } else {
      out += absl::StrCat("%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return out;
}

// The processes the stand-in NVML reports: 4242 and 4343 belong to job "train", both of uid 1000
// (the agent counts a job's numbers only for the uid that holds its name).
void WriteFakeProc(const std::string& root) {
  fs::create_directories(root);
  std::ofstream(root + "/stat") << "cpu  100 0 50 800 50 0 0 0 0 0\n";
  std::ofstream(root + "/meminfo") << "MemTotal:       1000 kB\nMemAvailable:    400 kB\n";
  for (const char* pid : {"4242", "4343"}) {
    fs::create_directories(root + "/" + pid);
    std::ofstream(root + "/" + pid + "/environ") << std::string("FLEETPROF_JOB=train\0", 20);
    std::ofstream(root + "/" + pid + "/status") << "Name:\tpython\nUid:\t1000\t1000\t1000\t1000\n";
    std::ofstream(root + "/" + pid + "/stat")
        << pid << " (python) S 1 1 1 0 -1 0 0 0 0 0 100 20 0 0 20 0 1 0 5000 1000 100\n";
  }
}

std::string PromtoolCheck(const std::string& exposition, const std::string& dir) {
  const std::string path = dir + "/exposition.txt";
  std::ofstream(path) << exposition;
  CommandResult r = RunCommand({"/bin/sh", "-c", "/usr/bin/promtool check metrics < '" + path + "' 2>&1"});
  return absl::StrCat("exit ", r.exit_code, ": ", r.out, r.err);
}

TEST(PrometheusTest, RealPrometheusScrapesExactDeviceMemoryAndJobSum) {
  FLEETPROF_REQUIRE_PATH("/usr/bin/prometheus");
  FLEETPROF_REQUIRE_PATH("/usr/bin/promtool");
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer());
  const std::string proc = cluster.root() + "/proc";
  WriteFakeProc(proc);
  int agent = cluster.StartAgent({"--node=gpu-node", std::string("--nvml_library=") + FAKE_NVML_PATH,
                                  "--proc_root=" + proc, "--sample_interval_ms=200"});
  ASSERT_GE(agent, 0);
  const std::string agent_metrics = cluster.agent_metrics_addr(agent);
  ASSERT_TRUE(Eventually(10, [&] {
    return HttpGet(agent_metrics, "/metrics").find("fleetprof_device_memory_used_bytes") != std::string::npos &&
           HttpGet(cluster.http_addr(), "/metrics").find("fleetprof_fleet_device_memory_used_bytes") != std::string::npos;
  })) << HttpGet(agent_metrics, "/metrics");

  EXPECT_EQ(PromtoolCheck(HttpGet(agent_metrics, "/metrics"), cluster.root()), "exit 0: ");
  EXPECT_EQ(PromtoolCheck(HttpGet(cluster.http_addr(), "/metrics"), cluster.root()), "exit 0: ");

  const int port = FreePort();
  const std::string config = cluster.root() + "/prometheus.yml";
  std::ofstream(config) << "global:\n  scrape_interval: 1s\n"
                        << "scrape_configs:\n"
                        // fleetprof's own `job` label names the ML job: keep it (docs/operating.md).
                        << "  - job_name: agent\n    honor_labels: true\n"
                        << "    static_configs:\n      - targets: ['" << agent_metrics << "']\n"
                        << "  - job_name: server\n    honor_labels: true\n"
                        << "    static_configs:\n      - targets: ['" << cluster.http_addr() << "']\n";
  ChildProcess prometheus;
  prometheus.Start({"/usr/bin/prometheus", "--config.file=" + config,
                    "--storage.tsdb.path=" + cluster.root() + "/tsdb",
                    absl::StrCat("--web.listen-address=127.0.0.1:", port)},
                   cluster.root() + "/prometheus.log");
  const std::string api = absl::StrCat("127.0.0.1:", port);
  auto query = [&](const std::string& promql) {
    return HttpGet(api, "/api/v1/query?query=" + UrlEncode(promql));
  };
  auto eventually_equals = [&](const std::string& promql, const std::string& value) {
    std::string last;
    bool ok = Eventually(30, [&] {
      last = query(promql);
      return last.find(absl::StrCat("\"", value, "\"]")) != std::string::npos;
    });
    EXPECT_TRUE(ok) << promql << " -> " << last;
  };
  eventually_equals("fleetprof_device_memory_used_bytes{node=\"gpu-node\",device=\"0\"}", kMiB10240);
  // Job attribution: 6144 + 3072 MiB on device 0 and 1024 MiB on device 1, all job "train".
  eventually_equals("sum(fleetprof_job_device_memory_used_bytes{job=\"train\"})", kMiB10240);
  // The server's fleet view, forwarded over the agent link.
  eventually_equals("fleetprof_fleet_device_memory_used_bytes{job=\"server\",node=\"gpu-node\",device=\"0\"}",
                    kMiB10240);
  eventually_equals("fleetprof_device_utilization_ratio{device=\"0\"}", "0.87");
  prometheus.Stop();
}

}  // namespace
}  // namespace fleetprof::testing
