// Triggers end to end with the real binaries (issue 42, item 2): an agent whose stand-in NVML
// (FAKE_NVML_UTILIZATION_FILE) reports a utilization drop on the job's device fires a
// `device_utilization < 30% for 1s` trigger — a TRIGGERED capture with the trigger id and the
// evidence, once per cooldown — and the trigger survives a restart; `rule late_rank` fires when
// the job's new profiles have a late rank (generated rank traces), not when they do not;
// `regression` fires when the detector makes a record; a bad condition shows the grammar.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/e2e/gemm_trace.h"
#include "tests/e2e/json_array.h"
#include "tests/e2e/test_cluster.h"
#include "tests/jobtrace/rank_traces.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

namespace fs = std::filesystem;

// The processes the stand-in NVML reports: 4343 (device 0 only) of job "train", 4242 (devices 0
// and 1, which idles at 5%) of job "other".
void WriteFakeProc(const std::string& root) {
  fs::create_directories(root);
  std::ofstream(root + "/stat") << "cpu  100 0 50 800 50 0 0 0 0 0\n";
  std::ofstream(root + "/meminfo") << "MemTotal:       1000 kB\nMemAvailable:    400 kB\n";
  for (const char* pid : {"4242", "4343"}) {
    fs::create_directories(root + "/" + pid);
    const std::string job = std::string(pid) == "4343" ? "train" : "other";
    std::ofstream(root + "/" + pid + "/environ") << "FLEETPROF_JOB=" << job << std::string(1, '\0');
    std::ofstream(root + "/" + pid + "/status") << "Name:\tpython\nUid:\t1000\t1000\t1000\t1000\n";
    std::ofstream(root + "/" + pid + "/stat")
        << pid << " (python) S 1 1 1 0 -1 0 0 0 0 0 100 20 0 0 20 0 1 0 5000 1000 100\n";
  }
}

struct TriggeredCapture {
  std::string capture_id, trigger_id, evidence;
  int64_t created_at_ns = 0;
};

// The TRIGGERED captures of `job`, newest first, as `fleetprof captures --json` lists them.
std::vector<TriggeredCapture> Triggered(TestCluster& cluster, const std::string& job) {
  CommandResult r = cluster.Cli({"captures", "--job", job, "--json"});
  std::vector<TriggeredCapture> out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (r.exit_code != 0 || parser.parse(r.out).get(doc) != simdjson::SUCCESS) return out;
  simdjson::dom::array captures;
  if (doc["captures"].get(captures) != simdjson::SUCCESS) return out;
  for (simdjson::dom::element c : captures) {
    if (std::string_view(c["reason"].get_string()) != "TRIGGERED") continue;
    TriggeredCapture t;
    t.capture_id = std::string(std::string_view(c["capture_id"].get_string()));
    t.trigger_id = std::string(std::string_view(c["trigger_id"].get_string()));
    t.evidence = std::string(std::string_view(c["evidence"].get_string()));
    t.created_at_ns = int64_t(c["created_at_ns"].get_int64());
    out.push_back(std::move(t));
  }
  return out;
}

// The trigger's (fired, last_fired_ns) as `fleetprof triggers --json` lists them.
std::optional<std::pair<int64_t, int64_t>> FiringOf(TestCluster& cluster, const std::string& trigger_id) {
  CommandResult r = cluster.Cli({"triggers", "--json"});
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (r.exit_code != 0 || parser.parse(r.out).get(doc) != simdjson::SUCCESS) return std::nullopt;
  for (simdjson::dom::element t : Array(doc["triggers"])) {
    if (std::string_view(t["trigger_id"].get_string().value()) != trigger_id) continue;
    return std::make_pair(t["fired"].get_int64().value(), t["last_fired_ns"].get_int64().value());
  }
  return std::nullopt;
}

std::string AddTrigger(TestCluster& cluster, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"trigger", "add"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--json");
  CommandResult r = cluster.Cli(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return JsonStringField(r.out, "trigger_id");
}

std::string Upload(TestCluster& cluster, const std::string& path, const std::string& job,
                   const std::vector<std::string>& labels = {}) {
  std::vector<std::string> argv = {"upload", path, "--job", job, "--json"};
  for (const std::string& label : labels) {
    argv.push_back("--label");
    argv.push_back(label);
  }
  CommandResult r = cluster.Cli(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return JsonStringField(r.out, "profile_id");
}

TEST(TriggerTest, ABadConditionIsRefusedWithTheGrammarAndTheAcceptanceFormParses) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  CommandResult bad = cluster.Cli({"trigger", "add", "--job", "train", "--when", "utilization below 30"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("device_utilization < N% for D"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("rule NAME"), std::string::npos) << bad.err;
  CommandResult rule = cluster.Cli({"trigger", "add", "--job", "train", "--when", "rule nope"});
  EXPECT_NE(rule.err.find("late_rank"), std::string::npos) << rule.err;
  const std::string id = AddTrigger(cluster, {"--job", "train", "--when", "device_utilization < 30% for 5s"});
  ASSERT_FALSE(id.empty());
  CommandResult listed = cluster.Cli({"triggers", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  for (const char* key :
       {"\"trigger_id\":\"", "\"job\":\"train\"", "\"when\":\"device_utilization < 30% for 5s\"",
        "\"duration_ms\":2000", "\"cooldown_ms\":600000", "\"fired\":0", "\"last_fired_ns\":0", "\"for_ms\":5000"}) {
    EXPECT_NE(listed.out.find(key), std::string::npos) << key << " in " << listed.out;
  }
  // The HTTP API answers what the CLI prints.
  EXPECT_EQ(HttpGet(cluster.http_addr(), "/api/v1/triggers") + "\n", listed.out);
  CommandResult removed = cluster.Cli({"trigger", "rm", id});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_EQ(cluster.Cli({"triggers", "--json"}).out, "{\"triggers\":[]}\n");
  EXPECT_NE(cluster.Cli({"trigger", "rm", id}).exit_code, 0);
}

TEST(TriggerTest, AUtilizationDropFiresOneTriggeredCapturePerCooldownAndTheTriggerSurvivesARestart) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  const std::string proc = cluster.root() + "/proc";
  WriteFakeProc(proc);
  const std::string utilization = cluster.root() + "/utilization";
  std::ofstream(utilization) << "87\n";
  ::setenv("FAKE_NVML_UTILIZATION_FILE", utilization.c_str(), 1);  // the agent inherits it
  const int agent = cluster.StartAgent({"--node=gpu-node", std::string("--nvml_library=") + FAKE_NVML_PATH,
                                        "--proc_root=" + proc, "--sample_interval_ms=100"});
  ::unsetenv("FAKE_NVML_UTILIZATION_FILE");
  ASSERT_GE(agent, 0);
  const std::string id = AddTrigger(cluster, {"--job", "train", "--when", "device_utilization < 30% for 1s",
                                              "--cooldown", "3s", "--duration_ms", "200"});
  ASSERT_FALSE(id.empty());
  // The device stays busy: nothing fires.
  ASSERT_TRUE(Eventually(10, [&] { return cluster.AgentLog(agent).find("connected to server") != std::string::npos; }));
  EXPECT_FALSE(Eventually(2, [&] { return !Triggered(cluster, "train").empty(); })) << cluster.ServerLog();
  std::ofstream(utilization) << "10\n";  // the drop
  // Once per cooldown, judged on the times the server itself compared: each firing stores its
  // time as the trigger's last_fired_ns, and the server starts a firing only when its time is a
  // cooldown past the stored one. The test notes every (fired, last_fired_ns) it sees; two notes
  // whose counts differ by one are consecutive firings, whatever the machine's load did to when
  // they were seen or to when their captures were created (a missed firing only means waiting
  // for the next pair).
  std::map<int64_t, int64_t> fired_at;  // fired count -> last_fired_ns
  auto consecutive_pairs = [&] {
    int pairs = 0;
    for (const auto& [fired, at] : fired_at) pairs += fired_at.count(fired + 1) ? 1 : 0;
    return pairs;
  };
  ASSERT_TRUE(Eventually(40, [&] {
    if (const std::optional<std::pair<int64_t, int64_t>> seen = FiringOf(cluster, id); seen && seen->first > 0) {
      fired_at[seen->first] = seen->second;
    }
    return consecutive_pairs() >= 2 && Triggered(cluster, "train").size() >= 3;
  })) << cluster.ServerLog() << cluster.AgentLog(agent);
  std::ofstream(utilization) << "87\n";
  for (const auto& [fired, at] : fired_at) {
    if (auto next = fired_at.find(fired + 1); next != fired_at.end()) {
      EXPECT_GE(next->second - at, 3'000'000'000) << "firings " << fired << " and " << fired + 1;
    }
  }
  std::vector<TriggeredCapture> captures = Triggered(cluster, "train");
  const std::optional<std::pair<int64_t, int64_t>> last = FiringOf(cluster, id);
  ASSERT_TRUE(last.has_value());
  // Every capture is a firing the server counted (and so one the cooldown let through).
  EXPECT_LE(static_cast<int64_t>(captures.size()), last->first);
  for (size_t i = 0; i < captures.size(); ++i) {
    EXPECT_EQ(captures[i].trigger_id, id);
    EXPECT_NE(captures[i].evidence.find("device 0 utilization 10% < 30% for "), std::string::npos)
        << captures[i].evidence;
    EXPECT_NE(captures[i].evidence.find(" s on node gpu-node"), std::string::npos) << captures[i].evidence;
  }
  CommandResult listed = cluster.Cli({"triggers", "--json"});
  EXPECT_NE(listed.out.find("\"fired\":"), std::string::npos);
  EXPECT_EQ(listed.out.find("\"last_fired_ns\":0"), std::string::npos) << listed.out;
  const std::string metrics = HttpGet(cluster.http_addr(), "/metrics");
  EXPECT_NE(metrics.find("fleetprof_trigger_firings_total{kind=\"device_utilization\"}"), std::string::npos);

  ASSERT_EQ(cluster.StopServer(), 0);
  ASSERT_TRUE(cluster.StartServer(cluster.grpc_addr())) << cluster.ServerLog();
  listed = cluster.Cli({"triggers", "--json"});
  EXPECT_NE(listed.out.find("\"trigger_id\":\"" + id + "\""), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("\"fired\":0"), std::string::npos) << listed.out;
  // The reconnected agent has the trigger again: another drop fires again.
  const size_t before = Triggered(cluster, "train").size();
  std::ofstream(utilization) << "12\n";
  ASSERT_TRUE(Eventually(30, [&] { return Triggered(cluster, "train").size() > before; }))
      << cluster.ServerLog() << cluster.AgentLog(agent);
  EXPECT_NE(Triggered(cluster, "train").front().evidence.find("device 0 utilization 12% < 30%"), std::string::npos);
}

TEST(TriggerTest, RuleLateRankFiresOnceOnAJobWhoseNewProfilesHaveALateRank) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  const std::string late = AddTrigger(cluster, {"--job", "train", "--when", "rule late_rank", "--cooldown", "1h"});
  const std::string punctual = AddTrigger(cluster, {"--job", "calm", "--when", "rule late_rank", "--cooldown", "1h"});
  RankTraceOptions options;
  options.ranks = 4;
  options.collectives = 60;
  options.late_rank = 2;
  std::vector<RankTrace> traces = GenerateRankTraces(options);
  // "calm": one rank alone, where late_rank finds nothing (it needs two ranks to compare).
  std::ofstream(cluster.root() + "/calm.json") << traces[0].json;
  Upload(cluster, cluster.root() + "/calm.json", "calm");
  // The late rank first: from the second commit on, the job's ranks show it.
  for (int r : {2, 0, 1, 3}) {
    const std::string path = absl::StrCat(cluster.root(), "/rank", r, ".json");
    std::ofstream(path) << traces[static_cast<size_t>(r)].json;
    Upload(cluster, path, "train", {"capture_id=cap-1"});
  }
  ASSERT_TRUE(Eventually(30, [&] { return !Triggered(cluster, "train").empty(); })) << cluster.ServerLog();
  std::vector<TriggeredCapture> fired = Triggered(cluster, "train");
  ASSERT_EQ(fired.size(), 1u);  // the later ranks' commits are held by the cooldown
  EXPECT_EQ(fired[0].trigger_id, late);
  EXPECT_NE(fired[0].evidence.find("rule late_rank on job train"), std::string::npos) << fired[0].evidence;
  EXPECT_NE(fired[0].evidence.find("rank 2 arrives last"), std::string::npos) << fired[0].evidence;
  std::vector<TriggeredCapture> calm = Triggered(cluster, "calm");
  EXPECT_TRUE(calm.empty()) << calm.front().evidence;
  EXPECT_NE(HttpGet(cluster.http_addr(), "/metrics").find("fleetprof_trigger_firings_total{kind=\"rule\"} 1"),
            std::string::npos);
  (void)punctual;
}

TEST(TriggerTest, ARegressionRecordFiresTheJobsRegressionTrigger) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  const std::string id = AddTrigger(cluster, {"--job", "train", "--when", "regression", "--duration_ms", "300"});
  for (int i = 0; i < 6; ++i) {
    Upload(cluster, WriteTrace(absl::StrCat(cluster.root(), "/base", i, ".json"), 30000 + i * 100), "train");
  }
  EXPECT_FALSE(Eventually(1, [&] { return !Triggered(cluster, "train").empty(); }));
  const std::string slow = Upload(cluster, WriteTrace(cluster.root() + "/slow.json", 39000), "train");
  ASSERT_TRUE(Eventually(20, [&] { return !Triggered(cluster, "train").empty(); }))
      << cluster.Cli({"regressions", "--json"}).out << cluster.ServerLog();
  std::vector<TriggeredCapture> fired = Triggered(cluster, "train");
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].trigger_id, id);
  EXPECT_NE(fired[0].evidence.find("regression in profile " + slow + " of job train: kernel gemm_kernel"),
            std::string::npos)
      << fired[0].evidence;
}

}  // namespace
}  // namespace fleetprof::testing
