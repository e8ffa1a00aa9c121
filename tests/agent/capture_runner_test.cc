// The agent's capture threads (agent/capture_runner.h): before, each capture command and each
// adopted trace started a thread of its own, unbounded, and a failed start threw
// std::system_error out of the agent. Now at most 32 run at once, and a capture that cannot
// have a thread is reported FAILED with the reason.

#include "agent/capture_runner.h"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "collectors/process_jobs.h"
#include "collectors/xprof_client.h"
#include "common/runtime.h"
#include "common/threads.h"
#include "gtest/gtest.h"
#include "tests/loopback_socket.h"

namespace fleetprof {
namespace {

// A TCP port that accepts connections (the kernel's backlog) and never answers: a profiler
// server that hangs, so a capture of it stays busy until it is cancelled.
class SilentPort {
 public:
  SilentPort() { fd_ = testing::ListenOnLoopback(&port_); }
  ~SilentPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = -1;
};

// What the runner reported, per target: the last state and its error.
class Reports {
 public:
  void Add(const v1::AgentMessage& message) {
    std::lock_guard lock(mu_);
    const v1::CaptureUpdate& update = message.capture_update();
    last_[update.target()] = update;
    changed_.notify_all();
  }
  // Waits until `n` targets reported `state`.
  bool WaitFor(v1::CaptureTarget::State state, size_t n) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(30), [&] {
      size_t have = 0;
      for (const auto& [target, update] : last_) have += update.state() == state;
      return have >= n;
    });
  }
  v1::CaptureUpdate Of(const std::string& target) {
    std::lock_guard lock(mu_);
    return last_[target];
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, v1::CaptureUpdate> last_;
};

v1::CaptureCommand HangingCapture(int port, int i) {
  v1::CaptureCommand command;
  command.set_capture_id("cap" + std::to_string(i));
  command.set_target_name("t" + std::to_string(i));
  command.mutable_target()->set_kind(v1::Target::xprof);
  command.mutable_target()->set_address("127.0.0.1:" + std::to_string(port));
  command.set_duration_ms(60'000);
  command.set_deadline_unix_ns(UnixNanos() + 120'000'000'000);
  return command;
}

// An uploader with no server behind it: these tests never get as far as an upload.
Uploader NoServer() {
  return [](const UploadOptions&) -> absl::StatusOr<v1::UploadResponse> {
    return absl::UnavailableError("no server in this test");
  };
}

// The XLA profiler service's real client; no Kineto endpoint.
CaptureBackendDeps XlaDeps() {
  return CaptureBackendDeps{.kineto = nullptr, .xprof = [](const XprofCaptureOptions& options,
                                                           const std::function<bool()>& cancelled) {
                              return CaptureXprof(options, cancelled);
                            }};
}

CaptureRunner::Options RunnerOptions() {
  CaptureRunner::Options options;
  options.node = "n1";
  options.xprof_dir = ::testing::TempDir();
  options.kineto_dir = ::testing::TempDir();
  options.max_trace_bytes = int64_t{64} << 20;  // 32 captures at once stay within the memory budget
  return options;
}

TEST(CaptureRunnerTest, AtMost32CapturesRunAtOnce) {
  SilentPort silent;
  ASSERT_GT(silent.port(), 0);
  Reports reports;
  const auto started = std::chrono::steady_clock::now();
  {
    CaptureRunner runner(RunnerOptions(), NoServer(),
                         XlaDeps(), [&](const v1::AgentMessage& m) { reports.Add(m); });
    for (int i = 0; i < 40; ++i) runner.Run(HangingCapture(silent.port(), i));
    ASSERT_TRUE(reports.WaitFor(v1::CaptureTarget::RUNNING, 32));
    ASSERT_TRUE(reports.WaitFor(v1::CaptureTarget::FAILED, 8));
    for (int i = 32; i < 40; ++i) {
      const v1::CaptureUpdate update = reports.Of("t" + std::to_string(i));
      EXPECT_EQ(update.state(), v1::CaptureTarget::FAILED) << i;
      EXPECT_NE(update.error().find("already runs 32 captures"), std::string::npos) << update.error();
    }
    EXPECT_EQ(reports.Of("t0").state(), v1::CaptureTarget::RUNNING);
  }  // the runner cancels the 32 hanging captures and joins them
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
}

// Issue 21, item 7: each XLA capture holds its answer in memory until it is written, so the
// captures in flight share one budget (--max_capture_memory_mb) and one past it fails at once.
TEST(CaptureRunnerTest, CapturesBeyondTheMemoryBudgetFailClearly) {
  SilentPort silent;
  ASSERT_GT(silent.port(), 0);
  Reports reports;
  CaptureRunner::Options options = RunnerOptions();
  options.max_trace_bytes = int64_t{100} << 20;
  options.max_capture_memory_bytes = int64_t{250} << 20;  // two full answers and a half
  CaptureRunner runner(options, NoServer(), XlaDeps(),
                       [&](const v1::AgentMessage& m) { reports.Add(m); });
  for (int i = 0; i < 4; ++i) runner.Run(HangingCapture(silent.port(), i));
  ASSERT_TRUE(reports.WaitFor(v1::CaptureTarget::FAILED, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a second failure would show by now
  int failed = 0;
  for (int i = 0; i < 4; ++i) {
    const v1::CaptureUpdate update = reports.Of("t" + std::to_string(i));
    if (update.state() != v1::CaptureTarget::FAILED) continue;
    ++failed;
    EXPECT_NE(update.error().find("hold 250 MiB of --max_capture_memory_mb=250"), std::string::npos) << update.error();
  }
  EXPECT_EQ(failed, 1) << "the third takes the 50 MiB left; only the fourth finds none";
}

// Issue 45, finding 6: a server whose clock is far off this node's (its probes measure it) has
// its times moved onto this node's clock; a small offset leaves them as sent, for the ranks'
// synced clocks to align.
TEST(CaptureRunnerTest, AServersClockFarOffIsMovedOntoThisNodesClock) {
  std::optional<ClockSync> sync;
  CaptureRunner::Options options = RunnerOptions();
  options.clock_sync = [&] { return sync; };
  CaptureRunner runner(options, NoServer(), XlaDeps(),
                       [](const v1::AgentMessage&) {});
  v1::CaptureCommand sent;
  sent.set_start_time_unix_ns(int64_t{1'700'000'000} * 1'000'000'000);
  sent.set_deadline_unix_ns(sent.start_time_unix_ns() + int64_t{60} * 1'000'000'000);
  EXPECT_EQ(runner.OnThisNodesClock(sent).start_time_unix_ns(), sent.start_time_unix_ns()) << "not measured yet";
  sync = ClockSync{.offset_ns = 400'000'000, .uncertainty_ns = 1'000'000};
  EXPECT_EQ(runner.OnThisNodesClock(sent).start_time_unix_ns(), sent.start_time_unix_ns()) << "within 1 s";
  sync->offset_ns = -int64_t{300} * 1'000'000'000;  // the server is 300 s behind this node
  const v1::CaptureCommand moved = runner.OnThisNodesClock(sent);
  EXPECT_EQ(moved.start_time_unix_ns(), sent.start_time_unix_ns() + int64_t{300} * 1'000'000'000);
  EXPECT_EQ(moved.deadline_unix_ns(), sent.deadline_unix_ns() + int64_t{300} * 1'000'000'000);
}

TEST(CaptureRunnerTest, ACaptureWithoutAThreadIsReportedFailed) {
  SilentPort silent;
  ASSERT_GT(silent.port(), 0);
  Reports reports;
  CaptureRunner runner(RunnerOptions(), NoServer(),
                       XlaDeps(), [&](const v1::AgentMessage& m) { reports.Add(m); });
  FailThreadStartsForTesting(1);
  runner.Run(HangingCapture(silent.port(), 0));
  FailThreadStartsForTesting(0);
  const v1::CaptureUpdate update = reports.Of("t0");
  EXPECT_EQ(update.state(), v1::CaptureTarget::FAILED);
  EXPECT_NE(update.error().find("cannot start a capture thread"), std::string::npos) << update.error();
  // The next command gets its thread.
  runner.Run(HangingCapture(silent.port(), 1));
  EXPECT_TRUE(reports.WaitFor(v1::CaptureTarget::RUNNING, 1));
}

// True when a connection waits on listening socket `fd` within `timeout_ms`.
bool ConnectionArrives(int fd, int timeout_ms) {
  pollfd wait{fd, POLLIN, 0};
  return ::poll(&wait, 1, timeout_ms) == 1;
}

// Issue 21: an XLA target was a pid alone, so a pid that another process took between the
// discovery and the capture was contacted as the job (its network namespace entered, its
// listener trusted, its answer uploaded as the job's). A target is now the pid and the start
// time discovery saw: a pid that is another process now fails the capture before any
// connection. The control, the same target with the right start time, reaches the port.
TEST(CaptureRunnerTest, AnXlaTargetWhosePidIsAnotherProcessNowIsNotContacted) {
  int port = -1;
  const int listener = testing::ListenOnLoopback(&port);  // this process's: the "job's" own server
  ASSERT_GE(listener, 0);
  const std::optional<uint64_t> started = ReadProcessStartTicks("/proc", ::getpid());
  ASSERT_TRUE(started.has_value());
  Reports reports;
  {
    CaptureRunner runner(RunnerOptions(), NoServer(),
                         XlaDeps(), [&](const v1::AgentMessage& m) { reports.Add(m); });
    v1::CaptureCommand reused = HangingCapture(port, 0);
    reused.mutable_target()->set_pid(::getpid());
    reused.mutable_target()->set_start_ticks(*started + 1);  // the process discovered under this pid has gone
    runner.Run(reused);
    ASSERT_TRUE(reports.WaitFor(v1::CaptureTarget::FAILED, 1));
    const v1::CaptureUpdate update = reports.Of("t0");
    EXPECT_NE(update.error().find("is another process now"), std::string::npos) << update.error();
    EXPECT_FALSE(ConnectionArrives(listener, 500)) << "the pid's new process was contacted";

    v1::CaptureCommand unpinned = HangingCapture(port, 1);
    unpinned.mutable_target()->set_pid(::getpid());
    runner.Run(unpinned);
    ASSERT_TRUE(reports.WaitFor(v1::CaptureTarget::FAILED, 2));
    EXPECT_NE(reports.Of("t1").error().find("without its start time"), std::string::npos) << reports.Of("t1").error();

    v1::CaptureCommand same = HangingCapture(port, 2);
    same.mutable_target()->set_pid(::getpid());
    same.mutable_target()->set_start_ticks(*started);
    runner.Run(same);
    EXPECT_TRUE(ConnectionArrives(listener, 15'000)) << reports.Of("t2").error();
  }  // cancels the hanging capture
  ::close(listener);
}

}  // namespace
}  // namespace fleetprof
