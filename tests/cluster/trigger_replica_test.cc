// Triggers across cluster replicas (real etcd and s3rver): a device trigger added through
// replica B reaches the agent connected to replica A (A's refresh reads the catalog), the drop
// that agent sees starts one TRIGGERED capture, and both replicas list the trigger as fired.

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/cluster/cluster_engines.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

namespace fs = std::filesystem;

// Pid 4343 of job "train" on the stand-in NVML's device 0 (and nothing of it on device 1).
void WriteFakeProc(const std::string& root) {
  fs::create_directories(root + "/4343");
  std::ofstream(root + "/stat") << "cpu  100 0 50 800 50 0 0 0 0 0\n";
  std::ofstream(root + "/meminfo") << "MemTotal:       1000 kB\nMemAvailable:    400 kB\n";
  std::ofstream(root + "/4343/environ") << "FLEETPROF_JOB=train" << std::string(1, '\0');
  std::ofstream(root + "/4343/status") << "Name:\tpython\nUid:\t1000\t1000\t1000\t1000\n";
  std::ofstream(root + "/4343/stat") << "4343 (python) S 1 1 1 0 -1 0 0 0 0 0 100 20 0 0 20 0 1 0 5000 1000 100\n";
}

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

TEST(TriggerReplicaTest, ATriggerAddedOnOneReplicaFiresFromAnAgentOnAnother) {
  FLEETPROF_REQUIRE_CLUSTER_ENGINES();
  EtcdCluster etcd;
  S3rver s3;
  ASSERT_TRUE(etcd.Start(1)) << etcd.Log(0);
  ASSERT_TRUE(s3.Start());
  const std::string credentials = s3.root() + "/credentials";
  std::ofstream(credentials) << "[default]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n";
  const std::vector<std::string> flags = {"--object_store=s3://" + s3.bucket() + "/cluster",
                                          "--s3_endpoint=" + s3.endpoint(), "--s3_credentials_file=" + credentials,
                                          "--etcd_endpoints=" + etcd.Endpoints(), "--etcd_prefix=/cluster/"};
  TestCluster a, b;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", flags)) << a.ServerLog();
  ASSERT_TRUE(b.StartServer("127.0.0.1:0", flags)) << b.ServerLog();
  const std::string proc = a.root() + "/proc";
  WriteFakeProc(proc);
  const std::string utilization = a.root() + "/utilization";
  std::ofstream(utilization) << "87\n";
  ::setenv("FAKE_NVML_UTILIZATION_FILE", utilization.c_str(), 1);
  const int agent = a.StartAgent({"--node=gpu-a", std::string("--nvml_library=") + FAKE_NVML_PATH,
                                  "--proc_root=" + proc, "--sample_interval_ms=100"});
  ::unsetenv("FAKE_NVML_UTILIZATION_FILE");
  ASSERT_GE(agent, 0);
  ASSERT_TRUE(Eventually(30, [&] {
    return b.Cli({"agents", "--json"}).out.find("\"node\":\"gpu-a\"") != std::string::npos;
  }));

  CommandResult added = b.Cli({"trigger", "add", "--job", "train", "--when", "device_utilization < 30% for 1s",
                               "--cooldown", "1h", "--duration_ms", "200", "--json"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  const std::string id = JsonStringField(added.out, "trigger_id");
  ASSERT_TRUE(Eventually(20, [&] {
    return a.ServerLog().find("device triggers: 1 sent to 1 connected agents") != std::string::npos;
  })) << a.ServerLog();
  std::ofstream(utilization) << "10\n";
  ASSERT_TRUE(Eventually(30,
                         [&] {
                           return b.Cli({"triggers", "--json"}).out.find("\"fired\":1") != std::string::npos;
                         }))
      << a.ServerLog() << a.AgentLog(agent);
  for (TestCluster* replica : {&a, &b}) {
    CommandResult captures = replica->Cli({"captures", "--job", "train", "--json"});
    EXPECT_EQ(CountOf(captures.out, "\"reason\":\"TRIGGERED\""), 1) << captures.out;
    EXPECT_NE(captures.out.find("\"trigger_id\":\"" + id + "\""), std::string::npos) << captures.out;
    EXPECT_NE(captures.out.find("device 0 utilization 10% < 30% for "), std::string::npos) << captures.out;
  }
}

}  // namespace
}  // namespace fleetprof::testing
