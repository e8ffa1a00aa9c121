// The endpoint driver as its own process, the way the agent runs the Kineto side: a `dyno`
// request reaches a fake PyTorch process through it, and the trace wait finds the file.
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/kineto/kineto_test_env.h"

namespace fleetprof {
namespace {

using namespace std::chrono_literals;
using ::fleetprof::testing::kPython;
using ::fleetprof::testing::PathExists;
using ::fleetprof::testing::RunDynoStandin;
using ::fleetprof::testing::ScriptProcess;
using ::fleetprof::testing::StartKinetoStandin;
using ::fleetprof::testing::TempDir;

TEST(KinetoEndpointMain, DynoTriggerReachesStandinAndTraceWaitSucceeds) {
  FLEETPROF_REQUIRE_PATH(kPython);
  FLEETPROF_REQUIRE_PATH(std::string(KINETO_ENDPOINT_MAIN));
  TempDir dir;
  const std::string ready = dir.path() + "/ready.json";
  ScriptProcess daemon;
  ASSERT_TRUE(daemon.Start({KINETO_ENDPOINT_MAIN, "--socket_dir", dir.path(), "--dynolog_addr",
                            "127.0.0.1:0", "--ready_file", ready, "--wait_traces_s", "20"},
                           dir.path() + "/daemon.log"));
  for (int i = 0; i < 500 && !PathExists(ready); ++i) std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(PathExists(ready)) << daemon.Output();
  const std::string ready_json = ::fleetprof::testing::ReadSmallFile(ready);
  const size_t port_at = ready_json.find("\"port\":");
  ASSERT_NE(port_at, std::string::npos) << ready_json;
  const int port = std::atoi(ready_json.c_str() + port_at + 7);
  ASSERT_GT(port, 0) << ready_json;

  auto standin = StartKinetoStandin(dir.path(), dir.path(), "job");
  ASSERT_TRUE(daemon.WaitForOutput("Kineto process registered: pid=" +
                                       std::to_string(standin->pid()), 15s))
      << daemon.Output();
  const std::string log_file = dir.path() + "/main.pt.trace.json";
  const std::string reply = RunDynoStandin(
      port, {"gputrace", "--log-file", log_file, "--duration-ms", "100"}, dir.path());
  EXPECT_NE(reply.find("\"activityProfilersTriggered\":[" + std::to_string(standin->pid()) + "]"),
            std::string::npos)
      << reply;
  const std::string trace =
      dir.path() + "/main_" + std::to_string(standin->pid()) + ".pt.trace.json";
  EXPECT_TRUE(daemon.WaitForOutput("trace ready: " + trace, 20s)) << daemon.Output();

  EXPECT_EQ(daemon.Stop(), 0) << daemon.Output();
  EXPECT_FALSE(PathExists(dir.path() + "/dynolog")) << "socket file left behind";
}

}  // namespace
}  // namespace fleetprof
