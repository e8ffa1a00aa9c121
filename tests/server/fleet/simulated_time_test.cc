// The server's background rules on a simulated clock (common/clock.h): schedules' periods,
// missed and busy runs, capture deadlines, retention cut-offs and departed agents, checked in
// milliseconds of test time instead of seconds of sleep. And the lock rule: listing captures,
// schedules and agents answers while a storage write is held up. And the drain's rule: each
// one's Stop waits for its work in progress, and nothing of theirs runs after it.

#include <unistd.h>

#include <atomic>
#include <map>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/kineto_timing.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "rocksdb/env.h"
#include "rocksdb/file_system.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/capture_coordinator.h"
#include "server/fleet/capture_scheduler.h"
#include "server/fleet/retention.h"
#include "server/server_metrics.h"
#include "storage/storage.h"
#include "tests/server/fleet/gate.h"

namespace fleetprof {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kDay = 24 * 3600 * kSecond;

// Waits in real time (at most 10 s) until `done` holds: a loop reacts to the simulated clock
// within a millisecond, so this returns at once when the code is right.
template <typename F>
bool Soon(F done) {
  for (int i = 0; i < 10'000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

// Holds every write-ahead-log write for `delay_ms` while it is set: a disk that stalls.
class StallingFileSystem : public rocksdb::FileSystemWrapper {
 public:
  StallingFileSystem() : rocksdb::FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "StallingFileSystem"; }
  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* file,
                                    rocksdb::IODebugContext* debug) override {
    rocksdb::IOStatus s = rocksdb::FileSystemWrapper::NewWritableFile(name, options, file, debug);
    if (s.ok() && name.ends_with(".log")) *file = std::make_unique<StallingFile>(std::move(*file), this);
    return s;
  }
  std::atomic<int> delay_ms{0};
  std::atomic<int> stalled{0};  // writes held up so far

 private:
  class StallingFile : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    StallingFile(std::unique_ptr<rocksdb::FSWritableFile> file, StallingFileSystem* fs)
        : rocksdb::FSWritableFileOwnerWrapper(std::move(file)), fs_(fs) {}
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* debug) override {
      Stall();
      return rocksdb::FSWritableFileOwnerWrapper::Append(data, options, debug);
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             const rocksdb::DataVerificationInfo& info, rocksdb::IODebugContext* debug) override {
      Stall();
      return rocksdb::FSWritableFileOwnerWrapper::Append(data, options, info, debug);
    }

   private:
    void Stall() {
      if (const int ms = fs_->delay_ms.load(); ms > 0) {
        fs_->stalled.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      }
    }
    StallingFileSystem* fs_;
  };
};

// What happened, in the order it happened, from any thread.
class Events {
 public:
  void Note(const std::string& what) {
    absl::MutexLock lock(&mu_);
    events_.push_back(what);
  }
  std::vector<std::string> Seen() {
    absl::MutexLock lock(&mu_);
    return events_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
};

// Calls `stop` on a thread of its own while `held` holds the work in progress, releases it once
// Stop is under way (`begun`: work not yet started is refused from then on, whatever the
// scheduling), and notes "Stop returned" when it does: a Stop that does not wait for the held
// work notes it first.
void StopWhileHeld(Gate& held, Events& events, const std::function<void()>& stop, const std::function<bool()>& begun) {
  std::future<void> stopped = std::async(std::launch::async, [&] {
    stop();
    events.Note("Stop returned");
  });
  EXPECT_TRUE(Soon(begun)) << "Stop never began";  // let go either way: Stop waits on it
  held.Release();
  stopped.get();
}

class SimulatedTimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("fleetprof_simtime_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    env_ = rocksdb::NewCompositeEnv(fs_);
    StoreOptions options;
    options.env = env_.get();
    auto store = Storage::Open(dir_.string(), options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // An agent on `node` whose process of `job` is a capture target; its commands are counted.
  // `send` (default: count the command) receives what the registry sends the agent.
  int64_t ConnectAgent(AgentRegistry& registry, const std::string& node, const std::string& job,
                       std::function<bool(const v1::ServerMessage&)> send = nullptr) {
    v1::AgentHello hello;
    hello.set_node(node);
    v1::Target* target = hello.add_targets();
    target->set_job(job);
    target->set_kind(v1::Target::kineto);
    target->set_pid(42);
    if (!send) send = [this](const v1::ServerMessage&) { return ++commands_, true; };
    auto session = registry.Connected(hello, std::move(send), [] {});
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? *session : 0;
  }
  v1::Schedule ScheduleOf(CaptureScheduler& scheduler) {
    auto list = scheduler.List(v1::ListSchedulesRequest());
    EXPECT_TRUE(list.ok() && list->schedules_size() == 1);
    return list.ok() && list->schedules_size() == 1 ? list->schedules(0) : v1::Schedule();
  }

  std::filesystem::path dir_;
  std::shared_ptr<StallingFileSystem> fs_ = std::make_shared<StallingFileSystem>();
  std::unique_ptr<rocksdb::Env> env_;
  std::unique_ptr<Storage> store_;
  SimulatedClock clock_;
  ServerMetrics metrics_;
  std::atomic<int> commands_{0};
};

TEST_F(SimulatedTimeTest, ScheduleRunsOncePerPeriodSkipsMissedAndBusyRuns) {
  AgentRegistry registry(&store_->agents(), &metrics_, AgentLimits(), &clock_);
  CaptureCoordinator captures(store_.get(), &registry, &metrics_, &clock_);
  CaptureScheduler scheduler(&store_->schedules(), &captures, &metrics_, &clock_);
  v1::CreateScheduleRequest request;
  request.set_job("train");
  request.set_every_ms(60'000);
  ASSERT_TRUE(scheduler.Create(request, AnonymousPrincipal()).ok());
  // Due at creation: with no agent the capture fails at once, and that counts as the run.
  ASSERT_TRUE(Soon([&] { return ScheduleOf(scheduler).runs() == 1; }));
  EXPECT_EQ(ScheduleOf(scheduler).last_outcome().rfind("failed: no process matched", 0), 0u)
      << ScheduleOf(scheduler).last_outcome();
  const int64_t created = ScheduleOf(scheduler).created_at_ns();
  EXPECT_EQ(ScheduleOf(scheduler).next_run_ns(), created + 60 * kSecond);

  // 59 s later nothing is due; at 60 s the second run starts, now with a target: RUNNING.
  ConnectAgent(registry, "n1", "train");
  clock_.Advance(59 * kSecond);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the loop looks (and finds nothing due)
  EXPECT_EQ(ScheduleOf(scheduler).runs(), 1);
  clock_.Advance(1 * kSecond);
  ASSERT_TRUE(Soon([&] { return ScheduleOf(scheduler).runs() == 2; }));
  EXPECT_EQ(ScheduleOf(scheduler).last_outcome(), "started");
  EXPECT_EQ(commands_.load(), 1);
  const std::string running = ScheduleOf(scheduler).last_capture_id();
  // A schedule's run says so, with its schedule (the always-on reasons: DESIGN.md).
  ASSERT_TRUE(captures.Get(running).ok());
  EXPECT_EQ(captures.Get(running)->reason(), v1::Capture::SCHEDULED);
  EXPECT_EQ(captures.Get(running)->schedule_id(), ScheduleOf(scheduler).schedule_id());

  // The next period, with that capture still running (its deadline is 60 s + grace away):
  // skipped, naming it; no second command.
  clock_.Advance(60 * kSecond);
  ASSERT_TRUE(Soon([&] { return ScheduleOf(scheduler).skipped() == 1; }));
  EXPECT_NE(ScheduleOf(scheduler).last_outcome().find("capture " + running + " of job train is still running"),
            std::string::npos)
      << ScheduleOf(scheduler).last_outcome();
  EXPECT_EQ(commands_.load(), 1);
  EXPECT_EQ(captures.Get(ScheduleOf(scheduler).last_capture_id())->reason(), v1::Capture::SCHEDULED) << "a skipped run too";

  // Ten minutes at once (the host stalled): one skip for the missed runs, no pile-up, and the
  // schedule goes on from the next period.
  const int64_t before = ScheduleOf(scheduler).next_run_ns();
  clock_.Advance(10 * 60 * kSecond);
  ASSERT_TRUE(Soon([&] { return ScheduleOf(scheduler).skipped() == 2; }));
  const v1::Schedule after = ScheduleOf(scheduler);
  EXPECT_NE(after.last_outcome().find("10 runs of this schedule came due"), std::string::npos) << after.last_outcome();
  EXPECT_EQ(after.runs(), 2);
  EXPECT_GT(after.next_run_ns(), clock_.Now());
  EXPECT_EQ((after.next_run_ns() - before) % (60 * kSecond), 0) << "still on the schedule's own grid";
}

TEST_F(SimulatedTimeTest, ACaptureFailsAtItsDeadlinePlusGraceAndLeavesMemoryAMinuteLater) {
  AgentRegistry registry(&store_->agents(), &metrics_, AgentLimits(), &clock_);
  CaptureCoordinator captures(store_.get(), &registry, &metrics_, &clock_);
  ConnectAgent(registry, "n1", "train");
  v1::StartCaptureRequest request;
  request.set_job("train");
  request.set_duration_ms(1000);  // deadline: max(60 s, 2 x duration) after the start
  auto capture = captures.Start(request);
  ASSERT_TRUE(capture.ok()) << capture.status();
  ASSERT_EQ(capture->state(), v1::Capture::RUNNING);
  EXPECT_EQ(capture->reason(), v1::Capture::MANUAL);
  const std::string id = capture->capture_id();
  // A Kineto target's capture starts once the job can have polled and warmed up.
  const int64_t lead = kKinetoStartLeadMs * 1'000'000;
  EXPECT_EQ(capture->start_time_unix_ns(), clock_.Now() + lead);
  EXPECT_EQ(capture->deadline_unix_ns(), clock_.Now() + lead + 60 * kSecond);

  clock_.Advance(lead + 60 * kSecond + 10 * kSecond);  // the deadline and the whole grace: not yet past
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(captures.Get(id)->state(), v1::Capture::RUNNING);
  clock_.Advance(kSecond / 2);  // past it, at the deadline loop's next look (twice a second)
  ASSERT_TRUE(Soon([&] { return captures.Get(id)->state() == v1::Capture::FAILED; }));
  EXPECT_EQ(captures.Get(id)->targets(0).error(), "agent never started the capture before the deadline");

  // Its final version reaches the store (written after the in-memory change, outside the lock).
  ASSERT_TRUE(Soon([&] {
    auto stored = store_->captures().Get(id);
    return stored.ok() && stored->state() == v1::Capture::FAILED;
  }));
  // A minute after the deadline it lives in the store only: a watcher is answered from there
  // (version INT64_MAX), still FAILED.
  const auto watched_from_store = [&] {
    int64_t version = 0;
    v1::Capture seen;
    return captures.WaitForChange(id, &version, std::chrono::milliseconds(0), &seen) && version == INT64_MAX &&
           seen.state() == v1::Capture::FAILED;
  };
  EXPECT_FALSE(watched_from_store()) << "kept in memory for watchers during the minute";
  clock_.Advance(61 * kSecond);
  EXPECT_TRUE(Soon(watched_from_store));
}

// Replicas whose published clocks (ReplicaInfo.clock_unix_ns) are read off simulated clocks.
class SimulatedReplicas : public Membership {
 public:
  void Add(const std::string& id, const Clock* clock) { clocks_[id] = clock; }
  absl::Status Join(const v1::ReplicaInfo&) override { return absl::OkStatus(); }
  void Leave() override {}
  bool IsLeader() const override { return true; }
  void SetAgents(int64_t) override {}
  absl::StatusOr<std::vector<v1::ReplicaInfo>> Replicas() override {
    std::vector<v1::ReplicaInfo> replicas;
    for (const auto& [id, clock] : clocks_) {
      v1::ReplicaInfo& info = replicas.emplace_back();
      info.set_replica_id(id);
      info.set_clock_unix_ns(clock->Now());
    }
    return replicas;
  }

 private:
  std::map<std::string, const Clock*> clocks_;
};

// Issue 45, finding 6: a replica whose clock is 300 s ahead of the one that started a capture
// saw its deadline long past and failed it at once. The replicas' published clocks say how far
// the starting replica's is: the deadline is kept on this replica's clock, and the command it
// sends its agents carries times on it.
TEST_F(SimulatedTimeTest, AReplicaWhoseClockIsAheadDoesNotFailAnotherReplicasCaptureEarly) {
  SimulatedClock ahead(clock_.Now() + 300 * kSecond);
  SimulatedReplicas replicas;
  replicas.Add("r1", &clock_);
  replicas.Add("r2", &ahead);
  AgentRegistry registry(&store_->agents(), &metrics_, AgentLimits(), &clock_);
  ConnectAgent(registry, "n1", "train");
  CaptureCoordinator started_here(store_.get(), &registry, &metrics_, &clock_, /*shared=*/true);
  started_here.UseReplicaClocks(&replicas, "r1");
  // The other replica, 300 s ahead, with the agent of node n2.
  AgentRegistry other_registry(&store_->agents(), &metrics_, AgentLimits(), &ahead);
  v1::ServerMessage sent;
  ConnectAgent(other_registry, "n2", "train", [&](const v1::ServerMessage& m) { return sent = m, true; });
  // The capture's targets: both nodes (what the catalog lists to the starting replica).
  ConnectAgent(registry, "n2", "train");
  CaptureCoordinator elsewhere(store_.get(), &other_registry, &metrics_, &ahead, /*shared=*/true);
  elsewhere.UseReplicaClocks(&replicas, "r2");

  v1::StartCaptureRequest request;
  request.set_job("train");
  request.set_duration_ms(1000);
  auto capture = started_here.Start(request);
  ASSERT_TRUE(capture.ok()) << capture.status();
  ASSERT_EQ(capture->targets_size(), 2);
  EXPECT_EQ(capture->started_by_replica(), "r1");
  const std::string id = capture->capture_id();
  ahead.Advance(20 * kSecond);  // the watch may bring it late: still the clocks' offset, not this delay
  clock_.Advance(20 * kSecond);
  elsewhere.StoredCaptureChanged(id);
  EXPECT_EQ(sent.capture().start_time_unix_ns(), capture->start_time_unix_ns() + 300 * kSecond)
      << "the command's times are on the sending replica's clock";
  EXPECT_EQ(sent.capture().deadline_unix_ns(), capture->deadline_unix_ns() + 300 * kSecond);

  ahead.Advance(kSecond);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the deadline loop looks twice a second
  EXPECT_EQ(elsewhere.Get(id)->state(), v1::Capture::RUNNING) << "not failed at once";
  // A replica that starts up ahead and finds the capture running measures the same offset.
  CaptureCoordinator restarted(store_.get(), &other_registry, &metrics_, &ahead, /*shared=*/true);
  restarted.UseReplicaClocks(&replicas, "r2");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(restarted.Get(id)->state(), v1::Capture::RUNNING);
  // At its deadline plus grace on its own clock it does fail, as the starting replica would.
  const int64_t lead = kKinetoStartLeadMs * 1'000'000;
  ahead.Advance(lead + 60 * kSecond + 10 * kSecond - 20 * kSecond);
  ASSERT_TRUE(Soon([&] { return elsewhere.Get(id)->state() == v1::Capture::FAILED; }));
}

TEST(ClusterClock, TheMedianOfThePublishedClocksDecidesAndTwoReplicasCannotTell) {
  constexpr int64_t s = 1'000'000'000;
  EXPECT_EQ(MedianClockOffset({0, -300 * s, -300 * s}), -300 * s) << "this one is 300 s ahead of the other two";
  EXPECT_EQ(MedianClockOffset({0, 0, 300 * s}), 0) << "the other one is off, not this one";
  EXPECT_EQ(MedianClockOffset({0, 300 * s}), 0) << "two cannot tell which is off";
  EXPECT_EQ(MedianClockOffset({0, -3 * s, -4 * s}), 0) << "within the trusted skew";
  EXPECT_EQ(MedianClockOffset({}), 0);
}

// A leader 300 s ahead of the other replicas (which ingested the profiles) ages them on the
// cluster's clock: a profile is not deleted 300 s early.
TEST_F(SimulatedTimeTest, ALeaderWhoseClockIsAheadAgesProfilesOnTheClustersClock) {
  v1::ProfileInfo info;
  info.set_profile_id("p");
  info.set_job("train");
  info.set_ingested_at_ns(clock_.Now());  // by a replica whose clock is right
  ASSERT_TRUE(store_->profiles().Commit(info, v1::ProfileSummary()).ok());
  clock_.Advance(kDay - 100 * kSecond);            // the cluster's time: 100 s short of the profile's day
  SimulatedClock leader(clock_.Now() + 300 * kSecond);  // the leader's: 300 s ahead of it
  SimulatedReplicas replicas;
  replicas.Add("r1", &clock_);
  replicas.Add("r2", &clock_);
  replicas.Add("leader", &leader);
  // The leader's own view: it subtracts itself from nothing (its offset to itself is 0).
  auto offset = [&] {
    std::vector<int64_t> offsets;
    const auto published = replicas.Replicas();
    for (const auto& r : *published) offsets.push_back(r.clock_unix_ns() - leader.Now());
    return MedianClockOffset(offsets);
  };
  RetentionPolicy policy;
  policy.retention_days = 1;
  policy.check_every_s = 60;
  prometheus::Registry registry;
  AgentRegistry agents(&store_->agents(), &metrics_, AgentLimits(), &leader);
  Retention retention(
      policy, store_.get(), &agents, [&](const std::string& id) { return store_->profiles().Delete(id); }, &registry,
      &leader, nullptr, offset);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(store_->profiles().Get("p").ok()) << "100 s short of its day on the cluster's clock";
  leader.Advance(2 * 60 * kSecond);
  clock_.Advance(2 * 60 * kSecond);
  ASSERT_TRUE(Soon([&] { return !store_->profiles().Get("p").ok(); }));
}

// A client retrying a start (after UNAVAILABLE, maybe on another replica) with its request id
// gets the capture the first call started: one capture, one command per target.
TEST_F(SimulatedTimeTest, AStartRepeatedWithItsRequestIdAnswersTheFirstCapture) {
  AgentRegistry registry(&store_->agents(), &metrics_, AgentLimits(), &clock_);
  CaptureCoordinator captures(store_.get(), &registry, &metrics_, &clock_);
  ConnectAgent(registry, "n1", "train");
  v1::StartCaptureRequest request;
  request.set_job("train");
  request.set_request_id("retry-1");
  auto first = captures.Start(request);
  ASSERT_TRUE(first.ok()) << first.status();
  auto again = captures.Start(request);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->capture_id(), first->capture_id());
  EXPECT_EQ(commands_.load(), 1);
  // Another replica (another coordinator on the same store) finds it in the store.
  CaptureCoordinator other(store_.get(), &registry, &metrics_, &clock_);
  auto elsewhere = other.Start(request);
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();
  EXPECT_EQ(elsewhere->capture_id(), first->capture_id());
  EXPECT_EQ(commands_.load(), 1);
  // Another id is another capture; so is the same id past the 10 minutes a retry may take.
  request.set_request_id("retry-2");
  auto second = captures.Start(request);
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second->capture_id(), first->capture_id());
  clock_.Advance(11 * 60 * kSecond);
  request.set_request_id("retry-1");
  auto late = captures.Start(request);
  ASSERT_TRUE(late.ok());
  EXPECT_NE(late->capture_id(), first->capture_id());
  request.set_request_id("not an id");
  EXPECT_EQ(captures.Start(request).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SimulatedTimeTest, RetentionRemovesProfilesPastTheirAgeAsTimeGoesOn) {
  const auto commit = [&](const std::string& id, const std::string& job, int64_t age) {
    v1::ProfileInfo info;
    info.set_profile_id(id);
    info.set_job(job);
    info.set_ingested_at_ns(clock_.Now() - age);
    ASSERT_TRUE(store_->profiles().Commit(info, v1::ProfileSummary()).ok());
  };
  commit("old", "train", 2 * kDay);
  commit("young", "train", kDay / 2);
  commit("kept", "eval", 100 * kDay);  // eval keeps its profiles forever
  RetentionPolicy policy;
  policy.retention_days = 1;
  policy.job_days["eval"] = 0;
  policy.check_every_s = 60;
  prometheus::Registry registry;
  AgentRegistry agents(&store_->agents(), &metrics_, AgentLimits(), &clock_);
  Retention retention(
      policy, store_.get(), &agents, [&](const std::string& id) { return store_->profiles().Delete(id); }, &registry,
      &clock_);
  const auto exists = [&](const std::string& id) { return store_->profiles().Get(id).ok(); };
  ASSERT_TRUE(Soon([&] { return !exists("old"); })) << "the first pass runs at once";
  EXPECT_TRUE(exists("young"));
  EXPECT_TRUE(exists("kept"));
  clock_.Advance(kDay / 2 - 61 * kSecond);  // young is a minute short of a day at the next pass
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(exists("young"));
  clock_.Advance(2 * 60 * kSecond);  // the next pass after its day is up
  ASSERT_TRUE(Soon([&] { return !exists("young"); }));
  EXPECT_TRUE(exists("kept"));
}

TEST_F(SimulatedTimeTest, AgentsAreForgottenOnlyAfterTheirExpiry) {
  AgentRegistry registry(&store_->agents(), &metrics_, AgentLimits(), &clock_);
  const int64_t session = ConnectAgent(registry, "gone", "train");
  registry.Disconnected("gone", session);
  ConnectAgent(registry, "here", "train");
  clock_.Advance(7 * kDay);
  EXPECT_EQ(registry.ForgetDeparted(clock_.Now() - 7 * kDay), 0) << "last seen exactly 7 days ago";
  clock_.Advance(1);
  EXPECT_EQ(registry.ForgetDeparted(clock_.Now() - 7 * kDay), 1);
  ASSERT_EQ(registry.List().size(), 1u);
  EXPECT_EQ(registry.List()[0].node(), "here") << "a connected agent is never forgotten";
}

// Before: the scheduler stored a schedule and the coordinator a capture under the lock that
// listing takes, so `fleetprof schedules` and `captures` waited for the disk.
TEST_F(SimulatedTimeTest, ListingAnswersWhileAStorageWriteIsHeldUp) {
  AgentRegistry registry(&store_->agents(), &metrics_, AgentLimits(), &clock_);
  CaptureCoordinator captures(store_.get(), &registry, &metrics_, &clock_);
  CaptureScheduler scheduler(&store_->schedules(), &captures, &metrics_, &clock_);
  v1::CreateScheduleRequest request;
  request.set_job("train");
  request.set_every_ms(60'000);
  ASSERT_TRUE(scheduler.Create(request, AnonymousPrincipal()).ok());
  ASSERT_TRUE(Soon([&] { return ScheduleOf(scheduler).runs() == 1; }));
  ConnectAgent(registry, "n1", "train");

  fs_->delay_ms = 2000;
  clock_.Advance(60 * kSecond);  // the scheduler's run stores a capture and the schedule: held 2 s
  ASSERT_TRUE(Soon([&] { return fs_->stalled.load() > 0; }));
  // The best of three tries, all inside the 2 s stall: a busy test machine may delay one.
  auto fastest = std::chrono::steady_clock::duration::max();
  for (int i = 0; i < 3; ++i) {
    const auto started = std::chrono::steady_clock::now();
    auto schedules = scheduler.List(v1::ListSchedulesRequest());
    captures.RunningCaptureOf("train");
    auto agents = registry.ListAgents();
    fastest = std::min(fastest, std::chrono::steady_clock::now() - started);
    EXPECT_TRUE(schedules.ok());
    ASSERT_TRUE(agents.ok()) << agents.status();
    EXPECT_EQ(agents->agents_size(), 1);
  }
  EXPECT_LT(fastest, std::chrono::milliseconds(50))
      << std::chrono::duration_cast<std::chrono::milliseconds>(fastest).count() << " ms while a write was held up";
  EXPECT_GT(fs_->delay_ms.load(), 0);
  fs_->delay_ms = 0;
  ASSERT_TRUE(Soon([&] { return ScheduleOf(scheduler).runs() == 2; }));
}

// The drain (Server::Drain) stops the scheduler before storage is flushed: the run in progress
// ends, capture started and schedule stored, before Stop returns; the run due behind it in the
// same tick stays due, and nothing runs after, whatever the clock does.
TEST_F(SimulatedTimeTest, SchedulerStopWaitsForTheRunInProgressAndRunsNothingAfter) {
  AgentRegistry registry(&store_->agents(), &metrics_, AgentLimits(), &clock_);
  CaptureCoordinator captures(store_.get(), &registry, &metrics_, &clock_);
  Gate agent;
  Events events;
  const auto send = [&](const v1::ServerMessage&) {
    ++commands_;
    agent.Pass();
    events.Note("command sent");
    return true;
  };
  ConnectAgent(registry, "n1", "train", send);
  ConnectAgent(registry, "n2", "eval", send);
  // Two schedules due at once, stored before the scheduler starts: its first tick runs both.
  for (const char* job : {"train", "eval"}) {
    v1::Schedule schedule;
    schedule.set_schedule_id(std::string("s-") + job);
    schedule.set_job(job);
    schedule.set_every_ms(60'000);
    schedule.set_duration_ms(1000);
    schedule.set_created_at_ns(clock_.Now());
    schedule.set_next_run_ns(clock_.Now());
    ASSERT_TRUE(store_->schedules().Put(schedule).ok());
  }
  agent.HoldNext();
  CaptureScheduler scheduler(&store_->schedules(), &captures, &metrics_, &clock_);
  ASSERT_TRUE(agent.WaitUntilHeld()) << "the first run never sent its command";
  StopWhileHeld(agent, events, [&] { scheduler.Stop(); }, [&] { return scheduler.stopping(); });
  EXPECT_EQ(events.Seen(), (std::vector<std::string>{"command sent", "Stop returned"}))
      << "Stop returned before the run in progress, or a run started after it";

  // The held run is whole, in memory and in the store; the other is still due, unrun.
  auto stored = store_->schedules().List();
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->size(), 2u);
  int ran = 0;
  for (const v1::Schedule& s : *stored) {
    if (s.runs() == 1) {
      ++ran;
      EXPECT_EQ(s.last_outcome(), "started");
      EXPECT_EQ(s.next_run_ns(), clock_.Now() + 60 * kSecond);
      EXPECT_TRUE(captures.Get(s.last_capture_id()).ok());
    } else {
      EXPECT_EQ(s.runs(), 0);
      EXPECT_EQ(s.next_run_ns(), clock_.Now()) << "left due for the next leader or start";
    }
  }
  EXPECT_EQ(ran, 1);

  // Nothing after: not the loop as periods pass, not a direct tick, not a new schedule's nudge.
  clock_.Advance(5 * 60 * kSecond);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(scheduler.RunDueSchedules(clock_.Now()), clock_.Now() + kSecond);
  v1::CreateScheduleRequest request;
  request.set_job("train");
  request.set_every_ms(60'000);
  ASSERT_TRUE(scheduler.Create(request, AnonymousPrincipal()).ok()) << "still stored for the next leader";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(commands_.load(), 1);
  auto listed = scheduler.List(v1::ListSchedulesRequest());
  ASSERT_TRUE(listed.ok());
  int runs = 0;
  for (const v1::Schedule& s : listed->schedules()) runs += static_cast<int>(s.runs() + s.skipped());
  EXPECT_EQ(runs, 1);
  scheduler.Stop();  // again: harmless; the destructor after it too
}

// Retention stops between two deletions, not after its pass: the one in progress ends before
// Stop returns, the profiles it had left stay, and no pass runs after.
TEST_F(SimulatedTimeTest, RetentionStopWaitsForTheDeleteInProgressAndRemovesNothingAfter) {
  for (const char* id : {"p1", "p2", "p3"}) {
    v1::ProfileInfo info;
    info.set_profile_id(id);
    info.set_job("train");
    info.set_ingested_at_ns(clock_.Now() - 2 * kDay);
    ASSERT_TRUE(store_->profiles().Commit(info, v1::ProfileSummary()).ok());
  }
  RetentionPolicy policy;
  policy.retention_days = 1;
  policy.check_every_s = 60;
  prometheus::Registry registry;
  AgentRegistry agents(&store_->agents(), &metrics_, AgentLimits(), &clock_);
  Gate deletion;
  Events events;
  std::atomic<int> deletes{0};
  deletion.HoldNext();
  Retention retention(
      policy, store_.get(), &agents,
      [&](const std::string& id) {
        ++deletes;
        deletion.Pass();
        absl::Status s = store_->profiles().Delete(id);
        events.Note("deleted");
        return s;
      },
      &registry, &clock_);
  ASSERT_TRUE(deletion.WaitUntilHeld()) << "the first pass deleted nothing";
  StopWhileHeld(deletion, events, [&] { retention.Stop(); }, [&] { return retention.stopping(); });
  EXPECT_EQ(events.Seen(), (std::vector<std::string>{"deleted", "Stop returned"}))
      << "Stop returned before the delete in progress, or a delete started after it";
  int left = 0;
  for (const char* id : {"p1", "p2", "p3"}) left += store_->profiles().Get(id).ok() ? 1 : 0;
  EXPECT_EQ(left, 2) << "the pass went on past the delete in progress";

  retention.RunOnce();
  retention.Nudge();
  clock_.Advance(10 * 60 * kSecond);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(deletes.load(), 1);
  left = 0;
  for (const char* id : {"p1", "p2", "p3"}) left += store_->profiles().Get(id).ok() ? 1 : 0;
  EXPECT_EQ(left, 2);
  retention.Stop();
}

// The coordinator stops last before the flush: the deadline pass in progress stores its
// failure before Stop returns; after it no capture starts, no update or skipped run is kept,
// and no deadline is checked.
TEST_F(SimulatedTimeTest, CoordinatorStopWaitsForTheDeadlinePassInProgressAndWritesNothingAfter) {
  AgentRegistry registry(&store_->agents(), &metrics_, AgentLimits(), &clock_);
  CaptureCoordinator captures(store_.get(), &registry, &metrics_, &clock_);
  ConnectAgent(registry, "n1", "train");
  ConnectAgent(registry, "n2", "eval");
  v1::StartCaptureRequest short_request;
  short_request.set_job("train");
  short_request.set_duration_ms(1000);  // deadline 60 s after the start
  auto overdue = captures.Start(short_request);
  ASSERT_TRUE(overdue.ok()) << overdue.status();
  v1::StartCaptureRequest long_request;
  long_request.set_job("eval");
  long_request.set_duration_ms(CaptureCoordinator::kMaxDurationMs);  // deadline 20 min after it
  auto running = captures.Start(long_request);
  ASSERT_TRUE(running.ok()) << running.status();
  ASSERT_EQ(running->state(), v1::Capture::RUNNING);

  // The deadline pass fails the first capture and stores that, on a disk that holds it 1 s.
  // Stop is called once the pass has failed the capture in memory: the pass holds its write
  // lock from before that change until its store write returns, so from then on Stop must wait
  // for the write. (A stalled write alone could be another writer's, the agent registry's, with
  // the pass not begun: then Stop would rightly keep it from ever running.)
  fs_->delay_ms = 1000;
  clock_.Advance(kKinetoStartLeadMs * 1'000'000 + 71 * kSecond);
  ASSERT_TRUE(Soon([&] {
    auto seen = captures.Get(overdue->capture_id());
    return seen.ok() && seen->state() == v1::Capture::FAILED;
  })) << "the deadline pass did not fail the overdue capture";
  captures.Stop();
  auto stored = store_->captures().Get(overdue->capture_id());
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->state(), v1::Capture::FAILED) << "Stop returned before the pass's store write";
  fs_->delay_ms = 0;

  auto refused = captures.Start(short_request);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  v1::CaptureUpdate update;
  update.set_capture_id(running->capture_id());
  update.set_target(running->targets(0).target());
  update.set_state(v1::CaptureTarget::RUNNING);
  captures.OnUpdate("n2", update);
  EXPECT_EQ(captures.Get(running->capture_id())->targets(0).state(), v1::CaptureTarget::PENDING);
  const v1::Capture skipped = captures.RecordSkipped(long_request, CaptureCoordinator::Origin::Scheduled("s1"), "skipped");
  EXPECT_FALSE(store_->captures().Get(skipped.capture_id()).ok()) << "a skipped run stored after Stop";
  clock_.Advance(30 * 60 * kSecond);  // far past the second capture's deadline
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(captures.Get(running->capture_id())->state(), v1::Capture::RUNNING) << "a deadline pass after Stop";
  EXPECT_EQ(store_->captures().Get(running->capture_id())->state(), v1::Capture::RUNNING);
  EXPECT_EQ(commands_.load(), 2);
  captures.Stop();
}

// Issue 39: DeleteSchedule needed only the capture scope, so any capture token deleted other
// principals' schedules. The creator, or an admin, deletes one; the refusal says who may.
TEST_F(SimulatedTimeTest, AScheduleIsDeletedOnlyByItsCreatorOrAnAdmin) {
  AgentRegistry registry(&store_->agents(), &metrics_, AgentLimits(), &clock_);
  CaptureCoordinator captures(store_.get(), &registry, &metrics_, &clock_);
  CaptureScheduler scheduler(&store_->schedules(), &captures, &metrics_, &clock_);
  const auto principal = [](const std::string& name, std::initializer_list<Scope> scopes) {
    Principal p;
    p.name = name;
    p.authenticated = true;
    for (Scope scope : scopes) p.scopes |= 1u << static_cast<int>(scope);
    return p;
  };
  const Principal alice = principal("alice", {Scope::kCapture});
  const Principal mallory = principal("mallory", {Scope::kCapture, Scope::kRead});
  const Principal admin = principal("ops", {Scope::kAdmin});
  v1::CreateScheduleRequest request;
  request.set_job("train");
  request.set_every_ms(60'000);
  absl::StatusOr<v1::Schedule> first = scheduler.Create(request, alice);
  absl::StatusOr<v1::Schedule> second = scheduler.Create(request, alice);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->created_by(), "alice");
  const auto remove = [&](const v1::Schedule& s, const Principal& caller) {
    v1::DeleteScheduleRequest del;
    del.set_schedule_id(s.schedule_id());
    return scheduler.Delete(del, caller).status();
  };
  const absl::Status refused = remove(*first, mallory);
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << refused;
  EXPECT_NE(refused.message().find("created by 'alice': only its creator or a principal with the admin scope"),
            std::string::npos)
      << refused;
  EXPECT_EQ(scheduler.List(v1::ListSchedulesRequest())->schedules_size(), 2) << "still there";
  EXPECT_TRUE(remove(*first, alice).ok());
  EXPECT_TRUE(remove(*second, admin).ok());
  EXPECT_EQ(remove(*second, admin).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace fleetprof
