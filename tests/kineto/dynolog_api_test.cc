// The dynolog-compatible TCP API, driven by a `dyno`-like Python client and by raw sockets
// (TCP and unix), with fake PyTorch processes on the other side of the Kineto endpoint.
#include "collectors/dynolog_api.h"

#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "collectors/kineto_endpoint.h"
#include "collectors/trace_file_waiter.h"
#include "gtest/gtest.h"
#include "tests/kineto/kineto_test_env.h"
#include "tests/loopback_socket.h"
#include "tests/test_support.h"

namespace fleetprof {
namespace {

using namespace std::chrono_literals;
using ::fleetprof::testing::ConnectToLoopback;
using ::fleetprof::testing::ConnectToUnixSocket;
using ::fleetprof::testing::kPython;
using ::fleetprof::testing::RunDynoStandin;
using ::fleetprof::testing::StartKinetoStandin;
using ::fleetprof::testing::TempDir;

// Sends raw bytes on connection `fd` and closes it; returns the framed reply's JSON, or
// nullopt when the server closed without replying. `hold_open` keeps our write side open (a
// stalled client). No gtest assertions: it also runs in forked children.
std::optional<std::string> Exchange(int fd, const std::string& bytes, bool hold_open = false) {
  if (fd < 0) return std::nullopt;
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  if (!bytes.empty()) ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  if (!hold_open) ::shutdown(fd, SHUT_WR);
  std::string received;
  char buffer[4096];
  ssize_t n;
  while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) received.append(buffer, n);
  ::close(fd);
  if (received.size() < 4) return std::nullopt;
  int32_t length = 0;
  std::memcpy(&length, received.data(), 4);
  if (static_cast<size_t>(length) != received.size() - 4) return "bad framing: " + received;
  return received.substr(4);
}

std::optional<std::string> RawExchange(int port, const std::string& bytes, bool hold_open = false) {
  return Exchange(ConnectToLoopback(port), bytes, hold_open);
}

// Runs `exchange` in a child process that is uid `uid` (as `setpriv --reuid` makes it) and
// returns the reply it got, "" for none.
std::string AsUser(uid_t uid, const std::function<std::optional<std::string>()>& exchange) {
  int out[2];
  if (::pipe(out) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(out[0]);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0) {
      ::_exit(97);
    }
    const std::string reply = exchange().value_or("");
    (void)!::write(out[1], reply.data(), reply.size());
    ::_exit(0);
  }
  ::close(out[1]);
  std::string reply;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(out[0], buffer, sizeof(buffer))) > 0) reply.append(buffer, n);
  ::close(out[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? reply : "child failed to become uid " + std::to_string(uid);
}

constexpr int64_t kRoot = 0;
constexpr char kTraceAll[] =
    "{\"fn\":\"setKinetOnDemandRequest\",\"config\":\"ACTIVITIES_DURATION_MSECS=100\",\"pids\":[0]}";

std::string Framed(const std::string& json) {
  const int32_t length = static_cast<int32_t>(json.size());
  return std::string(reinterpret_cast<const char*>(&length), 4) + json;
}

class DynologApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLEETPROF_REQUIRE_PATH(kPython);
    KinetoEndpoint::Options options;
    options.socket_dir = dir_.path();
    endpoint_ = std::make_unique<KinetoEndpoint>(options);
    endpoint_->set_on_triggered([this](const KinetoProcess& process, const KinetoTraceRequest& request, const std::string&) {
      std::lock_guard<std::mutex> lock(mutex_);
      triggered_.emplace_back(process, request.log_file);
    });
    ASSERT_TRUE(endpoint_->Start().ok());
    DynologApiServer::Options api_options;
    api_options.listen_address = "127.0.0.1:0";
    api_options.request_timeout = 500ms;
    api_options.log_dir = dir_.path();
    api_ = std::make_unique<DynologApiServer>(*endpoint_, api_options);
    absl::Status started = api_->Start();
    ASSERT_TRUE(started.ok()) << started;
    ASSERT_GT(api_->port(), 0);
  }

  bool WaitForPids(const std::vector<int32_t>& pids) {
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (std::chrono::steady_clock::now() < deadline) {
      size_t found = 0;
      for (const KinetoProcess& process : endpoint_->Processes()) {
        found += std::count(pids.begin(), pids.end(), process.pid);
      }
      if (found == pids.size()) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  std::optional<KinetoProcess> ChildOf(int32_t parent) {
    for (const KinetoProcess& process : endpoint_->Processes()) {
      if (process.ancestry.size() > 1 && process.ancestry[1] == parent) return process;
    }
    return std::nullopt;
  }

  TempDir dir_;
  std::unique_ptr<KinetoEndpoint> endpoint_;
  std::unique_ptr<DynologApiServer> api_;
  std::mutex mutex_;
  std::vector<std::pair<KinetoProcess, std::string>> triggered_;
};

TEST_F(DynologApiTest, AnswersStatusAndVersionLikeDynolog) {
  EXPECT_EQ(RunDynoStandin(api_->port(), {"getStatus"}, dir_.path()), "{\"status\":1}\n");
  EXPECT_EQ(RunDynoStandin(api_->port(), {"getVersion"}, dir_.path()),
            "{\"version\":\"fleetprof 0.1.0\"}\n");
  EXPECT_EQ(RunDynoStandin(api_->port(), {"raw", "{\"fn\":\"killAll\"}"}, dir_.path()),
            "{\"error\":\"unknown fn \\\"killAll\\\"\"}\n");
}

TEST_F(DynologApiTest, GputraceMatchesByAncestorPidAndTheTraceArrives) {
  const std::string corpus = ::fleetprof::testing::StandinCorpusTrace();
  FLEETPROF_REQUIRE_PATH(corpus);
  // `wrapped` runs under a shell, like a job under a launcher; `other` does not.
  auto wrapped = StartKinetoStandin(dir_.path(), dir_.path(), "wrapped",
                                    {"--trace-file", corpus}, {}, /*under_shell=*/true);
  auto other = StartKinetoStandin(dir_.path(), dir_.path(), "other", {"--trace-file", corpus});
  const int32_t shell_pid = wrapped->pid();
  ASSERT_TRUE(WaitForPids({other->pid()})) << other->Output();
  std::optional<KinetoProcess> job;
  for (int i = 0; i < 750 && !job; ++i) {
    job = ChildOf(shell_pid);
    if (!job) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(job.has_value()) << wrapped->Output();

  const std::string log_file = dir_.path() + "/gputrace.pt.trace.json";
  const std::string reply = RunDynoStandin(
      api_->port(),
      {"gputrace", "--log-file", log_file, "--duration-ms", "200", "--pids",
       std::to_string(shell_pid), "--process-limit", "3"},
      dir_.path());
  const std::string pid = std::to_string(job->pid);
  EXPECT_EQ(reply, "{\"processesMatched\":[" + pid + "],\"activityProfilersTriggered\":[" + pid +
                       "],\"eventProfilersTriggered\":[],\"activityProfilersBusy\":0,"
                       "\"eventProfilersBusy\":0}\n");

  // What the agent does with the callback: wait for the job's trace file.
  const std::string expected = KinetoTracePath(log_file, job->ns_pid);
  absl::StatusOr<std::string> trace =
      WaitForTraceFile(expected, RealClock()->MonotonicNanos() + 20'000'000'000, *RealClock(), {});
  ASSERT_TRUE(trace.ok()) << trace.status() << "\n" << wrapped->Output();
  EXPECT_EQ(::fleetprof::testing::ReadSmallFile(*trace),
            ::fleetprof::testing::GunzipFile(corpus));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ASSERT_EQ(triggered_.size(), 1u);
    EXPECT_EQ(triggered_[0].first.pid, job->pid);
    EXPECT_EQ(triggered_[0].second, log_file);
  }
  EXPECT_EQ(other->Output().find("\"event\": \"config\""), std::string::npos) << other->Output();
}

TEST_F(DynologApiTest, ProcessLimitCapsTriggersAndPendingCountsAsBusy) {
  // Both stay busy (type 0 polls), so configs queue up without being handed out.
  auto a = StartKinetoStandin(dir_.path(), dir_.path(), "a", {"--busy-polls", "100000"});
  auto b = StartKinetoStandin(dir_.path(), dir_.path(), "b", {"--busy-polls", "100000"});
  ASSERT_TRUE(WaitForPids({a->pid(), b->pid()}));
  const std::vector<std::string> request = {"gputrace", "--log-file", dir_.path() + "/l.json",
                                            "--pids", "0", "--process-limit", "1"};
  const int32_t low = std::min(a->pid(), b->pid()), high = std::max(a->pid(), b->pid());
  const std::string matched =
      "\"processesMatched\":[" + std::to_string(low) + "," + std::to_string(high) + "]";
  std::string first = RunDynoStandin(api_->port(), request, dir_.path());
  EXPECT_NE(first.find(matched), std::string::npos) << first;
  EXPECT_NE(first.find("\"activityProfilersTriggered\":[" + std::to_string(low) + "]"),
            std::string::npos) << first;
  EXPECT_NE(first.find("\"activityProfilersBusy\":0"), std::string::npos) << first;
  std::string second = RunDynoStandin(api_->port(), request, dir_.path());
  EXPECT_NE(second.find(matched), std::string::npos) << second;
  EXPECT_NE(second.find("\"activityProfilersTriggered\":[" + std::to_string(high) + "]"),
            std::string::npos) << second;
  EXPECT_NE(second.find("\"activityProfilersBusy\":1"), std::string::npos) << second;
}

TEST_F(DynologApiTest, GarbageRequestsGetErrorsOrAreDroppedAndServiceContinues) {
  const int port = api_->port();
  // Stalled client first: it holds its connection until request_timeout, and others go on.
  std::thread stalled([port] { RawExchange(port, std::string("\x10\x00", 2), true); });
  std::this_thread::sleep_for(50ms);

  EXPECT_EQ(RawExchange(port, ""), std::nullopt);                       // closes at once
  EXPECT_EQ(RawExchange(port, Framed("{\"fn\":\"getStatus\"").substr(0, 9)),
            std::nullopt);                                              // truncated body
  auto expect_error = [port](const std::string& bytes, const std::string& fragment) {
    std::optional<std::string> reply = RawExchange(port, bytes);
    ASSERT_TRUE(reply.has_value()) << "no reply to " << bytes;
    EXPECT_EQ(reply->rfind("{\"error\":", 0), 0u) << *reply;
    EXPECT_NE(reply->find(fragment), std::string::npos) << *reply;
  };
  int32_t negative = -5, huge = 0x7fffffff;
  expect_error(std::string(reinterpret_cast<char*>(&negative), 4), "request length -5");
  expect_error(std::string(reinterpret_cast<char*>(&huge), 4), "request length 2147483647");
  expect_error(Framed("not json"), "not JSON");
  expect_error(Framed("\xff\xfe{}"), "not JSON");
  expect_error(Framed("[1,2]"), "not a JSON object");
  expect_error(Framed("{\"fn\":5}"), "no string");
  expect_error(Framed("{\"fn\":\"setKinetOnDemandRequest\"}"), "config");
  expect_error(Framed("{\"fn\":\"setKinetOnDemandRequest\",\"config\":\"ACTIVITIES_DURATION_MSECS=1\",\"pids\":[\"a\"]}"),
               "pids");
  expect_error(Framed("{\"fn\":\"setKinetOnDemandRequest\",\"config\":\"ACTIVITIES_DURATION_MSECS=1\",\"pids\":[-1]}"),
               "pids");
  expect_error(Framed("{\"fn\":\"setKinetOnDemandRequest\",\"config\":\"ACTIVITIES_DURATION_MSECS=1\",\"job_id\":\"7\"}"),
               "job_id");
  stalled.join();

  EXPECT_EQ(RunDynoStandin(port, {"getStatus"}, dir_.path()), "{\"status\":1}\n");
  std::optional<std::string> ok = RawExchange(
      port, Framed("{\"fn\":\"setKinetOnDemandRequest\",\"config\":\"ACTIVITIES_DURATION_MSECS=1\",\"pids\":[0]}"));
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(*ok,
            "{\"processesMatched\":[],\"activityProfilersTriggered\":[],"
            "\"eventProfilersTriggered\":[],\"activityProfilersBusy\":0,\"eventProfilersBusy\":0}");
}

TEST_F(DynologApiTest, SecondServerOnTheSamePortFailsNamingTheAddress) {
  DynologApiServer::Options options;
  options.listen_address = "127.0.0.1:" + std::to_string(api_->port());
  DynologApiServer second(*endpoint_, options);
  absl::Status started = second.Start();
  EXPECT_TRUE(absl::IsUnavailable(started)) << started;
  EXPECT_NE(started.message().find(options.listen_address), absl::string_view::npos) << started;
}

TEST_F(DynologApiTest, TraceRequestsNamingFilesOutsideTheTraceFolderAreRefused) {
  // The agent, as root, later reads and uploads the file a request names.
  const std::string dir = dir_.path();
  for (const std::string& bad : {std::string("/etc/shadow"), dir + "/../x.json", dir + "/sub/x.json",
                                 std::string("relative.json"), dir + "/.hidden.json", dir + "/a b.json"}) {
    const std::string reply = api_->HandleRequest(
        "{\"fn\":\"setKinetOnDemandRequest\",\"config\":\"ACTIVITIES_LOG_FILE=" + bad + "\\n\",\"pids\":[1]}", kRoot);
    // "a b.json" already fails the strict reading of the config (a space in a value).
    EXPECT_NE(reply.find("refused"), std::string::npos) << bad << ": " << reply;
  }
  const std::string ok = api_->HandleRequest("{\"fn\":\"setKinetOnDemandRequest\",\"config\":\"ACTIVITIES_LOG_FILE=" +
                                             dir + "/t.json\\n\",\"pids\":[1]}",
                                             kRoot);
  EXPECT_NE(ok.find("processesMatched"), std::string::npos) << ok;
}

// Security issue 21, item 2: libkineto trims only some whitespace, so a last line
// "\vACTIVITIES_LOG_FILE=<inside>" passed the old check while the job wrote to the first,
// arbitrary path. Now such a config is refused, and the job only ever sees a rebuilt one.
TEST_F(DynologApiTest, ConfigSmugglingPastTheLogFileCheckNeverReachesTheJob) {
  auto job = StartKinetoStandin(dir_.path(), dir_.path(), "victim");
  ASSERT_TRUE(WaitForPids({job->pid()})) << job->Output();
  const std::string inside = dir_.path() + "/ok.json";
  const std::string pids = ",\"pids\":[" + std::to_string(job->pid()) + "]}";
  for (const std::string& config : {
           "ACTIVITIES_LOG_FILE=/etc/cron.d/evil.json\\n\\u000bACTIVITIES_LOG_FILE=" + inside,
           "ACTIVITIES_LOG_FILE=/etc/cron.d/evil.json\\n\\fACTIVITIES_LOG_FILE=" + inside,
           "ACTIVITIES_LOG_FILE=/etc/cron.d/evil.json\\r\\nACTIVITIES_LOG_FILE=" + inside,
           "ACTIVITIES_LOG_FILE=" + inside + "\\nACTIVITIES_LOG_FILE=" + inside,
           "ACTIVITIES_LOG_FILE=" + inside + " # ACTIVITIES_LOG_FILE=/etc/x.json",
           "ACTIVITIES_LOG_FILE=" + inside + "\\nACTIVITIES_ENABLED_ACTIVITY_TYPES=cpu_op",
           "ACTIVITIES_LOG_FILE=" + inside + "=/etc/x.json",
       }) {
    const std::string reply =
        api_->HandleRequest("{\"fn\":\"setKinetOnDemandRequest\",\"config\":\"" + config + "\"" + pids, kRoot);
    EXPECT_NE(reply.find("config refused"), std::string::npos) << config << ": " << reply;
  }
  // A plain request still works, and the job gets the config rebuilt from it.
  const std::string reply = api_->HandleRequest(
      "{\"fn\":\"setKinetOnDemandRequest\",\"config\":\"# from dyno\\n  ACTIVITIES_LOG_FILE = " + inside +
      "\\nACTIVITIES_DURATION_MSECS=50\\nPROFILE_WITH_STACK=TRUE\\n\"" + pids, kRoot);
  EXPECT_NE(reply.find("\"activityProfilersTriggered\":[" + std::to_string(job->pid()) + "]"), std::string::npos)
      << reply;
  ASSERT_TRUE(job->WaitForOutput("\"event\": \"wrote\"", 15s)) << job->Output();
  std::lock_guard<std::mutex> lock(mutex_);
  ASSERT_EQ(triggered_.size(), 1u);
  EXPECT_EQ(triggered_[0].second, inside);
}

TEST_F(DynologApiTest, AnExposedApiWantsItsToken) {
  DynologApiServer::Options options;
  options.listen_address = "127.0.0.1:0";
  options.token = "s3cret";
  DynologApiServer guarded(*endpoint_, options);
  // A remote caller: the kernel cannot name it, the token vouches for it.
  const std::optional<int64_t> remote;
  EXPECT_NE(guarded.HandleRequest("{\"fn\":\"getStatus\"}", remote).find("requires \\\"auth_token\\\""), std::string::npos)
      << guarded.HandleRequest("{\"fn\":\"getStatus\"}", remote);
  EXPECT_NE(guarded.HandleRequest("{\"fn\":\"getStatus\",\"auth_token\":\"wrong\"}", remote).find("error"), std::string::npos);
  EXPECT_EQ(guarded.HandleRequest("{\"fn\":\"getStatus\",\"auth_token\":\"s3cret\"}", remote), "{\"status\":1}");
  const std::string trigger = guarded.HandleRequest(
      "{\"fn\":\"setKinetOnDemandRequest\",\"config\":\"ACTIVITIES_DURATION_MSECS=1\",\"auth_token\":\"s3cret\"}", remote);
  EXPECT_NE(trigger.find("processesMatched"), std::string::npos) << trigger;
}

// Issue 21, item 3: without tokens on loopback, the caller's uid decides whose jobs it may trace.
TEST_F(DynologApiTest, TraceRequestsOfACallerNobodyCanNameAreRefusedButStatusAnswers) {
  const std::optional<int64_t> unknown;
  EXPECT_EQ(api_->HandleRequest("{\"fn\":\"getStatus\"}", unknown), "{\"status\":1}");
  EXPECT_EQ(api_->HandleRequest("{\"fn\":\"getVersion\"}", unknown), "{\"version\":\"fleetprof 0.1.0\"}");
  const std::string reply = api_->HandleRequest(kTraceAll, unknown);
  EXPECT_NE(reply.find("trace requests need a caller the kernel can name"), std::string::npos) << reply;
}

TEST_F(DynologApiTest, ARequestOfOneUserNeverTriggersAnotherUsersProcess) {
  auto job = StartKinetoStandin(dir_.path(), dir_.path(), "victim", {"--busy-polls", "100000"});
  ASSERT_TRUE(WaitForPids({job->pid()})) << job->Output();
  const int64_t owner = ::getuid();  // the stand-in runs as we do
  const int64_t other = owner == 1001 ? 1002 : 1001;
  const std::string pid = std::to_string(job->pid());
  const std::string by_other = api_->HandleRequest(kTraceAll, other);
  EXPECT_NE(by_other.find("\"processesMatched\":[],\"activityProfilersTriggered\":[]"), std::string::npos) << by_other;
  EXPECT_NE(by_other.find("\"processesOfOtherUsers\":1"), std::string::npos) << by_other;
  EXPECT_NE(by_other.find("belong to another user"), std::string::npos) << by_other;
  // Its own user (through the endpoint's filter, for a test not running as root) and root may.
  KinetoTraceRequest hundred_ms;
  hundred_ms.duration_ms = 100;
  TriggerResult own = endpoint_->Trigger({0}, 0, hundred_ms, 0, owner);
  EXPECT_EQ(own.matched, std::vector<int32_t>{job->pid()});
  EXPECT_EQ(own.other_users, 0);
  const std::string by_root = api_->HandleRequest(kTraceAll, kRoot);
  EXPECT_NE(by_root.find("\"processesMatched\":[" + pid + "]"), std::string::npos) << by_root;
  EXPECT_EQ(by_root.find("processesOfOtherUsers"), std::string::npos) << by_root;
}

// The whole path, as a second local user: the kernel names uid 1001 on TCP and on the unix
// socket, and neither reaches the process of the test's (root's) user.
TEST_F(DynologApiTest, SecondUserOverTcpOrUnixSocketCannotTriggerRootsProcess) {
  FLEETPROF_REQUIRE(::geteuid() == 0, "root, to act as a second user");
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);  // uid 1001 reaches the socket inside
  DynologApiServer::Options options;
  options.listen_address = "127.0.0.1:0";
  options.unix_socket = dir_.path() + "/dyno.sock";
  DynologApiServer api(*endpoint_, options);
  ASSERT_TRUE(api.Start().ok());
  auto job = StartKinetoStandin(dir_.path(), dir_.path(), "root-job", {"--busy-polls", "100000"});
  ASSERT_TRUE(WaitForPids({job->pid()})) << job->Output();
  const int port = api.port();
  const std::string socket = options.unix_socket;
  const std::string over_tcp = AsUser(1001, [&] { return Exchange(ConnectToLoopback(port), Framed(kTraceAll)); });
  const std::string over_unix = AsUser(1001, [&] { return Exchange(ConnectToUnixSocket(socket), Framed(kTraceAll)); });
  for (const std::string& reply : {over_tcp, over_unix}) {
    EXPECT_NE(reply.find("\"processesMatched\":[],"), std::string::npos) << reply;
    EXPECT_NE(reply.find("\"processesOfOtherUsers\":1"), std::string::npos) << reply;
  }
  std::cout << "uid 1001 over TCP: " << over_tcp << "\nuid 1001 over unix: " << over_unix << std::endl;
  // Root, on both doors, may.
  for (int fd : {ConnectToLoopback(port), ConnectToUnixSocket(socket)}) {
    std::optional<std::string> reply = Exchange(fd, Framed(kTraceAll));
    ASSERT_TRUE(reply.has_value());
    EXPECT_NE(reply->find("\"processesMatched\":[" + std::to_string(job->pid()) + "]"), std::string::npos) << *reply;
  }
  api.Stop();
  struct stat st {};
  EXPECT_NE(::lstat(socket.c_str(), &st), 0) << "the unix socket outlived Stop()";
}

// Issue 21, low: connections were served one at a time, each up to request_timeout.
TEST_F(DynologApiTest, IdleConnectionsDoNotDelayOthers) {
  std::vector<int> idle;
  for (int i = 0; i < 10; ++i) idle.push_back(ConnectToLoopback(api_->port()));
  std::this_thread::sleep_for(100ms);  // all accepted and waiting for a length
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::string> status = RawExchange(api_->port(), Framed("{\"fn\":\"getStatus\"}"));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  std::cout << "getStatus beside 10 idle connections: " << took.count() << " ms (request timeout 500 ms)" << std::endl;
  EXPECT_EQ(status, "{\"status\":1}");
  EXPECT_LT(took, 1500ms);
  for (int fd : idle) ::close(fd);
}

TEST_F(DynologApiTest, ConnectionsPastTheLimitsGetAnErrorAndOthersGoOn) {
  for (const auto& [total, per_uid, expected] : {std::tuple{8, 2, "connections of this user"},
                                                 std::tuple{2, 8, "2 connections in progress"}}) {
    DynologApiServer::Options options;
    options.listen_address = "127.0.0.1:0";
    options.max_connections = total;
    options.max_connections_per_uid = per_uid;
    options.request_timeout = 500ms;
    DynologApiServer api(*endpoint_, options);
    ASSERT_TRUE(api.Start().ok());
    std::vector<int> idle = {ConnectToLoopback(api.port()), ConnectToLoopback(api.port())};
    std::this_thread::sleep_for(100ms);
    // A client that sends nothing yet: the refusal is there to read.
    std::optional<std::string> refused = Exchange(ConnectToLoopback(api.port()), "", /*hold_open=*/true);
    ASSERT_TRUE(refused.has_value());
    EXPECT_NE(refused->find("\"error\":\"busy: "), std::string::npos) << *refused;
    EXPECT_NE(refused->find(expected), std::string::npos) << *refused;
    for (int fd : idle) ::close(fd);
    std::this_thread::sleep_for(100ms);  // their threads see the close
    EXPECT_EQ(RawExchange(api.port(), Framed("{\"fn\":\"getStatus\"}")), "{\"status\":1}");
  }
}

}  // namespace
}  // namespace fleetprof
