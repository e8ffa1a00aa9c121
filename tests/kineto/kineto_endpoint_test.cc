// KinetoEndpoint against real fake-PyTorch processes (kineto_standin.py) over real unix
// datagram sockets in a temporary KINETO_IPC_SOCKET_DIR-style folder, so the tests cannot
// collide with a dynolog or agent on this host.
#include "collectors/kineto_endpoint.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "collectors/trace_file_waiter.h"
#include "gtest/gtest.h"
#include "tests/kineto/kineto_test_env.h"

namespace fleetprof {
namespace {

using namespace std::chrono_literals;
using ::fleetprof::testing::CountOccurrences;
using ::fleetprof::testing::kPython;
using ::fleetprof::testing::ScriptProcess;
using ::fleetprof::testing::StartKinetoStandin;
using ::fleetprof::testing::TempDir;

KinetoTraceRequest DurationConfig(const std::string& log_file, int duration_ms) {
  KinetoTraceRequest request;
  request.log_file = log_file;
  request.duration_ms = duration_ms;
  return request;
}

class KinetoEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLEETPROF_REQUIRE_PATH(kPython);
    ASSERT_FALSE(dir_.path().empty());
  }

  // Starts an endpoint on the test's socket folder.
  std::unique_ptr<KinetoEndpoint> StartEndpoint(std::chrono::seconds forget_after = 60s) {
    KinetoEndpoint::Options options;
    options.socket_dir = dir_.path();
    options.forget_after = forget_after;
    auto endpoint = std::make_unique<KinetoEndpoint>(options);
    endpoint->set_on_triggered([this](const KinetoProcess& process, const KinetoTraceRequest& request, const std::string&) {
      std::lock_guard<std::mutex> lock(mutex_);
      handed_out_.emplace_back(process.pid, request.log_file);
    });
    absl::Status started = endpoint->Start();
    EXPECT_TRUE(started.ok()) << started;
    return endpoint;
  }

  // Waits until a process whose ancestry includes `pid` has registered.
  static std::optional<KinetoProcess> WaitForProcess(const KinetoEndpoint& endpoint, int32_t pid,
                                                     std::chrono::milliseconds timeout = 15s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      for (const KinetoProcess& process : endpoint.Processes()) {
        for (int32_t ancestor : process.ancestry) {
          if (ancestor == pid) return process;
        }
      }
      std::this_thread::sleep_for(20ms);
    }
    return std::nullopt;
  }

  std::vector<std::pair<int32_t, std::string>> HandedOut() {
    std::lock_guard<std::mutex> lock(mutex_);
    return handed_out_;
  }

  TempDir dir_;
  std::mutex mutex_;
  std::vector<std::pair<int32_t, std::string>> handed_out_;
};

TEST_F(KinetoEndpointTest, HandsQueuedConfigToPollingProcessExactlyOnce) {
  auto endpoint = StartEndpoint();
  auto standin = StartKinetoStandin(dir_.path(), dir_.path(), "standin");
  std::optional<KinetoProcess> process = WaitForProcess(*endpoint, standin->pid());
  ASSERT_TRUE(process.has_value()) << standin->Output();
  EXPECT_EQ(process->pid, standin->pid());
  EXPECT_EQ(process->ancestry.front(), standin->pid());
  EXPECT_EQ(process->ns_pid, standin->pid());  // no pid namespace of its own: the same numbers
  EXPECT_GT(process->start_ticks, 0u);

  const std::string log_file = dir_.path() + "/once.pt.trace.json";
  TriggerResult result = endpoint->Trigger({process->pid}, 0, DurationConfig(log_file, 100), 0);
  EXPECT_EQ(result.matched, std::vector<int32_t>{process->pid});
  EXPECT_EQ(result.triggered, std::vector<int32_t>{process->pid});
  EXPECT_EQ(result.busy, 0);

  ASSERT_TRUE(standin->WaitForOutput("\"event\": \"wrote\"", 15s)) << standin->Output();
  std::this_thread::sleep_for(600ms);  // a dozen more polls: none may carry the config again
  EXPECT_EQ(standin->Stop(), 0);
  const std::string output = standin->Output();
  EXPECT_EQ(CountOccurrences(output, "\"event\": \"config\""), 1) << output;
  EXPECT_NE(output.find("ACTIVITIES_LOG_FILE=" + log_file), std::string::npos) << output;
  EXPECT_NE(output.find("\"configs\": 1,"), std::string::npos) << output;
  EXPECT_TRUE(::fleetprof::testing::PathExists(
      KinetoTracePath(log_file, process->ns_pid)));

  const auto handed_out = HandedOut();
  ASSERT_EQ(handed_out.size(), 1u);
  EXPECT_EQ(handed_out[0].first, process->pid);
  EXPECT_EQ(handed_out[0].second, log_file);
}

TEST_F(KinetoEndpointTest, BusyClientKeepsItsConfigUntilItPollsForActivities) {
  auto endpoint = StartEndpoint();
  // 60 busy polls of 50 ms: three seconds in which the config must stay pending.
  auto standin = StartKinetoStandin(dir_.path(), dir_.path(), "busy", {"--busy-polls", "60"});
  std::optional<KinetoProcess> process = WaitForProcess(*endpoint, standin->pid());
  ASSERT_TRUE(process.has_value()) << standin->Output();

  const KinetoTraceRequest config = DurationConfig(dir_.path() + "/busy.json", 50);
  TriggerResult first = endpoint->Trigger({}, 0, config, 0);
  EXPECT_EQ(first.triggered, std::vector<int32_t>{process->pid});
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(CountOccurrences(standin->Output(), "\"event\": \"config\""), 0) << standin->Output();
  // Still pending, so a second request finds the process busy and changes nothing.
  TriggerResult second = endpoint->Trigger({}, 0, config, 0);
  EXPECT_EQ(second.matched, std::vector<int32_t>{process->pid});
  EXPECT_TRUE(second.triggered.empty());
  EXPECT_EQ(second.busy, 1);
  EXPECT_TRUE(HandedOut().empty());

  ASSERT_TRUE(standin->WaitForOutput("\"event\": \"config\"", 20s)) << standin->Output();
  EXPECT_EQ(standin->Stop(), 0);
  const std::string output = standin->Output();
  EXPECT_EQ(CountOccurrences(output, "\"event\": \"config\""), 1) << output;
  EXPECT_NE(output.find("\"poll_type\": 2"), std::string::npos) << output;
  EXPECT_NE(output.find("\"configs_while_busy\": 0"), std::string::npos) << output;
  EXPECT_EQ(HandedOut().size(), 1u);
}

TEST_F(KinetoEndpointTest, ForgetsProcessAfterSilenceButKeepsPollingOnes) {
  auto endpoint = StartEndpoint(/*forget_after=*/2s);
  auto quitter = StartKinetoStandin(dir_.path(), dir_.path(), "quitter", {"--polls", "3"});
  auto steady = StartKinetoStandin(dir_.path(), dir_.path(), "steady");
  const pid_t quitter_pid = quitter->pid();
  ASSERT_TRUE(WaitForProcess(*endpoint, quitter_pid).has_value()) << quitter->Output();
  ASSERT_TRUE(WaitForProcess(*endpoint, steady->pid()).has_value()) << steady->Output();
  EXPECT_EQ(quitter->Wait(15s), 0) << quitter->Output();
  const auto quit_time = std::chrono::steady_clock::now();

  auto registered = [&](pid_t pid) {
    for (const KinetoProcess& process : endpoint->Processes()) {
      if (process.pid == pid) return true;
    }
    return false;
  };
  while (registered(quitter_pid) && std::chrono::steady_clock::now() - quit_time < 10s) {
    std::this_thread::sleep_for(50ms);
  }
  const auto forgotten_after = std::chrono::steady_clock::now() - quit_time;
  EXPECT_FALSE(registered(quitter_pid));
  EXPECT_GE(forgotten_after, 1500ms);  // not before forget_after (less the last poll's age)
  EXPECT_LT(forgotten_after, 5s);
  EXPECT_TRUE(registered(steady->pid()));
  // A forgotten process cannot be triggered.
  EXPECT_TRUE(endpoint->Trigger({quitter_pid}, 0, KinetoTraceRequest{}, 0).matched.empty());
}

// Issue 21: a capture's Kineto target is the pid and the start time it registered with, so a
// pid that another process took since (a recycled pid) is not handed the capture's config.
TEST_F(KinetoEndpointTest, ACaptureReachesItsPidOnlyWhileItIsTheProcessThatRegistered) {
  auto endpoint = StartEndpoint();
  auto standin = StartKinetoStandin(dir_.path(), dir_.path(), "pinned");
  std::optional<KinetoProcess> process = WaitForProcess(*endpoint, standin->pid());
  ASSERT_TRUE(process.has_value()) << standin->Output();
  const KinetoTraceRequest config = DurationConfig(dir_.path() + "/pinned.json", 50);

  absl::StatusOr<KinetoTrigger> other = endpoint->TriggerProcess(process->pid, process->start_ticks + 1, config, false);
  EXPECT_TRUE(absl::IsNotFound(other.status())) << other.status();
  EXPECT_NE(std::string(other.status().message()).find("is another process now"), std::string::npos);
  std::this_thread::sleep_for(500ms);  // ten polls: a queued config would be handed out by now
  EXPECT_EQ(CountOccurrences(standin->Output(), "\"event\": \"config\""), 0) << standin->Output();

  absl::StatusOr<KinetoTrigger> same = endpoint->TriggerProcess(process->pid, process->start_ticks, config, false);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->process.ns_pid, standin->pid());
  EXPECT_TRUE(absl::IsUnavailable(endpoint->TriggerProcess(process->pid, process->start_ticks, config, false).status()))
      << "still pending: busy";
  EXPECT_TRUE(standin->WaitForOutput("\"event\": \"config\"", 15s)) << standin->Output();
}

TEST_F(KinetoEndpointTest, JobComesFromFleetprofJobElseJobIdElseUnassigned) {
  auto endpoint = StartEndpoint();
  auto named = StartKinetoStandin(dir_.path(), dir_.path(), "named", {"--job-id", "99"},
                                  {{"FLEETPROF_JOB", "llama-pretrain"}});
  auto slurm = StartKinetoStandin(dir_.path(), dir_.path(), "slurm", {}, {{"SLURM_JOB_ID", "4242"}});
  auto anonymous = StartKinetoStandin(dir_.path(), dir_.path(), "anonymous");
  // Claims the job id in its polls, but its environment does not say so (issue 39, finding 5).
  auto liar = StartKinetoStandin(dir_.path(), dir_.path(), "liar", {"--job-id", "4242"});

  std::optional<KinetoProcess> p1 = WaitForProcess(*endpoint, named->pid());
  std::optional<KinetoProcess> p2 = WaitForProcess(*endpoint, slurm->pid());
  std::optional<KinetoProcess> p3 = WaitForProcess(*endpoint, anonymous->pid());
  ASSERT_TRUE(p1 && p2 && p3);
  EXPECT_EQ(p1->job, "llama-pretrain");
  EXPECT_EQ(p1->job_id, 99);
  EXPECT_EQ(p2->job, "4242");
  EXPECT_EQ(p2->job_id, 4242);
  EXPECT_EQ(p3->job, "unassigned");
  EXPECT_GT(p3->last_poll_ns, 0);

  // job_id narrows a trigger to the processes whose own environment is that job's, never to
  // a process that merely sends the id.
  ASSERT_TRUE(WaitForProcess(*endpoint, liar->pid()).has_value()) << liar->Output();
  TriggerResult result = endpoint->Trigger({0}, 4242, KinetoTraceRequest{}, 0);
  EXPECT_EQ(result.matched, std::vector<int32_t>{slurm->pid()});
}

TEST_F(KinetoEndpointTest, ClientThatNeverWritesTimesOutWithClearMessage) {
  auto endpoint = StartEndpoint();
  auto standin = StartKinetoStandin(dir_.path(), dir_.path(), "silent", {"--never-write"});
  std::optional<KinetoProcess> process = WaitForProcess(*endpoint, standin->pid());
  ASSERT_TRUE(process.has_value()) << standin->Output();
  const std::string log_file = dir_.path() + "/never.pt.trace.json";
  ASSERT_EQ(endpoint->Trigger({process->pid}, 0, DurationConfig(log_file, 100), 0).triggered.size(),
            1u);
  ASSERT_TRUE(standin->WaitForOutput("\"event\": \"not_written\"", 15s)) << standin->Output();

  const std::string expected = KinetoTracePath(log_file, process->ns_pid);
  absl::StatusOr<std::string> trace =
      WaitForTraceFile(expected, RealClock()->MonotonicNanos() + 1'000'000'000, *RealClock(), {});
  ASSERT_FALSE(trace.ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(trace.status()));
  EXPECT_EQ(std::string(trace.status().message()),
            "job wrote no trace within the deadline (expected " + expected + ")");
}

TEST_F(KinetoEndpointTest, SecondEndpointOnSameSocketFileFailsAndFirstKeepsServing) {
  auto first = StartEndpoint();
  KinetoEndpoint::Options options;
  options.socket_dir = dir_.path();
  KinetoEndpoint second(options);
  absl::Status started = second.Start();
  ASSERT_FALSE(started.ok());
  EXPECT_TRUE(absl::IsAlreadyExists(started)) << started;
  EXPECT_NE(started.message().find(dir_.path() + "/dynolog"), absl::string_view::npos) << started;
  second.Stop();

  // The loser must not have removed the winner's socket file.
  auto standin = StartKinetoStandin(dir_.path(), dir_.path(), "after");
  EXPECT_TRUE(WaitForProcess(*first, standin->pid()).has_value()) << standin->Output();
}

TEST_F(KinetoEndpointTest, StaleSocketFileFromDeadDaemonIsReplaced) {
  {
    auto dead = StartEndpoint();
    dead->Stop();
  }
  // Leave a socket file behind the way a crashed daemon does: bound, then closed.
  const std::string path = dir_.path() + "/dynolog";
  int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ::close(fd);
  ASSERT_TRUE(::fleetprof::testing::PathExists(path));

  auto endpoint = StartEndpoint();
  auto standin = StartKinetoStandin(dir_.path(), dir_.path(), "fresh");
  EXPECT_TRUE(WaitForProcess(*endpoint, standin->pid()).has_value()) << standin->Output();
}

}  // namespace
}  // namespace fleetprof

namespace fleetprof {
namespace {

// Issue 38: the endpoint judges a capture's start the way the job will, at hand-out.
class KinetoHandoutTest : public KinetoEndpointTest {
 protected:
  static int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  // A 100 ms trace into NAME.json that starts `ms` from now, after a 5 s warm-up.
  KinetoTraceRequest StartingIn(const std::string& name, int64_t ms) {
    KinetoTraceRequest request = DurationConfig(dir_.path() + "/" + name + ".json", 100);
    request.start_time_unix_ms = NowMs() + ms;
    request.warmup_secs = 5;
    return request;
  }
};

TEST_F(KinetoHandoutTest, AFixedStartTheJobWouldRefuseIsNotHandedOutAndTheCaptureLearnsWhy) {
  auto endpoint = StartEndpoint();
  auto standin = StartKinetoStandin(dir_.path(), dir_.path(), "fixed");
  std::optional<KinetoProcess> process = WaitForProcess(*endpoint, standin->pid());
  ASSERT_TRUE(process.has_value()) << standin->Output();
  const KinetoTraceRequest request = StartingIn("fixed", 2000);  // inside the 5 s warm-up
  absl::StatusOr<KinetoTrigger> trigger = endpoint->TriggerProcess(process->pid, process->start_ticks, request, false);
  ASSERT_TRUE(trigger.ok()) << trigger.status();
  const KinetoHandout::Status status = trigger->handout->WaitUntil(*RealClock(), RealClock()->MonotonicNanos() + 10'000'000'000);
  EXPECT_EQ(status.state, KinetoHandout::State::kRefused);
  EXPECT_NE(status.reason.find("insufficient time for warmup"), std::string::npos) << status.reason;
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(CountOccurrences(standin->Output(), "\"event\": \"config\""), 0) << standin->Output();
  EXPECT_TRUE(HandedOut().empty());
  // Nothing stays pending: the next request is taken.
  EXPECT_TRUE(endpoint->TriggerProcess(process->pid, process->start_ticks, DurationConfig("", 10), false).ok());
}

TEST_F(KinetoHandoutTest, AMovableStartHandedOutLateMovesToWarmUpAndMarginAfterTheHandOut) {
  auto endpoint = StartEndpoint();
  auto standin = StartKinetoStandin(dir_.path(), dir_.path(), "movable");
  std::optional<KinetoProcess> process = WaitForProcess(*endpoint, standin->pid());
  ASSERT_TRUE(process.has_value()) << standin->Output();
  const int64_t queued_ms = NowMs();
  const KinetoTraceRequest request = StartingIn("movable", 1000);
  absl::StatusOr<KinetoTrigger> trigger = endpoint->TriggerProcess(process->pid, process->start_ticks, request, true);
  ASSERT_TRUE(trigger.ok()) << trigger.status();
  const KinetoHandout::Status status = trigger->handout->WaitUntil(*RealClock(), RealClock()->MonotonicNanos() + 10'000'000'000);
  ASSERT_EQ(status.state, KinetoHandout::State::kHandedOut) << status.reason;
  EXPECT_TRUE(status.moved);
  EXPECT_GE(status.start_time_unix_ms, queued_ms + 6000);
  EXPECT_FALSE(status.reason.empty());
  // The job got the moved start, accepted it (the stand-in keeps libkineto's rules) and traced.
  ASSERT_TRUE(standin->WaitForOutput("\"event\": \"wrote\"", 20s)) << standin->Output();
  EXPECT_NE(standin->Output().find("PROFILE_START_TIME=" + std::to_string(status.start_time_unix_ms)),
            std::string::npos)
      << standin->Output();
  EXPECT_EQ(CountOccurrences(standin->Output(), "\"event\": \"refused\""), 0) << standin->Output();
}

TEST_F(KinetoHandoutTest, ABusyJobsPendingConfigCanBeWithdrawnAndSaysItIsBusy) {
  auto endpoint = StartEndpoint();
  auto standin = StartKinetoStandin(dir_.path(), dir_.path(), "busy", {"--busy-ms", "60000"});
  std::optional<KinetoProcess> process = WaitForProcess(*endpoint, standin->pid());
  ASSERT_TRUE(process.has_value()) << standin->Output();
  const KinetoTraceRequest request = StartingIn("busy", 11000);
  absl::StatusOr<KinetoTrigger> trigger = endpoint->TriggerProcess(process->pid, process->start_ticks, request, false);
  ASSERT_TRUE(trigger.ok()) << trigger.status();
  EXPECT_EQ(trigger->handout->WaitUntil(*RealClock(), RealClock()->MonotonicNanos() + 400'000'000).state,
            KinetoHandout::State::kPending);
  EXPECT_NE(endpoint->WhyPending(process->pid).find("busy"), std::string::npos) << endpoint->WhyPending(process->pid);
  EXPECT_TRUE(endpoint->Withdraw(process->pid, trigger->handout));
  EXPECT_EQ(trigger->handout->WaitUntil(*RealClock(), RealClock()->MonotonicNanos()).state, KinetoHandout::State::kWithdrawn);
  EXPECT_FALSE(endpoint->Withdraw(process->pid, trigger->handout)) << "withdrawn once";
  EXPECT_EQ(CountOccurrences(standin->Output(), "\"event\": \"config\""), 0) << standin->Output();
}

}  // namespace
}  // namespace fleetprof

namespace fleetprof {
namespace {

// Issue 39, finding 1: a uid's registrations are capped, so one user's flood of short-lived
// clients cannot grow the endpoint (or the node's target list) without bound.
TEST_F(KinetoEndpointTest, RegistrationsAreCappedPerUid) {
  KinetoEndpoint::Options options;
  options.socket_dir = dir_.path();
  options.max_processes_per_uid = 2;
  KinetoEndpoint endpoint(options);
  ASSERT_TRUE(endpoint.Start().ok());
  auto a = StartKinetoStandin(dir_.path(), dir_.path(), "a");
  auto b = StartKinetoStandin(dir_.path(), dir_.path(), "b");
  ASSERT_TRUE(WaitForProcess(endpoint, a->pid()).has_value()) << a->Output();
  ASSERT_TRUE(WaitForProcess(endpoint, b->pid()).has_value()) << b->Output();
  auto c = StartKinetoStandin(dir_.path(), dir_.path(), "c");
  EXPECT_FALSE(WaitForProcess(endpoint, c->pid(), 1s).has_value()) << "third of one uid";
  EXPECT_EQ(endpoint.Processes().size(), 2u);
  // Its polls are still answered (an empty config): the client is refused, not broken.
  EXPECT_TRUE(c->WaitForOutput("\"event\": \"start\"", 5s));
  EXPECT_EQ(CountOccurrences(c->Output(), "\"bad_reply\""), 0) << c->Output();
}

}  // namespace
}  // namespace fleetprof
