// The dynolog-compatible TCP API, driven by a `dyno`-like Python client and by raw sockets,
// with fake PyTorch processes on the other side of the Kineto endpoint.
#include "collectors/dynolog_api.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "collectors/kineto_endpoint.h"
#include "collectors/trace_file_waiter.h"
#include "gtest/gtest.h"
#include "tests/kineto/kineto_test_env.h"

namespace fleetprof {
namespace {

using namespace std::chrono_literals;
using ::fleetprof::testing::kPython;
using ::fleetprof::testing::RunDynoStandin;
using ::fleetprof::testing::StartKinetoStandin;
using ::fleetprof::testing::TempDir;

// Sends raw bytes on a fresh connection; returns the framed reply's JSON, or nullopt when the
// server closed without replying. `hold_open` keeps our write side open (a stalled client).
std::optional<std::string> RawExchange(int port, const std::string& bytes, bool hold_open = false) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return std::nullopt;
  }
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
  EXPECT_EQ(static_cast<size_t>(length), received.size() - 4);
  return received.substr(4);
}

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
    endpoint_->set_on_triggered([this](const KinetoProcess& process, const std::string& log) {
      std::lock_guard<std::mutex> lock(mutex_);
      triggered_.emplace_back(process, log);
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
  const std::string expected = KinetoTracePath(log_file, job->pid);
  absl::StatusOr<std::string> trace =
      WaitForTraceFile(expected, std::chrono::steady_clock::now() + 20s, {});
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
  // Stalled client first: it holds the (single) connection slot until request_timeout.
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
        "{\"fn\":\"setKinetOnDemandRequest\",\"config\":\"ACTIVITIES_LOG_FILE=" + bad + "\\n\",\"pids\":[1]}");
    // "a b.json" already fails the strict reading of the config (a space in a value).
    EXPECT_NE(reply.find("refused"), std::string::npos) << bad << ": " << reply;
  }
  const std::string ok = api_->HandleRequest("{\"fn\":\"setKinetOnDemandRequest\",\"config\":\"ACTIVITIES_LOG_FILE=" +
                                             dir + "/t.json\\n\",\"pids\":[1]}");
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
        api_->HandleRequest("{\"fn\":\"setKinetOnDemandRequest\",\"config\":\"" + config + "\"" + pids);
    EXPECT_NE(reply.find("config refused"), std::string::npos) << config << ": " << reply;
  }
  // A plain request still works, and the job gets the config rebuilt from it.
  const std::string reply = api_->HandleRequest(
      "{\"fn\":\"setKinetOnDemandRequest\",\"config\":\"# from dyno\\n  ACTIVITIES_LOG_FILE = " + inside +
      "\\nACTIVITIES_DURATION_MSECS=50\\nPROFILE_WITH_STACK=TRUE\\n\"" + pids);
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
  EXPECT_NE(guarded.HandleRequest("{\"fn\":\"getStatus\"}").find("requires \\\"auth_token\\\""), std::string::npos)
      << guarded.HandleRequest("{\"fn\":\"getStatus\"}");
  EXPECT_NE(guarded.HandleRequest("{\"fn\":\"getStatus\",\"auth_token\":\"wrong\"}").find("error"), std::string::npos);
  EXPECT_EQ(guarded.HandleRequest("{\"fn\":\"getStatus\",\"auth_token\":\"s3cret\"}"), "{\"status\":1}");
}

}  // namespace
}  // namespace fleetprof
