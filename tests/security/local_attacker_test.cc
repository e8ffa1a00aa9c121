// Issue 21, other local users against the root agent: each test runs the attack as a second
// uid (a child that drops to it with setresuid, as `setpriv --reuid` does) against the real
// server and agent binaries, and checks that nothing of root's reaches a profile and no job
// of root's is traced.
#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/fs.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/loopback_socket.h"
#include "tests/e2e/process_runner.h"
#include "tests/e2e/test_cluster.h"
#include "tests/security/local_attacker.h"
#include "tests/test_support.h"
#include "tests/xprof/profiler_standin_process.h"

namespace fleetprof::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr char kSecretMarker[] = "ROOT-ONLY-CREDENTIALS-5f1c";

std::string Trace(const std::string& event_name, size_t padding) {
  return absl::StrCat(R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":")", event_name,
                      R"(","pid":1,"tid":1,"ts":1,"dur":2}],"pad":")", std::string(padding, 'p'), "\"}");
}

std::vector<std::string> ProfileIds(const std::string& json) {
  std::vector<std::string> ids;
  const std::string key = "\"profile_id\":\"";
  for (size_t at = json.find(key); at != std::string::npos; at = json.find(key, at + 1)) {
    const size_t start = at + key.size();
    ids.push_back(json.substr(start, json.find('"', start) - start));
  }
  return ids;
}

// Item 1 (High): the attacker owns a folder under the agent's --trace_dir and swaps a
// sub-folder of finished traces for a symlink to a root-only folder (renameat2
// RENAME_EXCHANGE) over and over, so that the agent's open may land on root's file between
// its scan and its read. On 52e8783, root's file was uploaded and readable through export.
TEST(LocalAttacker, TraceDirSymlinkRaceNeverUploadsRootsFiles) {
  REQUIRE_ROOT();
  const std::string trace_root = MakeTempDir();
  const std::string secret_dir = MakeTempDir();  // 0700, root's
  ::chmod(trace_root.c_str(), 0755);
  const std::string job_dir = trace_root + "/jobA";
  ASSERT_EQ(::mkdir(job_dir.c_str(), 0755), 0);
  ASSERT_EQ(::chown(job_dir.c_str(), kAttacker, kAttacker), 0);
  {
    std::ofstream(secret_dir + "/creds.json") << Trace(kSecretMarker, 10);
    ::chmod((secret_dir + "/creds.json").c_str(), 0600);
  }

  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  ASSERT_GE(cluster.StartAgent({"--trace_dir=" + trace_root, "--scan_interval_ms=20", "--settle_ms=60"}), 0);

  const int seconds = 60;
  const pid_t attacker = RunAsAttacker([&] {
    const std::string real = job_dir + "/d", link = job_dir + "/l";
    ::mkdir(real.c_str(), 0755);
    if (::symlink(secret_dir.c_str(), link.c_str()) != 0) ::_exit(98);
    size_t round = 0;
    auto next_decoy = Clock::now();
    while (true) {
      // A fresh decoy now and then (a new size: the watcher hands it out again once settled),
      // written while "d" is the real folder; in between "d" flips between folder and link.
      if (Clock::now() >= next_decoy) {
        struct stat st {};
        if (::lstat(real.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
          std::ofstream(real + "/creds.json", std::ios::trunc) << Trace(absl::StrCat("decoy-", round), round % 50);
          ++round;
          next_decoy = Clock::now() + std::chrono::milliseconds(250);
        }
      }
      // As fast as it goes: a scan sees either, and so may the open that follows it.
      ::syscall(SYS_renameat2, AT_FDCWD, real.c_str(), AT_FDCWD, link.c_str(), RENAME_EXCHANGE);
      std::this_thread::yield();
    }
  });
  // Load beside the race, so the agent's scan and open are scheduled unevenly.
  const pid_t load = RunAsAttacker([] {
    volatile uint64_t spin = 0;
    while (true) spin = spin + 1;
  });
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  Reap(attacker);
  Reap(load);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // uploads in flight finish

  const std::vector<std::string> ids = ProfileIds(cluster.Cli({"profiles", "--json"}).out);
  size_t leaked = 0, decoys = 0;
  std::string sample;
  for (const std::string& id : ids) {
    const std::string bytes = HttpGet(cluster.http_addr(), "/api/v1/profiles/" + id + "/export?format=original");
    if (bytes.find(kSecretMarker) != std::string::npos) ++leaked;
    if (bytes.find("decoy-") != std::string::npos) ++decoys;
    if (sample.empty()) sample = bytes.substr(0, 300);
  }
  EXPECT_EQ(leaked + decoys, ids.size()) << "every stored profile is read back; one was: " << sample;
  const std::string metrics = HttpGet(cluster.agent_metrics_addr(0), "/metrics");
  const size_t refused = metrics.find("fleetprof_agent_trace_uploads_total{result=\"refused\"}");
  std::cout << "symlink race for " << seconds << " s: " << ids.size() << " decoys uploaded, " << leaked
            << " carried root's file; agent: "
            << (refused == std::string::npos ? "no refusals" : metrics.substr(refused, metrics.find('\n', refused) - refused))
            << std::endl;
  EXPECT_EQ(leaked, 0) << "root's file was uploaded";
  EXPECT_GE(ids.size(), 10u) << "the race was not exercised: too few uploads";
  fs::remove_all(trace_root);
  fs::remove_all(secret_dir);
}

// Item 1, the server's part: a JSON file that is no trace (what a planted link to a
// credentials file hands the agent) is refused with a clear error and nothing is kept.
TEST(LocalAttacker, ServerRefusesJsonThatIsNoTrace) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  const std::string creds = cluster.root() + "/creds.json";
  std::ofstream(creds) << R"({"aws_access_key_id": "AKIA", "aws_secret_access_key": ")" << kSecretMarker << "\"}";
  CommandResult upload = cluster.Cli({"upload", creds, "--job", "j"});
  EXPECT_NE(upload.exit_code, 0) << upload.out;
  EXPECT_NE(upload.err.find("without \"traceEvents\" is not a Chrome/Kineto trace"), std::string::npos) << upload.err;
  EXPECT_TRUE(ProfileIds(cluster.Cli({"profiles", "--json"}).out).empty());
}

// Item 3 (Medium): the dynolog API on loopback had no caller identity, so any local user
// triggered any user's PyTorch job (reproduced in issue 21 against 52e8783: uid 1001's
// `dyno gputrace --pids 0` matched and triggered root's process). Now the kernel names the
// caller, over TCP (the client socket's owner) and --dynolog_socket (SO_PEERCRED), and uid
// 1001 reaches only processes of uid 1001.
TEST(LocalAttacker, SecondUserCannotTriggerRootsJobThroughTheDynologApi) {
  REQUIRE_ROOT();
  const std::string python = "/usr/bin/python3";
  FLEETPROF_REQUIRE_PATH(python);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  const std::string kineto_dir = cluster.root() + "/kineto";
  fs::create_directories(kineto_dir);
  const std::string api_dir = MakeTempDir();
  ::chmod(api_dir.c_str(), 0755);  // the attacker may reach the socket, not write beside it
  const std::string api_socket = api_dir + "/dynolog.sock";
  const int agent = cluster.StartAgent({"--kineto_socket_dir=" + kineto_dir, "--dynolog_socket=" + api_socket});
  ASSERT_GE(agent, 0);
  const std::string api_tcp = cluster.agent_dynolog_addr(agent);
  ASSERT_FALSE(api_tcp.empty());

  // Root's PyTorch job.
  ChildProcess job;
  const std::string job_log = cluster.root() + "/root-job.log";
  job.Start({python, std::string(FLEETPROF_SOURCE_DIR) + "/tests/kineto/kineto_standin.py", "--socket-dir", kineto_dir,
             "--interval-ms", "100"},
            job_log, {"FLEETPROF_JOB=root-job", "KINETO_IPC_SOCKET_DIR=" + kineto_dir});
  ASSERT_TRUE(Eventually(15, [&] {
    return cluster.Cli({"agents", "--json"}).out.find("{\"job\":\"root-job\",\"kind\":\"kineto\"") != std::string::npos;
  })) << cluster.Cli({"agents", "--json"}).out;

  const std::string request =
      R"({"fn":"setKinetOnDemandRequest","config":"ACTIVITIES_DURATION_MSECS=100","pids":[0],"process_limit":3})";
  const std::string replies = AsAttacker([&] {
    return DynologExchange(ConnectToLoopback(api_tcp), request) + "\n" +
           DynologExchange(ConnectToUnixSocket(api_socket), request);
  });
  std::cout << "uid 1001 against root's job (TCP, then unix socket):\n" << replies << std::endl;
  EXPECT_EQ(Occurrences(replies, "\"processesMatched\":[],\"activityProfilersTriggered\":[]"), 2u) << replies;
  EXPECT_EQ(Occurrences(replies, "\"processesOfOtherUsers\":1"), 2u) << replies;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a queued config would be handed out by now
  auto job_output = [&] {
    std::ifstream in(job_log);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(job_output().find("\"event\": \"config\""), std::string::npos) << job_output();

  // The control: the same request from root reaches the job, so the refusal was the uid's.
  const std::string by_root = DynologExchange(ConnectToLoopback(api_tcp), request);
  EXPECT_EQ(by_root.find("\"activityProfilersTriggered\":[]"), std::string::npos) << by_root;
  EXPECT_TRUE(Eventually(10, [&] { return job_output().find("\"event\": \"config\"") != std::string::npos; }))
      << job_output();
  cluster.StopAgent(agent);
  struct stat st {};
  EXPECT_NE(::lstat(api_socket.c_str(), &st), 0) << "the agent left its dynolog socket behind";
  fs::remove_all(api_dir);
}

// Issue 21, item 4: on 52e8783 another user's PyTorch process could name itself part of
// root's job (its own FLEETPROF_JOB) and claim root's job process as its ancestor, so a
// capture of that job, or a dyno request for that pid, traced the attacker's process too and
// uploaded whatever it wrote as root's job. Now the job name stays with the uid that holds
// it and the ancestry is what /proc confirms.
TEST(LocalAttacker, SecondUserCannotJoinRootsJobOrClaimItsProcessAsParent) {
  REQUIRE_ROOT();
  const std::string python = "/usr/bin/python3";
  FLEETPROF_REQUIRE_PATH(python);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  const std::string kineto_dir = MakeTempDir();  // outside the cluster's 0700 folder
  ::chmod(kineto_dir.c_str(), 01777);           // clients of every user bind their sockets here
  const int agent = cluster.StartAgent({"--kineto_socket_dir=" + kineto_dir});
  ASSERT_GE(agent, 0);
  const std::string standin = std::string(FLEETPROF_SOURCE_DIR) + "/tests/kineto/kineto_standin.py";

  ChildProcess job;
  job.Start({python, standin, "--socket-dir", kineto_dir, "--interval-ms", "100"}, cluster.root() + "/root-job.log",
            {"FLEETPROF_JOB=root-job", "KINETO_IPC_SOCKET_DIR=" + kineto_dir});
  const auto agents = [&] { return cluster.Cli({"agents", "--json"}).out; };
  ASSERT_TRUE(Eventually(15, [&] { return Occurrences(agents(), "\"job\":\"root-job\"") == 1; })) << agents();

  const std::string root_pid = std::to_string(job.pid());
  const AttackerProcess impostor(
      {python, standin, "--socket-dir", kineto_dir, "--interval-ms", "100", "--claim-ancestors", root_pid},
      {"FLEETPROF_JOB=root-job", "KINETO_IPC_SOCKET_DIR=" + kineto_dir, "PATH=/usr/bin:/bin"});
  const pid_t attacker = impostor.pid();
  const std::string attacker_entry = "\"pid\":" + std::to_string(attacker);
  ASSERT_TRUE(Eventually(15, [&] { return agents().find(attacker_entry) != std::string::npos; })) << agents();
  const std::string listed = agents();
  std::cout << "agents with root's job and uid 1001's impostor:\n" << listed << std::endl;
  EXPECT_EQ(Occurrences(listed, "\"job\":\"root-job\""), 1u) << "the impostor is not part of root's job: " << listed;
  EXPECT_NE(listed.find("{\"job\":\"unassigned\",\"kind\":\"kineto\"," + attacker_entry), std::string::npos) << listed;
  // `dyno gputrace --pids ROOT_PID` (as root) selects root's process and its real children only.
  const std::string request = R"({"fn":"setKinetOnDemandRequest","config":"ACTIVITIES_DURATION_MSECS=100","pids":[)" +
                              root_pid + R"(],"process_limit":8})";
  const std::string reply = DynologExchange(ConnectToLoopback(cluster.agent_dynolog_addr(agent)), request);
  EXPECT_NE(reply.find("\"processesMatched\":[" + root_pid + "]"), std::string::npos) << reply;
  cluster.StopAgent(agent);
  fs::remove_all(kineto_dir);
}

// The pid on this node of the process of `uid` that its own pid namespace numbers `ns_pid`
// (the last entry of "NSpid:" in /proc/PID/status, the first being this namespace's); -1 if none.
pid_t HostPidOf(pid_t ns_pid, uid_t uid) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::ifstream status(entry.path() / "status");
    std::string line, ns_line, uid_line;
    while (std::getline(status, line)) {
      if (line.rfind("NSpid:", 0) == 0) ns_line = line;
      if (line.rfind("Uid:", 0) == 0) uid_line = line;
    }
    std::istringstream ns(ns_line.size() > 6 ? ns_line.substr(6) : ""), uids(uid_line.size() > 4 ? uid_line.substr(4) : "");
    std::vector<pid_t> pids;
    for (pid_t p; ns >> p;) pids.push_back(p);
    uid_t real = 0;
    if (pids.size() >= 2 && pids.back() == ns_pid && (uids >> real) && real == uid) return pids.front();
  }
  return -1;
}

// Issue 21, item 4, pid namespaces: Kineto registrations were keyed, and their ancestry kept,
// by the pids a client claims, which a pod's pid namespace numbers as its owner likes
// (ns_last_pid). A process of uid 1001 in a pod that numbers its parent like root's job had
// that ancestry "confirmed" (each parent's innermost NSpid matched), so root's `dyno gputrace
// --pids ROOT_PID` triggered it too, and it was listed under a pid that names another process
// on the node. Now a registration is the kernel's pid of its sender (SCM_CREDENTIALS) and its
// ancestry the node's numbering: the request reaches root's process alone.
TEST(LocalAttacker, APodThatNumbersItsParentLikeRootsJobIsNotItsChild) {
  REQUIRE_ROOT();
  const std::string python = "/usr/bin/python3";
  FLEETPROF_REQUIRE_PATH(python);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  const std::string kineto_dir = MakeTempDir();
  ::chmod(kineto_dir.c_str(), 01777);
  const int agent = cluster.StartAgent({"--kineto_socket_dir=" + kineto_dir});
  ASSERT_GE(agent, 0);
  const std::string standin = std::string(FLEETPROF_SOURCE_DIR) + "/tests/kineto/kineto_standin.py";
  ChildProcess job;
  job.Start({python, standin, "--socket-dir", kineto_dir, "--interval-ms", "100"}, cluster.root() + "/root-job.log",
            {"FLEETPROF_JOB=root-job", "KINETO_IPC_SOCKET_DIR=" + kineto_dir});
  const auto agents = [&] { return cluster.Cli({"agents", "--json"}).out; };
  ASSERT_TRUE(Eventually(15, [&] { return Occurrences(agents(), "\"job\":\"root-job\"") == 1; })) << agents();
  const pid_t root_pid = job.pid();

  // The pod: its init sets the namespace's last pid so that the next child, a shell, is
  // ROOT_PID in the pod; the shell's child, uid 1001's PyTorch process, is ROOT_PID + 1 and
  // truthfully reports its ancestry [ROOT_PID + 1, ROOT_PID, 1] as the pod numbers it.
  const std::string pod_log = cluster.root() + "/pod.log";
  ChildProcess pod;
  pod.Start({"/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", "-c",
             absl::StrCat("echo ", root_pid - 1, " > /proc/sys/kernel/ns_last_pid && sh -c '",
                          "setpriv --reuid=", kAttacker, " --regid=", kAttacker, " --clear-groups ", python, " ", standin,
                          " --socket-dir ", kineto_dir, " --interval-ms 100; true'; true")},
            pod_log, {"FLEETPROF_JOB=pod-job", "KINETO_IPC_SOCKET_DIR=" + kineto_dir});
  pid_t pod_process = -1;
  ASSERT_TRUE(Eventually(15, [&] { return (pod_process = HostPidOf(root_pid + 1, kAttacker)) > 0; }))
      << "no process of uid 1001 numbered " << root_pid + 1 << " in a pod: " << ReadSmallFile(pod_log);
  ASSERT_TRUE(Eventually(15, [&] { return agents().find("{\"job\":\"pod-job\"") != std::string::npos; })) << agents();
  const std::string pod_entry = absl::StrCat("{\"job\":\"pod-job\",\"kind\":\"kineto\",\"pid\":", pod_process, ",");
  EXPECT_NE(agents().find(pod_entry), std::string::npos)
      << "the pod's process is listed under its pid on the node (" << pod_process << "): " << agents();

  const std::string request = absl::StrCat(
      R"({"fn":"setKinetOnDemandRequest","config":"ACTIVITIES_DURATION_MSECS=100","pids":[)", root_pid,
      R"(],"process_limit":8})");
  const std::string reply = DynologExchange(ConnectToLoopback(cluster.agent_dynolog_addr(agent)), request);
  std::cout << "root's dyno request for pid " << root_pid << " with a pod numbering its parent alike:\n"
            << reply << std::endl;
  EXPECT_NE(reply.find(absl::StrCat("\"processesMatched\":[", root_pid, "]")), std::string::npos) << reply;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a queued config would be handed out by now
  EXPECT_EQ(ReadSmallFile(pod_log).find("\"event\": \"config\""), std::string::npos) << ReadSmallFile(pod_log);
  cluster.StopAgent(agent);
  fs::remove_all(kineto_dir);
}

// Issue 21, the job name: the Kineto endpoint bound a name to the uid of its first Kineto
// client only, and /proc discovery of XLA jobs bound nothing, so uid 1001 could name root's
// XLA job in its own processes (an XLA "profiler" of its own, a PyTorch client) and a capture
// of that job traced them and uploaded their answers as root's. One binding now holds for
// both kinds: the name is the uid's that claimed it first, and the others are flagged and
// counted, never targets of that job.
TEST(LocalAttacker, SecondUserCannotJoinRootsXlaJobByName) {
  REQUIRE_ROOT();
  const std::string python = "/usr/bin/python3";
  FLEETPROF_REQUIRE_PATH(python);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  const std::string kineto_dir = MakeTempDir();
  ::chmod(kineto_dir.c_str(), 01777);
  const int agent = cluster.StartAgent({"--kineto_socket_dir=" + kineto_dir, "--discover_interval_ms=200"});
  ASSERT_GE(agent, 0);
  ChildProcess job;  // root's XLA job: discovery reads only its environment
  job.Start({"/bin/sleep", "120"}, cluster.root() + "/root-xla.log",
            {"FLEETPROF_JOB=root-xla", "FLEETPROF_XPROF_ADDR=127.0.0.1:9012"});
  const auto agents = [&] { return cluster.Cli({"agents", "--json"}).out; };
  ASSERT_TRUE(Eventually(15, [&] { return Occurrences(agents(), "\"job\":\"root-xla\"") == 1; })) << agents();

  const std::string standin = std::string(FLEETPROF_SOURCE_DIR) + "/tests/kineto/kineto_standin.py";
  const AttackerProcess xla({"/bin/sleep", "120"}, {"FLEETPROF_JOB=root-xla", "FLEETPROF_XPROF_ADDR=127.0.0.1:9013"});
  const AttackerProcess kineto({python, standin, "--socket-dir", kineto_dir, "--interval-ms", "100"},
                               {"FLEETPROF_JOB=root-xla", "KINETO_IPC_SOCKET_DIR=" + kineto_dir, "PATH=/usr/bin:/bin"});
  const pid_t xla_impostor = xla.pid();
  const pid_t kineto_impostor = kineto.pid();
  const std::string kineto_entry = absl::StrCat("\"kind\":\"kineto\",\"pid\":", kineto_impostor, ",");
  ASSERT_TRUE(Eventually(15, [&] { return agents().find(kineto_entry) != std::string::npos; })) << agents();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // three discovery scans see the XLA impostor
  const std::string listed = agents();
  std::cout << "agents with root's XLA job and uid 1001's two impostors:\n" << listed << std::endl;
  EXPECT_EQ(Occurrences(listed, "\"job\":\"root-xla\""), 1u) << listed;
  EXPECT_EQ(listed.find(absl::StrCat("\"pid\":", xla_impostor, ",")), std::string::npos) << listed;
  EXPECT_NE(listed.find("{\"job\":\"unassigned\"," + kineto_entry), std::string::npos) << listed;
  const std::string metrics = HttpGet(cluster.agent_metrics_addr(agent), "/metrics");
  EXPECT_NE(metrics.find("fleetprof_agent_job_name_conflicts_total{node="), std::string::npos) << metrics;
  const size_t at = metrics.find("fleetprof_agent_job_name_conflicts_total{");
  const size_t value = metrics.find(' ', at);
  ASSERT_NE(value, std::string::npos) << metrics;
  EXPECT_EQ(std::stod(metrics.substr(value + 1)), 2.0) << "each impostor flagged once: " << metrics.substr(at, 120);
  cluster.StopAgent(agent);
  fs::remove_all(kineto_dir);
}

// The value of the first series of `family` whose labels include `label`, -1 when none.
double MetricValue(const std::string& exposition, const std::string& family, const std::string& label) {
  std::istringstream lines(exposition);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(family + "{", 0) != 0 || line.find(label) == std::string::npos) continue;
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

// Resident bytes of process `pid` as the agent counts them (/proc/PID/statm, pages).
double ResidentBytes(pid_t pid) {
  std::ifstream statm(absl::StrCat("/proc/", pid, "/statm"));
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

// The squatter, as the final attack of issue 21 found it after 4a69254: a uid-1001 process
// started with root's job name before root's job held the name, so root's job was flagged and
// `fleetprof_job_resident_memory_bytes{job=...}` showed the squatter's 1.5 MB instead of root's
// 315 MB. Root's processes now take the name over; and a name the scheduler gave to a uid in
// --job_owners_file is that uid's alone, whoever named it first.
TEST(LocalAttacker, ASquatterOfRootsJobNameLosesItWhenRootsJobStarts) {
  REQUIRE_ROOT();
  const std::string python = "/usr/bin/python3";
  FLEETPROF_REQUIRE_PATH(python);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  const std::string owners_file = cluster.root() + "/job_owners";
  std::ofstream(owners_file) << "# the scheduler's prolog\n1002 slurm-77\n";
  const int agent = cluster.StartAgent(
      {"--discover_interval_ms=200", "--sample_interval_ms=200", "--job_owners_file=" + owners_file});
  ASSERT_GE(agent, 0);
  const auto agents = [&] { return cluster.Cli({"agents", "--json"}).out; };
  const auto squat = [](const std::string& job, const std::string& addr) {
    return AttackerProcess({"/bin/sleep", "120"}, {"FLEETPROF_JOB=" + job, "FLEETPROF_XPROF_ADDR=" + addr});
  };
  const AttackerProcess unlisted_squat = squat("root-late", "127.0.0.1:9016");
  const AttackerProcess listed_squat = squat("slurm-77", "127.0.0.1:9017");
  const pid_t squatter = unlisted_squat.pid();
  const pid_t listed_squatter = listed_squat.pid();
  const std::string squatter_entry = absl::StrCat("\"pid\":", squatter, ",");
  ASSERT_TRUE(Eventually(15, [&] { return agents().find(squatter_entry) != std::string::npos; }))
      << "first come: the squatter holds the unlisted name until root's job runs\n" << agents();

  ChildProcess job;  // root's job: a Python process, far larger than the squatter's sleep
  job.Start({python, "-c", "import time; time.sleep(120)"}, cluster.root() + "/root-late.log",
            {"FLEETPROF_JOB=root-late", "FLEETPROF_XPROF_ADDR=127.0.0.1:9018"});
  const std::string root_entry = absl::StrCat("\"pid\":", job.pid(), ",");
  ASSERT_TRUE(Eventually(15, [&] {
    const std::string listed = agents();
    return listed.find(root_entry) != std::string::npos && listed.find(squatter_entry) == std::string::npos;
  })) << agents();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // five scans and samples more
  const std::string listed = agents();
  std::cout << "agents after root's job started:\n" << listed << std::endl;
  EXPECT_EQ(Occurrences(listed, "\"job\":\"root-late\""), 1u) << listed;
  EXPECT_EQ(listed.find(absl::StrCat("\"pid\":", listed_squatter, ",")), std::string::npos)
      << "slurm-77 is uid 1002's by the owners file" << listed;
  EXPECT_EQ(listed.find("slurm-77"), std::string::npos) << listed;

  // The job's memory is root's process's, not the squatter's nor both (sampled every 200 ms).
  std::string metrics;
  double shown = -1, own = 0;
  EXPECT_TRUE(Eventually(10, [&] {
    metrics = HttpGet(cluster.agent_metrics_addr(agent), "/metrics");
    shown = MetricValue(metrics, "fleetprof_job_resident_memory_bytes", "job=\"root-late\"");
    own = ResidentBytes(job.pid());
    // Python's resident set moves by a few pages between the agent's sample and ours; the
    // squatter's process is 1.5 MB, so root's alone, root's plus the squatter's and the
    // squatter's alone are far apart.
    return std::abs(shown - own) < 0.05 * own;
  })) << "shown " << shown << " bytes, root's process holds " << own << ", the squatter " << ResidentBytes(squatter);
  std::cout << "fleetprof_job_resident_memory_bytes{job=\"root-late\"} = " << shown << " (root's process: " << own
            << ", the squatter: " << ResidentBytes(squatter) << ")" << std::endl;
  EXPECT_EQ(MetricValue(metrics, "fleetprof_job_resident_memory_bytes", "job=\"slurm-77\""), -1) << metrics;
  EXPECT_GE(MetricValue(metrics, "fleetprof_agent_job_name_conflicts_total", "node="), 2.0)
      << "both squatters flagged: " << metrics;
  cluster.StopAgent(agent);
}

// Item 7: an XLA job on the node's filesystem writes its trace itself, into a folder only its
// user may enter, and the agent reads that file beneath the folder (never through a link,
// only the job user's file, never larger than --max_trace_mb) instead of taking the whole
// trace as one gRPC message (on 52e8783 every answer was held whole: 2.4 GB RSS from a fake
// profiler). A job that makes its session folder a link to root's folder gets nothing of root's.
TEST(LocalAttacker, AnXlaJobWritesItsTraceIntoItsOwnFolderAndALinkThereReadsNothing) {
  REQUIRE_ROOT();
  FLEETPROF_REQUIRE_PATH(XPROF_PYTHON);
  FLEETPROF_REQUIRE(PythonHasGrpc(), XPROF_PYTHON << " able to import grpc and google.protobuf (Debian python3-grpcio)");
  const std::string xspace = CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb");
  FLEETPROF_REQUIRE_PATH(xspace);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  const std::string open_dir = MakeTempDir();  // the stand-ins' records, written as uid 1001
  ::chmod(open_dir.c_str(), 0777);
  const std::string trace_parent = MakeTempDir();  // jobs of uid 1001 reach the trace folder through it
  ::chmod(trace_parent.c_str(), 0755);
  const std::string trace_dir = trace_parent + "/traces";
  const int agent = cluster.StartAgent(
      {"--node=xla-node", "--kineto_trace_dir=" + trace_dir, "--discover_interval_ms=200"});
  ASSERT_GE(agent, 0);
  // Root's folder with a trace-shaped file of root's, where the hostile job's link points.
  const std::string root_dir = MakeTempDir();
  ::chmod(root_dir.c_str(), 0755);
  fs::copy_file(xspace, root_dir + "/xla-node.xplane.pb");

  // uid 1001's XLA jobs: profiler stand-ins that write their traces themselves (repo mode), the
  // address they serve on in the environment the agent's discovery reads.
  auto start_job = [&](const std::string& job, const std::string& link_session) {
    int port = 0;
    const int probe = ListenOnLoopback(&port);
    ::close(probe);
    StandInOptions options;
    options.mode = "repo";
    options.xspace_path = xspace;
    options.port = port;
    options.link_session = link_session;
    options.env = {"FLEETPROF_JOB=" + job, absl::StrCat("FLEETPROF_XPROF_ADDR=127.0.0.1:", port), "PATH=/usr/bin:/bin",
                   "HOME=/tmp"};
    options.run_as_uid = kAttacker;
    auto standin = std::make_unique<ProfilerStandIn>();
    const absl::Status started = standin->Start(options, open_dir + "/" + job);
    if (!started.ok()) ADD_FAILURE() << job << ": " << started;
    return standin;
  };
  const std::unique_ptr<ProfilerStandIn> own_job = start_job("u-xla", "");
  const std::unique_ptr<ProfilerStandIn> link_job = start_job("u-xla-link", root_dir);
  ASSERT_FALSE(HasFailure()) << "the stand-ins did not start";
  const auto agents = [&] { return cluster.Cli({"agents", "--json"}).out; };
  ASSERT_TRUE(Eventually(30, [&] {
    const std::string listed = agents();
    return listed.find("\"job\":\"u-xla\"") != std::string::npos &&
           listed.find("\"job\":\"u-xla-link\"") != std::string::npos;
  })) << agents();

  CommandResult own = cluster.Cli({"capture", "--job", "u-xla", "--duration_ms", "300", "--wait", "--json"}, 120);
  std::cout << "capture of uid 1001's job:\n" << own.out << std::endl;
  EXPECT_NE(own.out.find("\"state\":\"INDEXED\""), std::string::npos) << own.out << own.err;
  const std::string emit_xspace = own_job->Recorded("request.generated.emit_xspace").value_or("(none)");
  const std::string repository_root = own_job->Recorded("request.raw.repository_root").value_or("(none)");
  std::cout << "its profiler server was asked: emit_xspace " << emit_xspace << ", repository_root " << repository_root
            << std::endl;
  EXPECT_EQ(emit_xspace, "false");
  EXPECT_TRUE(repository_root.starts_with(trace_dir + "/uid1001-")) << repository_root;
  // The job's file was read and then removed: nothing of it stays on the node.
  int left = 0;
  for (const auto& entry : fs::recursive_directory_iterator(trace_dir)) left += entry.path().string().ends_with(".xplane.pb");
  EXPECT_EQ(left, 0);

  CommandResult linked =
      cluster.Cli({"capture", "--job", "u-xla-link", "--duration_ms", "300", "--wait", "--json"}, 120);
  std::cout << "capture of the job whose session folder links to root's:\n" << linked.out << std::endl;
  EXPECT_NE(linked.out.find("\"state\":\"FAILED\""), std::string::npos) << linked.out << linked.err;
  EXPECT_EQ(linked.out.find("\"state\":\"INDEXED\""), std::string::npos) << linked.out;
  EXPECT_NE(linked.out.find("is a symbolic link: a trace is never read through one"), std::string::npos) << linked.out;
  EXPECT_TRUE(fs::exists(root_dir + "/xla-node.xplane.pb")) << "root's file is neither uploaded nor removed";
  CommandResult listed = cluster.Cli({"profiles", "--job", "u-xla-link", "--json"});
  EXPECT_EQ(listed.out.find("profile_id"), std::string::npos) << listed.out;
  cluster.StopAgent(agent);
  fs::remove_all(open_dir);
  fs::remove_all(trace_parent);
  fs::remove_all(root_dir);
}

// Issue 39, finding 4: a user who may write a watched folder made <dir>/prodjob2/x.json and it
// was filed as job prodjob2 (its views, diagnosis and timeline then showed the user's file),
// and a folder named with a newline forged lines of the agent's log. A folder names the
// file's job only when the file's owner may use that job (--job_owners_file); otherwise the
// file is "unassigned" with the label claimed_job.
TEST(LocalAttacker, AFileUnderAnotherUsersJobFolderIsNotFiledUnderThatJob) {
  REQUIRE_ROOT();
  const std::string trace_root = MakeTempDir();
  ::chmod(trace_root.c_str(), 01777);  // a drop folder every user may write
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  const std::string owners_file = cluster.root() + "/job_owners";
  std::ofstream(owners_file) << "1002 prodjob2\n";
  const int agent = cluster.StartAgent({"--trace_dir=" + trace_root, "--scan_interval_ms=50", "--settle_ms=100",
                                        "--job_owners_file=" + owners_file});
  ASSERT_GE(agent, 0);
  const std::string forged_line = "[2001-01-01 00:00:00.000] [info] uploaded x.json job=prodjob2";
  const std::vector<std::string> folders = {"prodjob2", "open-job", "forged\n" + forged_line};
  const pid_t writer = RunAsAttacker([&] {
    for (const std::string& folder : folders) {
      const std::string dir = trace_root + "/" + folder;
      if (::mkdir(dir.c_str(), 0755) != 0) ::_exit(96);
      std::ofstream(dir + "/x.json") << Trace("by-uid-1001", 10);
    }
  });
  int status = 0;
  ASSERT_EQ(::waitpid(writer, &status, 0), writer);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  const auto profiles = [&](const std::string& job) { return cluster.Cli({"profiles", "--job", job, "--json"}).out; };
  ASSERT_TRUE(Eventually(20, [&] {
    return ProfileIds(profiles("unassigned")).size() == 1 && ProfileIds(profiles("open-job")).size() == 1;
  })) << profiles("unassigned") << profiles("open-job");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // scans enough to have filed the third
  const std::string unassigned = profiles("unassigned");
  std::cout << "uid 1001's file under prodjob2/ (listed for uid 1002):\n" << unassigned << std::endl;
  EXPECT_EQ(ProfileIds(profiles("prodjob2")).size(), 0u) << profiles("prodjob2");
  EXPECT_NE(unassigned.find("\"claimed_job\":\"prodjob2\""), std::string::npos) << unassigned;
  EXPECT_EQ(ProfileIds(cluster.Cli({"profiles", "--json"}).out).size(), 2u) << "the forged folder's file is not uploaded";

  const std::string log = ReadSmallFile(cluster.root() + "/agent0.log");
  EXPECT_EQ(log.find("\n" + forged_line), std::string::npos) << "a folder name forged a log line:\n" << log;
  EXPECT_NE(log.find("forged\\n[2001"), std::string::npos) << "the name is logged escaped:\n" << log;
  cluster.StopAgent(agent);
  fs::remove_all(trace_root);
}

// Issue 39, finding 7: the agent's /metrics listener (prometheus-cpp's: 2 threads, 30 s request
// timeout) answered nobody while two connections of any local user stayed open sending
// nothing: 4 of 6 scrapes timed out. Connections that wait hold no thread now, and past the
// listener's cap the longest idle one is closed for a newcomer.
TEST(LocalAttacker, StalledConnectionsDoNotBlindTheAgentsMetrics) {
  REQUIRE_ROOT();
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  const int agent = cluster.StartAgent({});
  ASSERT_GE(agent, 0);
  const std::string addr = cluster.agent_metrics_addr(agent);
  const int port = std::stoi(addr.substr(addr.rfind(':') + 1));
  const auto scrape_ms = [&](std::string* body) {
    const auto start = Clock::now();
    *body = HttpGet(addr, "/metrics");
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  // As uid 1001: `count` connections, every other one stopping half-way through a header.
  const auto hold = [&](int count) {
    int ready[2];
    if (::pipe(ready) != 0) return pid_t{-1};
    const pid_t holder = RunAsAttacker([&] {
      static constexpr char kHalf[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n";
      for (int i = 0; i < count; ++i) {
        const int fd = ConnectToLoopback(port);
        if (fd >= 0 && i % 2 == 1) (void)!::write(fd, kHalf, sizeof(kHalf) - 1);
      }
      (void)!::write(ready[1], "r", 1);
      ::pause();
    });
    char byte = 0;
    (void)!::read(ready[0], &byte, 1);
    ::close(ready[0]);
    ::close(ready[1]);
    return holder;
  };
  for (const int stalled : {4, 200}) {  // the finding's few, then more than the listener keeps
    const pid_t holder = hold(stalled);
    ASSERT_GT(holder, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // all accepted before the scrapes
    double worst = 0;
    for (int i = 0; i < 6; ++i) {
      std::string body;
      worst = std::max(worst, scrape_ms(&body));
      EXPECT_NE(body.find("fleetprof_agent_server_connected"), std::string::npos)
          << "scrape " << i << ": " << body << "\nagent log:\n" << cluster.AgentLog(agent);
    }
    std::cout << stalled << " stalled connections of uid 1001: the slowest of 6 scrapes took " << worst << " ms"
              << std::endl;
    EXPECT_LT(worst, 3000) << "a scrape waited for the stalled connections";
    Reap(holder);
  }
  cluster.StopAgent(agent);
}

}  // namespace
}  // namespace fleetprof::testing
