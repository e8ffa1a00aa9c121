// Sampling and triggers of a PyTorch (Kineto) job end to end: the real server and agent, and the
// Kineto stand-in (tests/kineto/kineto_standin.py) polling the agent every 5 s as libkineto does
// and judging each config's start time by libkineto's own rules (docs/protocols.md, When a
// time-based trace may start): a start in the past or nearer than the warm-up is refused, writes
// no trace, and is said only in the job's own log. The XLA-only sampling and trigger tests cannot
// see that: an XLA profiler starts at once. Here a SAMPLED capture and a TRIGGERED one of the
// PyTorch job must be accepted by the job, traced, and indexed; the sampled one keeps the weight
// it stands for, which fleet accounting counts.
//
// No assertion measures the test's own clock. Every wait is for a state the server or the job
// records, with a generous deadline, and ends early when the job logs a refusal (a refused
// config would otherwise surface only as a FAILED target at the capture's 60 s deadline).

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/e2e/json_array.h"
#include "tests/e2e/test_cluster.h"
#include "tests/jobtrace/rank_traces.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

namespace fs = std::filesystem;

const char kPython[] = "/usr/bin/python3";  // for the Kineto stand-in
const char kTrace[] = "kineto/v100_resnet_rank0.pt.trace.json.gz";
// libkineto's poll period: the config waits up to this long at the agent before the job sees it.
const char kLibkinetoPollMs[] = "5000";
constexpr int64_t kDurationMs = 500;
// The soonest a duration capture with a PyTorch target may start after it is created: the
// job's next poll (5 s), its warm-up (5 s) and 1 s of margin (docs/captures.md).
constexpr int64_t kKinetoLeadNs = 11'000'000'000;

struct TargetView {
  std::string target, node, kind, state, profile_id, error;
  int64_t pid = 0, start_time_unix_ns = 0, weight_device_ns = 0, devices = 0;
  double inclusion_probability = 0;
};

struct CaptureView {
  std::string capture_id, reason, state, trigger_id, evidence, start_note;
  int64_t created_at_ns = 0, start_time_unix_ns = 0;
  std::vector<TargetView> targets;

  bool Final() const { return state == "DONE" || state == "PARTIAL" || state == "FAILED"; }
  // When the job was asked to start: its target's own start when the agent moved it, else the
  // shared one.
  int64_t StartOf(const TargetView& t) const {
    return t.start_time_unix_ns > 0 ? t.start_time_unix_ns : start_time_unix_ns;
  }
};

std::string Text(simdjson::dom::element e, const char* key) {
  std::string_view v;
  return e[key].get(v) == simdjson::SUCCESS ? std::string(v) : "";
}
int64_t Int(simdjson::dom::element e, const char* key) {
  int64_t v = 0;
  return e[key].get(v) == simdjson::SUCCESS ? v : 0;
}

// The captures of `job` with `reason`, oldest first, as `fleetprof captures --json` lists them.
std::vector<CaptureView> CapturesOf(TestCluster& cluster, const std::string& job, const std::string& reason) {
  CommandResult r = cluster.Cli({"captures", "--job", job, "--limit", "1000", "--json"});
  std::vector<CaptureView> out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (r.exit_code != 0 || parser.parse(r.out).get(doc) != simdjson::SUCCESS) return out;
  for (simdjson::dom::element c : Array(doc["captures"])) {
    if (Text(c, "reason") != reason) continue;
    CaptureView v;
    v.capture_id = Text(c, "capture_id");
    v.reason = Text(c, "reason");
    v.state = Text(c, "state");
    v.trigger_id = Text(c, "trigger_id");
    v.evidence = Text(c, "evidence");
    v.start_note = Text(c, "start_note");
    v.created_at_ns = Int(c, "created_at_ns");
    v.start_time_unix_ns = Int(c, "start_time_unix_ns");
    for (simdjson::dom::element t : Array(c["targets"])) {
      TargetView tv;
      tv.target = Text(t, "target");
      tv.node = Text(t, "node");
      tv.kind = Text(t, "kind");
      tv.state = Text(t, "state");
      tv.profile_id = Text(t, "profile_id");
      tv.error = Text(t, "error");
      tv.pid = Int(t, "pid");
      tv.start_time_unix_ns = Int(t, "start_time_unix_ns");
      tv.weight_device_ns = Int(t, "weight_device_ns");
      tv.devices = Int(t, "devices");
      if (t["inclusion_probability"].get(tv.inclusion_probability) != simdjson::SUCCESS) tv.inclusion_probability = 0;
      v.targets.push_back(std::move(tv));
    }
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(),
            [](const CaptureView& a, const CaptureView& b) { return a.created_at_ns < b.created_at_ns; });
  return out;
}

// One line the stand-in printed (one JSON object a line): config, trace_scheduled, refused, wrote...
struct JobEvent {
  std::string event, text, mode, reason;
  bool ignored = false;
  int64_t start_ms = 0;
};

std::vector<JobEvent> JobEvents(const std::string& log) {
  std::vector<JobEvent> out;
  std::istringstream lines(log);
  std::string line;
  simdjson::dom::parser parser;
  while (std::getline(lines, line)) {
    simdjson::dom::element e;
    if (line.empty() || line[0] != '{' || parser.parse(line).get(e) != simdjson::SUCCESS) continue;
    JobEvent j;
    j.event = Text(e, "event");
    j.text = Text(e, "text");
    j.mode = Text(e, "mode");
    j.reason = Text(e, "reason");
    bool ignored = false;
    j.ignored = e["ignored"].get(ignored) == simdjson::SUCCESS && ignored;
    j.start_ms = Int(e, "start_ms");
    out.push_back(std::move(j));
  }
  return out;
}

bool HasEvent(const std::vector<JobEvent>& events, const std::string& name) {
  return std::any_of(events.begin(), events.end(), [&](const JobEvent& e) { return e.event == name; });
}

class KinetoSamplingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLEETPROF_REQUIRE_PATH(kPython);
    FLEETPROF_REQUIRE_PATH(CorpusPath(kTrace));
    ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
    socket_dir_ = cluster_.root() + "/kineto";
    fs::create_directories(socket_dir_);
    agent_ = cluster_.StartAgent({"--node=gpu-1", "--kineto_socket_dir=" + socket_dir_,
                                  "--kineto_trace_dir=" + cluster_.root() + "/kineto_traces"});
    ASSERT_GE(agent_, 0);
  }

  // Starts a fake PyTorch process of `job` polling the agent at libkineto's own period, and
  // waits until the agent reports it as a target (its first poll, sent at once, registers it).
  void StartJob(const std::string& job) {
    job_log_ = cluster_.root() + "/job.log";
    job_.Start({kPython, std::string(FLEETPROF_SOURCE_DIR) + "/tests/kineto/kineto_standin.py", "--socket-dir",
                socket_dir_, "--interval-ms", kLibkinetoPollMs, "--trace-file", CorpusPath(kTrace)},
               job_log_, {"FLEETPROF_JOB=" + job, "KINETO_IPC_SOCKET_DIR=" + socket_dir_});
    ASSERT_TRUE(Eventually(30, [&] {
      return cluster_.Cli({"agents", "--json"}).out.find("{\"job\":\"" + job + "\",\"kind\":\"kineto\"") !=
             std::string::npos;
    })) << cluster_.Cli({"agents", "--json"}).out << cluster_.AgentLog(agent_);
  }

  std::vector<JobEvent> Events() { return JobEvents(ReadSmallFile(job_log_)); }

  // Waits until every capture of `job` with `reason` is final, or the job has refused a config
  // (which it tells nobody: the capture would only fail at its deadline). The captures seen.
  std::vector<CaptureView> WaitForFinal(const std::string& job, const std::string& reason) {
    std::vector<CaptureView> captures;
    EXPECT_TRUE(Eventually(150, [&] {
      captures = CapturesOf(cluster_, job, reason);
      if (HasEvent(Events(), "refused")) return true;
      return !captures.empty() &&
             std::all_of(captures.begin(), captures.end(), [](const CaptureView& c) { return c.Final(); });
    })) << cluster_.Cli({"captures", "--json"}).out << cluster_.ServerLog() << cluster_.AgentLog(agent_);
    return captures;
  }

  // The capture's one target is this job's Kineto process, indexed; the job took a well-formed
  // duration config for the start the capture planned and accepted it (a trace scheduled for
  // exactly that start, and written), and refused nothing.
  void ExpectTracedByTheJob(const CaptureView& c) {
    ASSERT_EQ(c.targets.size(), 1u) << c.capture_id;
    const TargetView& t = c.targets[0];
    EXPECT_EQ(c.state, "DONE") << c.capture_id << ": " << t.error;
    EXPECT_EQ(t.state, "INDEXED") << t.error;
    EXPECT_EQ(t.kind, "kineto");
    EXPECT_EQ(t.pid, job_.pid());
    EXPECT_EQ(t.target, absl::StrCat("kineto:pid=", job_.pid()));
    EXPECT_EQ(t.node, "gpu-1");
    EXPECT_FALSE(t.profile_id.empty());
    // The server planned the start for a PyTorch job: its poll and warm-up lie ahead of it. Both
    // times are the server's own, from one reading of its clock.
    EXPECT_GE(c.start_time_unix_ns - c.created_at_ns, kKinetoLeadNs) << c.capture_id;
    EXPECT_NE(c.start_note.find("PyTorch job takes a config at its next poll"), std::string::npos) << c.start_note;

    const std::vector<JobEvent> events = Events();
    const std::string log = ReadSmallFile(job_log_);
    EXPECT_FALSE(HasEvent(events, "refused")) << "the job refused a config, as libkineto would:\n" << log;
    const int64_t start_ms = c.StartOf(t) / 1'000'000;
    const std::string start_line = absl::StrCat("PROFILE_START_TIME=", start_ms, "\n");
    auto config = std::find_if(events.begin(), events.end(), [&](const JobEvent& e) {
      return e.event == "config" && e.text.find(start_line) != std::string::npos;
    });
    ASSERT_NE(config, events.end()) << "no config for start " << start_ms << ":\n" << log;
    EXPECT_FALSE(config->ignored) << "handed to a busy poll:\n" << log;
    for (const std::string& line : {absl::StrCat("ACTIVITIES_DURATION_MSECS=", kDurationMs, "\n"),
                                    std::string("ACTIVITIES_WARMUP_PERIOD_SECS=5\n"),
                                    std::string("ACTIVITIES_LOG_FILE=")}) {
      EXPECT_NE(config->text.find(line), std::string::npos) << line << " in " << config->text;
    }
    EXPECT_TRUE(std::any_of(config, events.end(), [&](const JobEvent& e) {
      return e.event == "trace_scheduled" && e.mode == "duration" && e.start_ms == start_ms;
    })) << log;
    EXPECT_TRUE(std::any_of(config, events.end(), [&](const JobEvent& e) {
      return e.event == "wrote" && e.start_ms == start_ms;
    })) << log;
  }

  TestCluster cluster_;
  ChildProcess job_;
  std::string socket_dir_;
  std::string job_log_;
  int agent_ = -1;
};

// Sampling picks the PyTorch job like any target: its SAMPLED capture gets a start the job can
// meet (11 s out, as a manual capture's), the job accepts and traces it, and the profile is
// committed with the weight it stands for, which fleet top counts.
TEST_F(KinetoSamplingTest, SampledCaptureOfAPyTorchJobIsAcceptedByTheJobAndCountedWithItsWeight) {
  StartJob("torch-train");
  // p = min(1, 0.5 x 50% x 20 s / 500 ms) = 1: the one target is picked in the first period,
  // which begins when the policy is set. The period outlasts a capture of a PyTorch job
  // (11 s to its start, 0.5 s of trace, the upload).
  constexpr int64_t kEveryNs = 20'000'000'000;
  CommandResult set = cluster_.Cli({"sampling", "set", "--every", "20s", "--duration_ms", std::to_string(kDurationMs),
                                    "--max_overhead", "50%", "--json"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  // The target was listed before the policy was set, so the first period's tick (started by the
  // set itself) finds it.
  ASSERT_TRUE(Eventually(30, [&] { return !CapturesOf(cluster_, "torch-train", "SAMPLED").empty(); }))
      << cluster_.Cli({"sampling", "--json"}).out << cluster_.ServerLog();
  // Off: once it answers no capture of the policy starts any more (the sampler's ticks and
  // `sampling off` run one at a time), so the captures listed from here on are all there are.
  ASSERT_EQ(cluster_.Cli({"sampling", "off"}).exit_code, 0);
  const std::vector<CaptureView> sampled = WaitForFinal("torch-train", "SAMPLED");
  ASSERT_FALSE(sampled.empty());

  int64_t weights = 0;
  for (const CaptureView& c : sampled) {
    SCOPED_TRACE(c.capture_id);
    ExpectTracedByTheJob(c);
    if (c.targets.size() != 1) continue;
    const TargetView& t = c.targets[0];
    // What the XLA sampling test checks: the weight is devices x period / p, with p = 1.
    EXPECT_GE(t.devices, 1);
    EXPECT_DOUBLE_EQ(t.inclusion_probability, 1.0);
    EXPECT_EQ(t.weight_device_ns, t.devices * kEveryNs);
    weights += t.weight_device_ns;
    // Committed as the capture's profile of that process, with the capture's labels.
    CommandResult listed = cluster_.Cli(
        {"profiles", "--job", "torch-train", "--label", "capture_id=" + c.capture_id, "--json"});
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    for (const std::string& field : {"\"profile_id\":\"" + t.profile_id + "\"", std::string("\"node\":\"gpu-1\""),
                                     absl::StrCat("\"pid\":\"", job_.pid(), "\""), std::string("\"rank\":\"0\"")}) {
      EXPECT_NE(listed.out.find(field), std::string::npos) << field << " in " << listed.out;
    }
  }

  // Fleet accounting counts each sampled profile with its capture target's weight. The rollup is
  // written when the profile is committed; waiting for the count (not reading it once) leaves no
  // race with the commit's callbacks.
  const int64_t indexed = std::count_if(sampled.begin(), sampled.end(), [](const CaptureView& c) {
    return c.state == "DONE";
  });
  std::string top;
  EXPECT_TRUE(Eventually(30, [&] {
    top = cluster_.Cli({"fleet", "top", "--by", "job", "--json"}).out;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    return parser.parse(top).get(doc) == simdjson::SUCCESS && Int(doc, "samples") >= indexed;
  })) << top << cluster_.ServerLog();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(top).get(doc), simdjson::SUCCESS) << top;
  EXPECT_EQ(Int(doc, "samples"), indexed) << top;
  EXPECT_EQ(Int(doc, "total_device_ns"), weights) << top;
  simdjson::dom::array rows = Array(doc["rows"]);
  ASSERT_EQ(rows.size(), 1u) << top;
  EXPECT_EQ(Text(rows.at(0).value(), "name"), "torch-train") << top;
  EXPECT_EQ(Int(rows.at(0).value(), "device_ns"), weights) << top;
}

// A rule trigger of the PyTorch job (late_rank on its uploaded ranks) fires a TRIGGERED capture
// of the job's Kineto process, which the job accepts and which ends DONE.
TEST_F(KinetoSamplingTest, RuleTriggerFiresACaptureOfAPyTorchJobThatTheJobAccepts) {
  StartJob("torch-train");
  CommandResult added = cluster_.Cli({"trigger", "add", "--job", "torch-train", "--when", "rule late_rank",
                                      "--cooldown", "1h", "--duration_ms", std::to_string(kDurationMs), "--json"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  const std::string trigger_id = JsonStringField(added.out, "trigger_id");
  ASSERT_FALSE(trigger_id.empty()) << added.out;
  // Ranks of an earlier run of the job with rank 2 late: from the second commit on, the job's
  // ranks show it and the trigger fires. Its hour of cooldown holds every later commit back
  // (the captured profile's own included), so it fires once.
  RankTraceOptions options;
  options.ranks = 4;
  options.collectives = 60;
  options.late_rank = 2;
  std::vector<RankTrace> traces = GenerateRankTraces(options);
  for (int r : {2, 0, 1, 3}) {
    const std::string path = absl::StrCat(cluster_.root(), "/rank", r, ".json");
    std::ofstream(path) << traces[static_cast<size_t>(r)].json;
    CommandResult up = cluster_.Cli({"upload", path, "--job", "torch-train", "--label", "capture_id=cap-1"});
    ASSERT_EQ(up.exit_code, 0) << up.err;
  }
  // The job's Kineto target was listed before the first upload, so the firing's capture finds it.
  const std::vector<CaptureView> triggered = WaitForFinal("torch-train", "TRIGGERED");
  ASSERT_EQ(triggered.size(), 1u) << cluster_.Cli({"captures", "--json"}).out;
  const CaptureView& c = triggered[0];
  EXPECT_EQ(c.trigger_id, trigger_id);
  EXPECT_NE(c.evidence.find("rule late_rank on job torch-train"), std::string::npos) << c.evidence;
  EXPECT_NE(c.evidence.find("rank 2 arrives last"), std::string::npos) << c.evidence;
  ExpectTracedByTheJob(c);
  // The trigger records this capture as its last one: the firing stores it once the capture has
  // started, in a write of its own, so the test waits for it rather than reading once.
  std::string triggers;
  EXPECT_TRUE(Eventually(30, [&] {
    triggers = cluster_.Cli({"triggers", "--json"}).out;
    return triggers.find("\"last_capture_id\":\"" + c.capture_id + "\"") != std::string::npos;
  })) << triggers;
}

}  // namespace
}  // namespace fleetprof::testing
