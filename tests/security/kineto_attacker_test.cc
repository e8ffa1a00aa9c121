// Issue 39: one local user (uid 1001) against the root agent's PyTorch surfaces — the Kineto
// socket and the dynolog API — run against the real server and agent binaries. Each attack
// degraded every other user of the node at 6780f56; each test shows the other users' jobs
// still captured, listed and private.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/loopback_socket.h"
#include "tests/e2e/process_runner.h"
#include "tests/e2e/test_cluster.h"
#include "tests/security/local_attacker.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

namespace fs = std::filesystem;
const char kPython[] = "/usr/bin/python3";

// How many pids the dynolog reply lists under `key`.
size_t ListedPids(const std::string& reply, const std::string& key) {
  const size_t open = reply.find("\"" + key + "\":[");
  if (open == std::string::npos) return 0;
  const size_t start = open + key.size() + 4, end = reply.find(']', start);
  if (end == std::string::npos || end == start) return 0;
  return Occurrences(reply.substr(start, end - start), ",") + 1;
}

std::string Standin() { return std::string(FLEETPROF_SOURCE_DIR) + "/tests/kineto/kineto_standin.py"; }

// A node with an agent whose Kineto socket folder every user may reach and whose trace
// folder (made by the agent, mode 1733) sits in a folder every user may traverse.
class KinetoAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ROOT();
    FLEETPROF_REQUIRE_PATH(kPython);
    ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
    socket_dir_ = MakeTempDir();
    ::chmod(socket_dir_.c_str(), 01777);
    trace_parent_ = MakeTempDir();
    ::chmod(trace_parent_.c_str(), 0755);
    trace_dir_ = trace_parent_ + "/traces";
    agent_ = cluster_.StartAgent({"--kineto_socket_dir=" + socket_dir_, "--kineto_trace_dir=" + trace_dir_});
    ASSERT_GE(agent_, 0);
  }
  void TearDown() override {
    if (agent_ >= 0) cluster_.StopAgent(agent_);
    if (!socket_dir_.empty()) fs::remove_all(socket_dir_);
    if (!trace_parent_.empty()) fs::remove_all(trace_parent_);
  }

  // Root's PyTorch job `job`, polling every `interval_ms`, listed by the server.
  void StartRootJob(const std::string& job, std::vector<std::string> extra, std::vector<std::string> env = {},
                    const std::string& interval_ms = "1000") {
    std::vector<std::string> argv = {kPython, Standin(), "--socket-dir", socket_dir_, "--interval-ms", interval_ms};
    argv.insert(argv.end(), extra.begin(), extra.end());
    env.push_back("FLEETPROF_JOB=" + job);
    root_job_.Start(argv, cluster_.root() + "/root-job.log", env);
    ASSERT_TRUE(Eventually(20, [&] { return Agents().find("{\"job\":\"" + job + "\",\"kind\":\"kineto\"") != std::string::npos; }))
        << Agents();
  }
  std::string Agents() { return cluster_.Cli({"agents", "--json"}).out; }
  std::string RootJobLog() { return ReadSmallFile(cluster_.root() + "/root-job.log"); }
  std::string Dynolog(const std::string& request) {
    return DynologExchange(ConnectToLoopback(cluster_.agent_dynolog_addr(agent_)), request);
  }

  TestCluster cluster_;
  ChildProcess root_job_;
  std::string socket_dir_, trace_parent_, trace_dir_;
  int agent_ = -1;
};

// Runs in a forked child of the attacker: one Kineto poll of its own pid to the daemon at
// `daemon`, the reply awaited, then exit. Syscalls and stack buffers only (a fork's child).
[[noreturn]] void PollOnceAndExit(const sockaddr_un& daemon, socklen_t daemon_len) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un self{};
  self.sun_family = AF_UNIX;
  char name[64];
  const int n = std::snprintf(name, sizeof(name), "fleetprof-flood-%d", static_cast<int>(::getpid()));
  std::memcpy(self.sun_path + 1, name, n);  // abstract: no file to clean up
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&self), offsetof(sockaddr_un, sun_path) + 1 + n) != 0) {
    ::_exit(2);
  }
  // { uint64 size; char type[32]; } then { int32 type; int32 n; int64 jobid; int32 pids[1]; }
  unsigned char datagram[40 + 20] = {};
  const uint64_t size = 20;
  std::memcpy(datagram, &size, 8);
  std::memcpy(datagram + 8, "req", 3);
  const int32_t type = 2, count = 1, pid = ::getpid();
  const int64_t job_id = 0;
  std::memcpy(datagram + 40, &type, 4);
  std::memcpy(datagram + 44, &count, 4);
  std::memcpy(datagram + 48, &job_id, 8);
  std::memcpy(datagram + 56, &pid, 4);
  ::sendto(fd, datagram, sizeof(datagram), 0, reinterpret_cast<const sockaddr*>(&daemon), daemon_len);
  timeval wait{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
  char reply[256];
  ::recv(fd, reply, sizeof(reply), 0);
  ::_exit(0);
}

// Finding 1: 1,100 short-lived Kineto clients of one uid registered 1,100 targets; past the
// server's hello/target limits the node's stream was refused on every reconnect, so the node
// showed DISCONNECTED and no other job on it could be captured.
TEST_F(KinetoAttackTest, ThousandsOfRegistrationsOfOneUserLeaveTheNodeConnected) {
  StartRootJob("root-job", {"--trace-file", CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz")});
  sockaddr_un daemon{};
  daemon.sun_family = AF_UNIX;
  const std::string daemon_path = socket_dir_ + "/dynolog";
  std::memcpy(daemon.sun_path, daemon_path.c_str(), daemon_path.size() + 1);
  const socklen_t daemon_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + daemon_path.size() + 1);
  constexpr int kClients = 1100;
  const pid_t flooder = RunAsAttacker([&] {
    for (int sent = 0; sent < kClients;) {
      pid_t batch[50];
      int started = 0;
      for (; started < 50 && sent < kClients; ++started, ++sent) {
        batch[started] = ::fork();
        if (batch[started] == 0) PollOnceAndExit(daemon, daemon_len);
      }
      for (int i = 0; i < started; ++i) {
        if (batch[i] > 0) ::waitpid(batch[i], nullptr, 0);
      }
    }
  });
  int status = 0;
  ASSERT_EQ(::waitpid(flooder, &status, 0), flooder);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  // The next heartbeats carry the capped list; the node stays connected throughout.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const std::string agents = Agents();
  std::cout << "after 1,100 registrations of uid 1001: " << Occurrences(agents, "\"kind\":\"kineto\"")
            << " Kineto targets listed\n";
  EXPECT_NE(agents.find("\"state\":\"CONNECTED\""), std::string::npos) << agents.substr(0, 400);
  EXPECT_NE(agents.find("{\"job\":\"root-job\",\"kind\":\"kineto\""), std::string::npos) << agents.substr(0, 400);
  EXPECT_LE(Occurrences(agents, "\"kind\":\"kineto\""), 65u) << "64 of uid 1001 and root's one";
  EXPECT_EQ(cluster_.ServerLog().find("refused"), std::string::npos) << cluster_.ServerLog();
  const std::string agent_log = cluster_.AgentLog(agent_);
  EXPECT_NE(agent_log.find("of uid 1001 to the server"), std::string::npos) << "the agent says whom it left out";
  EXPECT_NE(agent_log.find("(uid 1001) refused: the per-uid cap is reached"), std::string::npos);
  // And root's job is captured.
  CommandResult capture = cluster_.Cli({"capture", "--job", "root-job", "--iterations", "1", "--wait", "--json"}, 120);
  EXPECT_EQ(capture.exit_code, 0) << capture.out << capture.err << RootJobLog();
}

// Finding 2: a user's dynolog request for 32 of its own clients that never write a trace held
// all 32 of the agent's capture workers for 10 minutes. Its waits now count apart (at most 4
// per uid), and another job's capture goes through.
TEST_F(KinetoAttackTest, DynologWaitsOfOneUserDoNotBlockOtherCaptures) {
  StartRootJob("root-job", {"--trace-file", CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz")});
  std::vector<std::unique_ptr<AttackerProcess>> clients;
  for (int i = 0; i < 32; ++i) {
    clients.push_back(std::make_unique<AttackerProcess>(
        std::vector<std::string>{kPython, Standin(), "--socket-dir", socket_dir_, "--interval-ms", "1000",
                                 "--never-write"},
        std::vector<std::string>{"FLEETPROF_JOB=attack-job", "PATH=/usr/bin:/bin"}));
  }
  ASSERT_TRUE(Eventually(30, [&] { return Occurrences(Agents(), "\"job\":\"attack-job\"") == 32; })) << Agents();
  const std::string request = absl::StrCat(
      R"({"fn":"setKinetOnDemandRequest","config":"ACTIVITIES_LOG_FILE=)", trace_dir_,
      R"(/never.json\nACTIVITIES_DURATION_MSECS=100","pids":[0],"process_limit":32})");
  const std::string reply =
      AsAttacker([&] { return DynologExchange(ConnectToLoopback(cluster_.agent_dynolog_addr(agent_)), request); });
  std::cout << "uid 1001's request for its 32 clients: " << reply << std::endl;
  EXPECT_EQ(ListedPids(reply, "activityProfilersTriggered"), 32u) << reply;
  // Its clients take their configs within a poll; then root's job is captured.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  CommandResult capture = cluster_.Cli({"capture", "--job", "root-job", "--duration_ms", "200", "--wait", "--json"}, 120);
  EXPECT_EQ(capture.exit_code, 0) << capture.out << capture.err;
  EXPECT_NE(capture.out.find("\"state\":\"DONE\""), std::string::npos) << capture.out;
  EXPECT_NE(cluster_.AgentLog(agent_).find("dynolog-requested traces in flight"), std::string::npos)
      << "uid 1001's waits past its 4 were refused";
}

// Finding 3: dynolog traces went straight into the shared folder as NAME_<pid>.json; a user
// who made that file first (0666) read the victim's trace. The job writes into its own
// user's private folder now: the planted file stays empty and the trace is indexed.
TEST_F(KinetoAttackTest, APlantedTraceNameReceivesNothingAndTheVictimsTraceIsIndexed) {
  StartRootJob("root-job", {"--trace-file", CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz")}, {}, "200");
  const std::string planted = absl::StrCat(trace_dir_, "/victim_", root_job_.pid(), ".json");
  const pid_t planter = RunAsAttacker([&] {
    const int fd = ::open(planted.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0666);
    if (fd < 0) ::_exit(3);
    ::fchmod(fd, 0666);
    ::close(fd);
  });
  int status = 0;
  ASSERT_EQ(::waitpid(planter, &status, 0), planter);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "uid 1001 may create files in the 1733 folder";
  const std::string reply = Dynolog(absl::StrCat(
      R"({"fn":"setKinetOnDemandRequest","config":"ACTIVITIES_LOG_FILE=)", trace_dir_,
      R"(/victim.json\nPROFILE_START_TIME=0\nACTIVITIES_DURATION_MSECS=200","pids":[0],"process_limit":3})"));
  EXPECT_NE(reply.find(absl::StrCat("\"activityProfilersTriggered\":[", root_job_.pid(), "]")), std::string::npos)
      << reply;
  std::string listed;
  ASSERT_TRUE(Eventually(30, [&] {
    listed = cluster_.Cli({"profiles", "--job", "root-job", "--label", "source=dyno", "--json"}).out;
    return listed.find("\"profile_id\"") != std::string::npos;
  })) << cluster_.AgentLog(agent_) << RootJobLog();
  EXPECT_NE(listed.find(absl::StrCat("\"file_name\":\"victim_", root_job_.pid(), ".json\"")), std::string::npos)
      << listed;
  EXPECT_EQ(fs::file_size(planted), 0u) << "the planted file received the trace";
  std::cout << "planted " << planted << ": " << fs::file_size(planted) << " bytes; root's trace " << listed << "\n";
}

// Finding 5: clients that claim job_id 4242 in their polls were picked by a job-scoped dyno
// request instead of the real job's process. Only the job its own environment names, and
// whose id root holds, is selected now.
TEST_F(KinetoAttackTest, AJobIdClaimTriggersOnlyTheRealJob) {
  StartRootJob("slurm-job", {}, {"SLURM_JOB_ID=4242"}, "200");
  // One claims the id in its polls only; the other also puts it in its own environment.
  const AttackerProcess claims({kPython, Standin(), "--socket-dir", socket_dir_, "--interval-ms", "200",
                                "--job-id", "4242"},
                               {"PATH=/usr/bin:/bin"});
  const AttackerProcess dresses({kPython, Standin(), "--socket-dir", socket_dir_, "--interval-ms", "200"},
                                {"SLURM_JOB_ID=4242", "PATH=/usr/bin:/bin"});
  ASSERT_TRUE(Eventually(20, [&] {
    const std::string agents = Agents();
    return agents.find(absl::StrCat("\"pid\":", claims.pid(), ",")) != std::string::npos &&
           agents.find(absl::StrCat("\"pid\":", dresses.pid(), ",")) != std::string::npos;
  })) << Agents();
  const std::string reply = Dynolog(
      R"({"fn":"setKinetOnDemandRequest","config":"ACTIVITIES_DURATION_MSECS=100","job_id":4242,"pids":[0],"process_limit":3})");
  std::cout << "root's request for job id 4242: " << reply << std::endl;
  EXPECT_NE(reply.find(absl::StrCat("\"processesMatched\":[", root_job_.pid(), "]")), std::string::npos) << reply;
  EXPECT_NE(reply.find(absl::StrCat("\"activityProfilersTriggered\":[", root_job_.pid(), "]")), std::string::npos)
      << reply;
}

}  // namespace
}  // namespace fleetprof::testing
