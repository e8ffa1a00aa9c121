// Scheduled captures end to end: the real server and agent, the XLA profiler stand-in. One
// capture per period, kept across a server restart, a missed run skipped rather than piled
// up, and a run skipped (with its reason in captures) while a capture of the job still runs.

#include <algorithm>
#include <chrono>
#include <thread>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/e2e/json_array.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

const char kPython[] = "/usr/bin/python3";


struct ScheduledRun {
  std::string capture_id, state, error, schedule_id;
  int64_t created_at_ns = 0;
  std::vector<std::string> profile_ids;
};

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

class ScheduleTest : public ::testing::Test {
 protected:
  // The server, an agent, and a JAX stand-in of job `job` whose profiles take `sleep_ms`.
  void StartJob(const std::string& job, int sleep_ms) {
    FLEETPROF_REQUIRE_PATH(kPython);
    FLEETPROF_REQUIRE_PATH(CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb"));
    ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
    const std::string ready = cluster_.root() + "/standin.ready";
    job_.Start({kPython, std::string(FLEETPROF_SOURCE_DIR) + "/tests/xprof/profiler_standin.py", "--mode", "emit",
                "--record", cluster_.root() + "/requests.json", "--ready", ready, "--sleep_ms",
                std::to_string(sleep_ms), "--xspace", CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb")},
               cluster_.root() + "/standin.log");
    const std::string port_json = WaitForFile(ready, 30);
    ASSERT_FALSE(port_json.empty()) << "profiler stand-in did not start";
    const std::string port(absl::StripAsciiWhitespace(
        port_json.substr(port_json.find(':') + 1, port_json.find('}') - port_json.find(':') - 1)));
    ASSERT_GE(cluster_.StartAgent({"--node=sched-node", "--target=job=" + job + ",xprof=127.0.0.1:" + port}), 0);
    ASSERT_TRUE(Eventually(15, [&] {
      return cluster_.Cli({"agents", "--json"}).out.find("\"job\":\"" + job + "\"") != std::string::npos;
    }));
  }

  std::string Schedule(const std::string& job, const std::string& every, const std::string& duration_ms) {
    CommandResult r = cluster_.Cli({"schedule", "--job", job, "--every", every, "--duration_ms", duration_ms, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return JsonStringField(r.out, "schedule_id");
  }

  TestCluster cluster_;
  ChildProcess job_;
};

TEST_F(ScheduleTest, OneProfilePerPeriodAcrossARestartAndMissedRunsAreSkipped) {
  StartJob("periodic", 100);
  const int64_t every_ns = 2'000'000'000;
  const std::string id = Schedule("periodic", "2s", "200");
  ASSERT_FALSE(id.empty());
  std::vector<ScheduledRun> runs;
  ASSERT_TRUE(Eventually(60, [&] { return Count(runs = Runs(cluster_, "periodic"), "DONE") >= 3; }))
      << cluster_.Cli({"captures", "--json"}).out << cluster_.ServerLog();

  // Every run belongs to the schedule and indexed one profile; no period has two runs.
  CommandResult listed = cluster_.Cli({"schedules", "--json"});
  const int64_t created = [&] {
    simdjson::dom::parser p;
    return p.parse(listed.out)["schedules"].at(0)["created_at_ns"].get_int64().value();
  }();
  auto expect_one_per_period = [&](const std::vector<ScheduledRun>& all) {
    std::vector<int64_t> periods;
    for (const ScheduledRun& r : all) {
      EXPECT_EQ(r.schedule_id, id);
      if (r.state == "SKIPPED") continue;
      periods.push_back((r.created_at_ns - created) / every_ns);
      if (r.state == "DONE") EXPECT_EQ(r.profile_ids.size(), 1u) << r.capture_id;
    }
    EXPECT_TRUE(std::adjacent_find(periods.begin(), periods.end()) == periods.end()) << "two runs in one period";
  };
  expect_one_per_period(runs);
  EXPECT_EQ(Count(runs, "SKIPPED"), 0);

  // Down for longer than the 5 s grace: the runs that came due are skipped once, not replayed.
  const std::string addr = cluster_.grpc_addr();
  cluster_.StopServer();
  std::this_thread::sleep_for(std::chrono::seconds(7));
  const size_t before_restart = runs.size();
  ASSERT_TRUE(cluster_.StartServer(addr)) << cluster_.ServerLog();
  ASSERT_TRUE(Eventually(60, [&] {
    runs = Runs(cluster_, "periodic");
    int done_after = 0;
    for (size_t i = before_restart; i < runs.size(); ++i) done_after += runs[i].state == "DONE";
    return done_after >= 2;
  })) << cluster_.Cli({"captures", "--json"}).out << cluster_.ServerLog();
  ASSERT_GT(runs.size(), before_restart);
  const ScheduledRun& first_after = runs[before_restart];
  EXPECT_EQ(first_after.state, "SKIPPED") << first_after.error;
  EXPECT_NE(first_after.error.find("while the server was not running"), std::string::npos) << first_after.error;
  EXPECT_EQ(Count(runs, "SKIPPED"), 1) << "missed runs pile up";
  expect_one_per_period(runs);

  // The schedule kept its count across the restart; unschedule stops it.
  listed = cluster_.Cli({"schedules", "--json"});
  EXPECT_NE(listed.out.find("\"skipped\":1"), std::string::npos) << listed.out;
  CommandResult removed = cluster_.Cli({"unschedule", id, "--json"});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_EQ(cluster_.Cli({"schedules", "--json"}).out, "{\"schedules\":[]}\n");
  CommandResult again = cluster_.Cli({"unschedule", id});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("not found"), std::string::npos) << again.err;
  const std::string metrics = cluster_.Cli({"profiles", "--job", "periodic", "--json"}).out;
  EXPECT_NE(metrics.find("\"capture_id\""), std::string::npos);
}

TEST_F(ScheduleTest, ARunWhileACaptureOfTheJobStillRunsIsSkippedWithItsReason) {
  StartJob("busy", 2500);  // every capture takes at least 2.5 s
  const std::string id = Schedule("busy", "1s", "100");
  ASSERT_FALSE(id.empty());
  std::vector<ScheduledRun> runs;
  ASSERT_TRUE(Eventually(60, [&] {
    runs = Runs(cluster_, "busy");
    return Count(runs, "DONE") >= 2 && Count(runs, "SKIPPED") >= 2;
  })) << cluster_.Cli({"captures", "--json"}).out << cluster_.ServerLog();
  for (const ScheduledRun& r : runs) {
    if (r.state != "SKIPPED") continue;
    EXPECT_NE(r.error.find(" of job busy is still running"), std::string::npos) << r.error;
    // It names the capture that was running, which is one of the schedule's own.
    const bool names_a_run = std::any_of(runs.begin(), runs.end(), [&](const ScheduledRun& o) {
      return o.state != "SKIPPED" && r.error.find(o.capture_id) != std::string::npos;
    });
    EXPECT_TRUE(names_a_run) << r.error;
  }
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
