// The agent binary against a real server: registration, trace-folder uploads exactly once.

#include <filesystem>
#include <fstream>
#include <iterator>

#include "gtest/gtest.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

namespace fs = std::filesystem;

int CountOccurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(AgentTest, AgentRegistersAndIsListedConnected) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer());
  ASSERT_GE(cluster.StartAgent({"--node=node-a"}), 0);
  EXPECT_TRUE(Eventually(10, [&] {
    return cluster.Cli({"agents", "--json"}).out.find(
               "{\"node\":\"node-a\",\"state\":\"CONNECTED\"") != std::string::npos;
  })) << cluster.Cli({"agents", "--json"}).out;
}

TEST(AgentTest, AgentReconnectsAfterServerRestart) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer());
  ASSERT_GE(cluster.StartAgent({"--node=node-b"}), 0);
  ASSERT_TRUE(Eventually(10, [&] {
    return cluster.Cli({"agents", "--json"}).out.find("CONNECTED") != std::string::npos;
  }));
  const std::string addr = cluster.grpc_addr();
  cluster.StopServer();
  // Same port again, so the agent's dial target is valid after the restart.
  ASSERT_TRUE(cluster.StartServer(addr)) << cluster.ServerLog();
  EXPECT_TRUE(Eventually(15, [&] {
    return cluster.Cli({"agents", "--json"}).out.find("\"state\":\"CONNECTED\"") !=
           std::string::npos;
  })) << cluster.Cli({"agents", "--json"}).out;
}

TEST(AgentTest, TraceDirFileUploadedOnceAcrossAgentRestart) {
  const std::string trace = CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer());
  const std::string dir = cluster.root() + "/traces";
  fs::create_directories(dir + "/llama");
  const std::vector<std::string> flags = {"--node=node-c", "--trace_dir=" + dir,
                                          "--scan_interval_ms=200", "--settle_ms=500",
                                          "--state_dir=" + cluster.root() + "/agent-state"};
  int agent = cluster.StartAgent(flags);
  ASSERT_GE(agent, 0);
  // Written beside, then renamed into place, as profilers do.
  fs::copy_file(trace, dir + "/llama/step100.json.gz.tmp");
  fs::rename(dir + "/llama/step100.json.gz.tmp", dir + "/llama/step100.json.gz");
  const auto dropped = std::chrono::steady_clock::now();
  ASSERT_TRUE(Eventually(10, [&] {
    return cluster.Cli({"profiles", "--job", "llama", "--json"}).out.find("step100.json.gz") !=
           std::string::npos;
  })) << cluster.Cli({"profiles", "--json"}).out;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - dropped).count();
  std::cout << "trace-dir file listed after " << seconds << " s\n";

  cluster.StopAgent(agent);
  ASSERT_GE(cluster.StartAgent(flags), 0);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // several scans of the folder
  CommandResult list = cluster.Cli({"profiles", "--json"});
  EXPECT_EQ(CountOccurrences(list.out, "\"profile_id\""), 1) << list.out;
}

TEST(AgentTest, WithoutNvmlTheAgentRunsAndSaysSoOnce) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer());
  int agent = cluster.StartAgent({"--node=node-d", "--nvml_library=/nonexistent/libnvidia-ml.so.1",
                                  "--sample_interval_ms=200"});
  ASSERT_GE(agent, 0);
  std::string metrics;
  EXPECT_TRUE(Eventually(10, [&] {
    metrics = HttpGet(cluster.agent_metrics_addr(agent), "/metrics");
    return metrics.find("fleetprof_collector_up{collector=\"host\"} 1") != std::string::npos &&
           metrics.find("fleetprof_agent_server_connected{node=\"node-d\"} 1") != std::string::npos;
  })) << metrics;
  EXPECT_NE(metrics.find("fleetprof_collector_up{collector=\"nvml\"} 0"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("fleetprof_host_memory_total_bytes{node=\"node-d\"}"), std::string::npos);
  cluster.StopAgent(agent);
  std::ifstream log(cluster.root() + "/agent0.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_EQ(CountOccurrences(text, "device metrics are off"), 1) << text;
}

TEST(AgentTest, AgentHelpDescribesFlags) {
  CommandResult r = RunCommand({BinDir() + "/fleetprof-agent", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--trace_dir"), std::string::npos);
  EXPECT_NE(r.out.find("--server"), std::string::npos);
}

TEST(AgentTest, UnknownFlagIsRejected) {
  CommandResult r = RunCommand({BinDir() + "/fleetprof-server", "--no_such_flag=1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown flag --no_such_flag"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fleetprof::testing
