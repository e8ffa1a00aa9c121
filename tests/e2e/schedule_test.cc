// Scheduled captures end to end: the real server and agent, the XLA profiler stand-in. One
// capture per period, kept across a server restart, a missed run skipped rather than piled
// up, and a run skipped (with its reason in captures) while a capture of the job still runs.
// Every check is on the server's own records (its capture times, its schedule counters) or an
// order of two events; none on how long something took, which a loaded machine changes.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/e2e/json_array.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"
#include "tests/xprof/profiler_standin_process.h"

namespace fleetprof::testing {
namespace {

// The reasons CaptureScheduler writes into a SKIPPED run.
constexpr char kMissedReason[] = "while the server was not running";
constexpr char kBusyReason[] = " is still running (never two captures of one job at once)";

struct ScheduledRun {
  std::string capture_id, state, error, schedule_id;
  int64_t created_at_ns = 0;
  std::vector<std::string> profile_ids;
};

// The job's captures, oldest first (the scheduler makes them one tick at a time, so this is
// the order it made them in).
std::vector<ScheduledRun> Runs(TestCluster& cluster, const std::string& job) {
  CommandResult r = cluster.Cli({"captures", "--job", job, "--limit", "1000", "--json"});
  std::vector<ScheduledRun> runs;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (r.exit_code != 0 || parser.parse(r.out).get(doc) != simdjson::SUCCESS) return runs;
  for (simdjson::dom::element c : Array(doc["captures"])) {
    ScheduledRun run;
    run.capture_id = std::string(c["capture_id"].get_string().value());
    run.state = std::string(c["state"].get_string().value());
    run.error = std::string(c["error"].get_string().value());
    run.schedule_id = std::string(c["schedule_id"].get_string().value());
    run.created_at_ns = c["created_at_ns"].get_int64().value();
    for (simdjson::dom::element t : Array(c["targets"])) {
      const std::string id(t["profile_id"].get_string().value());
      if (!id.empty()) run.profile_ids.push_back(id);
    }
    runs.push_back(std::move(run));
  }
  std::sort(runs.begin(), runs.end(), [](const ScheduledRun& a, const ScheduledRun& b) { return a.created_at_ns < b.created_at_ns; });
  return runs;
}

int Count(const std::vector<ScheduledRun>& runs, const std::string& state) {
  return static_cast<int>(std::count_if(runs.begin(), runs.end(), [&](const ScheduledRun& r) { return r.state == state; }));
}

bool IsMissedSkip(const ScheduledRun& r) { return r.state == "SKIPPED" && r.error.find(kMissedReason) != std::string::npos; }

// A skip because capture `running` of the job still ran.
bool IsBusySkipOf(const ScheduledRun& r, const std::string& running) {
  return r.state == "SKIPPED" && r.error.find("capture " + running + " of job ") != std::string::npos &&
         r.error.find(kBusyReason) != std::string::npos;
}

// The schedule as `fleetprof schedules --json` lists it; a counter the JSON leaves out is 0.
struct ListedSchedule {
  bool found = false;
  int64_t created_at_ns = 0, runs = 0, skipped = 0;
};

ListedSchedule ListSchedule(TestCluster& cluster, const std::string& id) {
  ListedSchedule listed;
  CommandResult r = cluster.Cli({"schedules", "--json"});
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (r.exit_code != 0 || parser.parse(r.out).get(doc) != simdjson::SUCCESS) return listed;
  for (simdjson::dom::element s : Array(doc["schedules"])) {
    std::string_view schedule_id;
    if (s["schedule_id"].get(schedule_id) != simdjson::SUCCESS || schedule_id != id) continue;
    listed.found = true;
    int64_t value = 0;
    if (s["created_at_ns"].get(value) == simdjson::SUCCESS) listed.created_at_ns = value;
    if (s["runs"].get(value) == simdjson::SUCCESS) listed.runs = value;
    if (s["skipped"].get(value) == simdjson::SUCCESS) listed.skipped = value;
  }
  return listed;
}

int64_t WallNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class ScheduleTest : public ::testing::Test {
 protected:
  // The server, an agent, and a JAX stand-in of job `job` whose captures take `sleep_ms` and,
  // with `release_file`, last until that file exists.
  void StartJob(const std::string& job, int sleep_ms, const std::string& release_file = "") {
    FLEETPROF_REQUIRE_PATH(XPROF_PYTHON);
    FLEETPROF_REQUIRE(PythonHasGrpc(), XPROF_PYTHON << " able to import grpc and google.protobuf (Debian python3-grpcio)");
    FLEETPROF_REQUIRE_PATH(CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb"));
    ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
    StandInOptions options;
    options.xspace_path = CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb");
    options.sleep_ms = sleep_ms;
    options.release_file = release_file;
    const absl::Status started = standin_.Start(options, cluster_.root() + "/standin");
    ASSERT_TRUE(started.ok()) << started;
    ASSERT_GE(cluster_.StartAgent({"--node=sched-node", "--target=job=" + job + ",xprof=" + standin_.address()}), 0);
    ASSERT_TRUE(Eventually(15, [&] {
      return cluster_.Cli({"agents", "--json"}).out.find("\"job\":\"" + job + "\"") != std::string::npos;
    }));
  }

  std::string Schedule(const std::string& job, const std::string& every, const std::string& duration_ms) {
    CommandResult r = cluster_.Cli({"schedule", "--job", job, "--every", every, "--duration_ms", duration_ms, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return JsonStringField(r.out, "schedule_id");
  }

  // A counter of the stand-in's record; -1 when it has none.
  int64_t Recorded(const std::string& key) const {
    const std::optional<std::string> value = standin_.Recorded(key);
    return value.has_value() ? std::stoll(*value) : -1;
  }

  TestCluster cluster_;
  ProfilerStandIn standin_;
};

TEST_F(ScheduleTest, OneProfilePerPeriodAcrossARestartAndMissedRunsAreSkipped) {
  StartJob("periodic", 100);
  if (HasFatalFailure() || IsSkipped()) return;
  const int64_t every_ns = 2'000'000'000;
  const std::string id = Schedule("periodic", "2s", "200");
  ASSERT_FALSE(id.empty());
  std::vector<ScheduledRun> runs;
  ASSERT_TRUE(Eventually(60, [&] { return Count(runs = Runs(cluster_, "periodic"), "DONE") >= 3; }))
      << cluster_.Cli({"captures", "--json"}).out << cluster_.ServerLog();
  const int64_t created = ListSchedule(cluster_, id).created_at_ns;
  ASSERT_GT(created, 0);

  // Every run belongs to the schedule, a DONE one indexed one profile, and no period has two
  // runs: the scheduler starts (or skips) a run only once its due time has come, and moves the
  // next due time on by at least a period each time, so its i-th run (skips counted) was made
  // no earlier than period i began, both times on the server's clock. A run started late (a
  // loaded host) still counts for its own period, so this holds however late the ticks are;
  // grouping runs by the period their creation time falls in would not. A skip names why.
  auto expect_one_per_period = [&](const std::vector<ScheduledRun>& all) {
    for (size_t i = 0; i < all.size(); ++i) {
      const ScheduledRun& r = all[i];
      EXPECT_EQ(r.schedule_id, id);
      EXPECT_GE(r.created_at_ns, created + static_cast<int64_t>(i) * every_ns)
          << "run " << i << " (" << r.capture_id << ") came before its period: two runs in one period";
      if (r.state == "DONE") {
        EXPECT_EQ(r.profile_ids.size(), 1u) << r.capture_id;
      }
      if (r.state != "SKIPPED" || IsMissedSkip(r)) continue;
      // Skipped because a run of the schedule still ran (a slow capture on a loaded machine).
      const bool names_a_run = std::any_of(all.begin(), all.end(), [&](const ScheduledRun& o) {
        return o.state != "SKIPPED" && IsBusySkipOf(r, o.capture_id);
      });
      EXPECT_TRUE(names_a_run) << r.error;
    }
  };
  expect_one_per_period(runs);

  // Down for longer than the 5 s grace: the runs that came due are skipped once, not replayed.
  // Seven seconds down is the grace plus a period: the next due time the server stored was at
  // most a period after its last tick, so at the restart it lies more than 5 s (at least three
  // periods' runs) in the past, however slowly the server stops and starts.
  const std::string addr = cluster_.grpc_addr();
  cluster_.StopServer();
  const int64_t stopped_at = WallNanos();  // every capture of the first server was made before
  std::this_thread::sleep_for(std::chrono::seconds(7));
  ASSERT_TRUE(cluster_.StartServer(addr)) << cluster_.ServerLog();
  std::vector<ScheduledRun> after;
  ASSERT_TRUE(Eventually(90, [&] {
    runs = Runs(cluster_, "periodic");
    after.clear();
    std::copy_if(runs.begin(), runs.end(), std::back_inserter(after),
                 [&](const ScheduledRun& r) { return r.created_at_ns > stopped_at; });
    return Count(after, "DONE") >= 2;
  })) << cluster_.Cli({"captures", "--json"}).out << cluster_.ServerLog();
  // The restarted server's first run is one skip standing for every run missed meanwhile.
  const ScheduledRun& first_after = after.front();
  EXPECT_EQ(first_after.state, "SKIPPED") << first_after.error;
  EXPECT_TRUE(IsMissedSkip(first_after)) << first_after.error;
  EXPECT_EQ(first_after.error.rfind("skipped: ", 0), 0u) << first_after.error;
  EXPECT_GE(std::atoi(first_after.error.c_str() + std::string("skipped: ").size()), 3)
      << "one skip for the runs missed while down: " << first_after.error;
  expect_one_per_period(runs);

  // The schedule kept its counts across the restart: its runs and skips are the captures it
  // made. (The list is read after the schedule, so it holds every capture counted; a tick
  // between the two reads adds one, and the pair is read again.)
  ListedSchedule counted;
  std::vector<ScheduledRun> made;
  EXPECT_TRUE(Eventually(30, [&] {
    counted = ListSchedule(cluster_, id);
    made = Runs(cluster_, "periodic");
    const int64_t skipped = Count(made, "SKIPPED");
    return counted.skipped == skipped && counted.runs == static_cast<int64_t>(made.size()) - skipped;
  })) << "the schedule counts runs " << counted.runs << ", skipped " << counted.skipped << "; its captures: "
      << made.size() << ", skipped " << Count(made, "SKIPPED");
  EXPECT_GE(counted.skipped, 1);

  // Unschedule stops it.
  CommandResult removed = cluster_.Cli({"unschedule", id, "--json"});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_EQ(cluster_.Cli({"schedules", "--json"}).out, "{\"schedules\":[]}\n");
  CommandResult again = cluster_.Cli({"unschedule", id});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("not found"), std::string::npos) << again.err;
  const std::string metrics = cluster_.Cli({"profiles", "--job", "periodic", "--json"}).out;
  EXPECT_NE(metrics.find("\"capture_id\""), std::string::npos);
}

// Race-free whatever the machine's load: the stand-in holds the schedule's first capture until
// the test creates the release file, and until the stand-in answers the capture's target cannot
// end, so the capture is RUNNING on the server for as long as the test needs. Every run that
// comes due meanwhile must find it running; the test waits for two such skips in the server's
// own capture records before it releases it. No duration is compared with another (a 2.5 s
// capture against a 1 s period was, and a starved agent or scheduler could reorder them).
TEST_F(ScheduleTest, ARunWhileACaptureOfTheJobStillRunsIsSkippedWithItsReason) {
  const std::string release = cluster_.root() + "/busy.release";
  StartJob("busy", 100, release);
  if (HasFatalFailure() || IsSkipped()) return;
  const std::string id = Schedule("busy", "1s", "100");
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(Eventually(60, [&] { return Recorded("profile_calls") >= 1; }))
      << "the first run never reached the profiler: " << cluster_.Cli({"captures", "--json"}).out << standin_.Log();

  // Held: the job's one started capture is the first run, and it runs.
  std::vector<ScheduledRun> runs = Runs(cluster_, "busy");
  ASSERT_FALSE(runs.empty());
  const ScheduledRun held = runs.front();
  ASSERT_EQ(held.state, "RUNNING") << held.capture_id << " " << held.error;
  ASSERT_TRUE(Eventually(60, [&] {
    runs = Runs(cluster_, "busy");
    return std::count_if(runs.begin(), runs.end(), [&](const ScheduledRun& r) { return IsBusySkipOf(r, held.capture_id); }) >= 2;
  })) << cluster_.Cli({"captures", "--json"}).out << cluster_.ServerLog();
  for (const ScheduledRun& r : runs) {
    EXPECT_EQ(r.schedule_id, id) << r.capture_id;
    if (r.capture_id == held.capture_id) continue;
    // Every later run was skipped naming the held capture (or, had the scheduler itself stalled
    // past its 5 s grace, skipped as missed): none started beside it.
    EXPECT_TRUE(IsBusySkipOf(r, held.capture_id) || IsMissedSkip(r)) << r.capture_id << " " << r.state << " " << r.error;
  }

  // Released, the held capture ends and the schedule's next run captures the job again.
  std::ofstream(release).put('\n');
  ASSERT_TRUE(Eventually(60, [&] { return Count(runs = Runs(cluster_, "busy"), "DONE") >= 2; }))
      << cluster_.Cli({"captures", "--json"}).out << cluster_.ServerLog();
  EXPECT_EQ(runs.front().capture_id, held.capture_id);
  EXPECT_EQ(runs.front().state, "DONE");
  for (const ScheduledRun& r : runs) {
    if (r.state != "SKIPPED" || IsMissedSkip(r)) continue;
    EXPECT_NE(r.error.find(" of job busy is still running"), std::string::npos) << r.error;
    // It names the capture that was running, which is one of the schedule's own.
    const bool names_a_run = std::any_of(runs.begin(), runs.end(), [&](const ScheduledRun& o) {
      return o.state != "SKIPPED" && IsBusySkipOf(r, o.capture_id);
    });
    EXPECT_TRUE(names_a_run) << r.error;
  }
  // The profiler itself was never asked for a second capture while one ran.
  EXPECT_EQ(Recorded("refused_busy"), 0) << standin_.Log();
  CommandResult unscheduled = cluster_.Cli({"unschedule", id});
  EXPECT_EQ(unscheduled.exit_code, 0) << unscheduled.err;
}

TEST_F(ScheduleTest, BadSchedulesGiveOneClearError) {
  ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"schedule", "--job", "j", "--every", "10ms"}, "between 1s and 168h"},
      {{"schedule", "--job", "j", "--every", "soon"}, "wants a duration"},
      {{"schedule", "--every", "1m"}, "usage: fleetprof schedule"},
      {{"schedule", "--job", "j", "--every", "1m", "--duration_ms", "-4"}, "duration_ms"},
      {{"unschedule", "s-nope"}, "not found"},
  };
  for (const auto& [args, message] : cases) {
    CommandResult r = cluster_.Cli(args);
    EXPECT_NE(r.exit_code, 0) << args[0];
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace fleetprof::testing
