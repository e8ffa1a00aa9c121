// End to end through the real binaries: upload with the CLI, query back, compare with the
// offline analysis and the corpus references.

#include <algorithm>
#include <fstream>

#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/e2e/reference_compare.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

class UploadQueryTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog(); }

  // Uploads `path` and returns the profile id.
  std::string Upload(const std::string& path, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"upload", path, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    CommandResult r = cluster_.Cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err << cluster_.ServerLog();
    return JsonStringField(r.out, "profile_id");
  }

  // Checks kernels/breakdown/ops of a stored profile against `analyze` and the reference.
  void ExpectServedEqualsAnalyze(const std::string& trace, const std::string& reference) {
    std::string id = Upload(trace, {"--job", "resnet"});
    ASSERT_FALSE(id.empty());
    CommandResult analyzed = RunCommand({BinDir() + "/fleetprof", "analyze", trace, "--json"});
    ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
    const std::string ref = ReadSmallFile(reference);
    for (auto [command, section] : {std::pair{"kernels", "kernels"}, {"breakdown", "devices"},
                                    {"ops", "ops"}}) {
      CommandResult served = cluster_.Cli({command, id, "--json"});
      ASSERT_EQ(served.exit_code, 0) << served.err;
      EXPECT_EQ(CompareSection(served.out, analyzed.out, section), "") << command;
      if (ref.find("\"" + std::string(section) + "\"") != std::string::npos) {
        EXPECT_EQ(CompareSection(served.out, ref, section), "") << command << " vs reference";
      }
    }
  }

  TestCluster cluster_;
};

TEST_F(UploadQueryTest, KinetoProfileServedEqualsAnalyzeAndReference) {
  const std::string trace = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  ExpectServedEqualsAnalyze(trace, CorpusPath("reference/v100_resnet_rank0.pt.trace.ref.json"));
}

TEST_F(UploadQueryTest, XSpaceProfileServedEqualsAnalyzeAndReference) {
  const std::string trace = CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb");
  FLEETPROF_REQUIRE_PATH(trace);
  ExpectServedEqualsAnalyze(trace, CorpusPath("reference/tf_8gpu_multi_worker.xplane.ref.json"));
}

TEST_F(UploadQueryTest, ProfilesListFiltersByJobAndLabel) {
  const std::string trace = CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  std::string a = Upload(trace, {"--job", "train", "--label", "team=infra", "--node", "n1"});
  std::string b = Upload(trace, {"--job", "serve"});
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  CommandResult train = cluster_.Cli({"profiles", "--job", "train", "--json"});
  ASSERT_EQ(train.exit_code, 0) << train.err;
  EXPECT_NE(train.out.find(a), std::string::npos);
  EXPECT_EQ(train.out.find(b), std::string::npos);
  EXPECT_NE(train.out.find("\"labels\":{\"team\":\"infra\"}"), std::string::npos) << train.out;
  EXPECT_NE(train.out.find("\"node\":\"n1\""), std::string::npos);
  EXPECT_NE(train.out.find("\"format\":\"kineto_json\""), std::string::npos);
  CommandResult labeled = cluster_.Cli({"profiles", "--label", "team=infra", "--json"});
  EXPECT_NE(labeled.out.find(a), std::string::npos);
  EXPECT_EQ(labeled.out.find(b), std::string::npos);
  CommandResult all = cluster_.Cli({"profiles", "--json"});
  EXPECT_NE(all.out.find(a), std::string::npos);
  EXPECT_NE(all.out.find(b), std::string::npos);
}

// The job list (ListJobs: one .proto method, one query-layer function, one CLI row).
TEST_F(UploadQueryTest, JobsListCountsProfilesNewestJobFirst) {
  const std::string trace = CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  const std::string a = Upload(trace, {"--job", "train", "--label", "rank=0"});
  const std::string b = Upload(trace, {"--job", "train", "--label", "rank=1"});
  const std::string c = Upload(trace, {"--job", "serve"});
  ASSERT_FALSE(a.empty() || b.empty() || c.empty());
  CommandResult all = cluster_.Cli({"jobs", "--json"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  // serve was profiled last, so it comes first; train has two profiles, the newest b.
  EXPECT_EQ(all.out.find("{\"jobs\":[{\"job\":\"serve\",\"profiles\":1,"), 0u) << all.out;
  EXPECT_NE(all.out.find("{\"job\":\"train\",\"profiles\":2,"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("\"last_profile_id\":\"" + b + "\""), std::string::npos) << all.out;
  CommandResult rank0 = cluster_.Cli({"jobs", "--label", "rank=0", "--json"});
  EXPECT_NE(rank0.out.find("\"last_profile_id\":\"" + a + "\""), std::string::npos) << rank0.out;
  EXPECT_EQ(rank0.out.find("serve"), std::string::npos) << rank0.out;
  CommandResult table = cluster_.Cli({"jobs"});
  EXPECT_EQ(table.out.rfind("JOB", 0), 0u) << table.out;
  EXPECT_NE(table.out.find("train"), std::string::npos) << table.out;
}

TEST_F(UploadQueryTest, SameUploadIdStoresTheFileOnce) {
  const std::string trace = CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  std::string first = Upload(trace, {"--job", "j", "--upload_id", "fixed-1"});
  std::string second = Upload(trace, {"--job", "j", "--upload_id", "fixed-1"});
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(first, second);
  CommandResult list = cluster_.Cli({"profiles", "--job", "j", "--json"});
  EXPECT_EQ(list.out.find(first), list.out.rfind(first)) << "listed twice: " << list.out;
}

TEST_F(UploadQueryTest, RestartedServerStillServesEveryProfile) {
  const std::string trace = CorpusPath("kineto/a100_alexnet.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  std::string id = Upload(trace, {"--job", "alexnet"});
  ASSERT_FALSE(id.empty());
  CommandResult before = cluster_.Cli({"kernels", id, "--json"});
  EXPECT_EQ(cluster_.StopServer(), 0) << "graceful shutdown exits 0";
  ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
  CommandResult list = cluster_.Cli({"profiles", "--json"});
  EXPECT_NE(list.out.find(id), std::string::npos) << list.out;
  CommandResult after = cluster_.Cli({"kernels", id, "--json"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.out, before.out);
}

TEST_F(UploadQueryTest, BadUploadsFailClearlyAndLeaveNothingListed) {
  const std::string dir = cluster_.root();
  {
    std::ofstream(dir + "/garbage.json") << "this is not a trace at all";
    std::ofstream(dir + "/empty.json");
    std::ofstream(dir + "/cut.json") << "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"ts\":1";
    std::ofstream(dir + "/noise.xplane.pb") << std::string("\x0a\xff\xff\xff\x0f garbage", 14);
  }
  for (const char* name : {"garbage.json", "empty.json", "cut.json", "noise.xplane.pb"}) {
    CommandResult r = cluster_.Cli({"upload", dir + "/" + name, "--job", "bad"});
    EXPECT_NE(r.exit_code, 0) << name;
    EXPECT_NE(r.err.find("fleetprof: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(name), std::string::npos) << "error names the file: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
  CommandResult list = cluster_.Cli({"profiles", "--json"});
  EXPECT_EQ(list.exit_code, 0) << "server keeps serving: " << list.err;
  EXPECT_EQ(list.out, "{\"profiles\":[],\"next_page_token\":\"\",\"unreadable\":[]}\n");
}

TEST_F(UploadQueryTest, ServerMetricsCountUploadsByResult) {
  const std::string trace = CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  ASSERT_FALSE(Upload(trace, {"--job", "m"}).empty());
  std::ofstream(cluster_.root() + "/bad.json") << "nope";
  EXPECT_NE(cluster_.Cli({"upload", cluster_.root() + "/bad.json"}).exit_code, 0);
  cluster_.Cli({"profiles"});
  std::string metrics = HttpGet(cluster_.http_addr(), "/metrics");
  EXPECT_NE(metrics.find("fleetprof_server_uploads_total{result=\"ok\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("fleetprof_server_uploads_total{result=\"invalid\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("fleetprof_server_query_duration_seconds"), std::string::npos);
}

// A trace with bytes that are not UTF-8 in a kernel name, an op name and its distributedInfo:
// before, the stored summary could not be read back and the rank label broke the upload's
// answer. Now every name is stored with U+FFFD, every answer is valid JSON (simdjson checks
// UTF-8), the replacements are counted, and all of it survives a restart.
TEST_F(UploadQueryTest, InvalidUtf8InATraceIsStoredCleanAndCounted) {
  const std::string path = cluster_.root() + "/bad_utf8.json";
  std::ofstream(path) << R"({"distributedInfo":{"rank":"r)" "\xe9" R"("},"traceEvents":[)"
                      << R"({"ph":"X","cat":"kernel","name":"bad)" "\xff\xfe" R"(kernel","pid":0,"tid":7,"ts":1,"dur":2,"args":{"device":0}},)"
                      << R"({"ph":"X","cat":"cpu_op","name":"op)" "\xc3" R"(","pid":1,"tid":1,"ts":0,"dur":5}]})";
  const std::string id = Upload(path, {"--job", "utf8"});
  ASSERT_FALSE(id.empty());
  auto check = [&] {
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"kernels", id}, {"ops", id}, {"profile", id}, {"profiles"},
                                               {"trace", id}, {"diagnose", id}}) {
      std::vector<std::string> with_json = args;
      with_json.push_back("--json");
      CommandResult r = cluster_.Cli(with_json);
      ASSERT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
      simdjson::dom::parser parser;
      simdjson::dom::element doc;
      EXPECT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << args[0] << " printed invalid JSON";
    }
    CommandResult kernels = cluster_.Cli({"kernels", id, "--json"});
    EXPECT_NE(kernels.out.find("bad\uFFFD\uFFFDkernel"), std::string::npos) << kernels.out;
    CommandResult profile = cluster_.Cli({"profile", id, "--json"});
    EXPECT_NE(profile.out.find("\"invalid_utf8_replacements\":4"), std::string::npos) << profile.out;
    EXPECT_NE(profile.out.find("\"rank\":\"r\uFFFD\""), std::string::npos) << profile.out;
  };
  check();
  const std::string addr = cluster_.grpc_addr();
  cluster_.StopServer();
  ASSERT_TRUE(cluster_.StartServer(addr)) << cluster_.ServerLog();
  check();
}

TEST_F(UploadQueryTest, UnknownProfileIsAClearError) {
  CommandResult r = cluster_.Cli({"kernels", "no-such-profile", "--json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(CliTest, UnreachableServerIsAOneLineError) {
  CommandResult r = RunCommand({BinDir() + "/fleetprof", "profiles", "--server", "127.0.0.1:1",
                                "--timeout_s", "3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot reach fleetprof-server at 127.0.0.1:1"), std::string::npos) << r.err;
}

TEST(CliTest, HelpListsEveryCommand) {
  CommandResult r = RunCommand({BinDir() + "/fleetprof", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* command : {"analyze", "upload", "profiles", "ops", "kernels", "breakdown", "agents"}) {
    EXPECT_NE(r.out.find(command), std::string::npos) << command;
  }
}

// The usage a wrong call prints is the line --help shows for that command (one table row).
TEST(CliTest, AWrongCallPrintsTheUsageTheHelpShows) {
  const std::string help = RunCommand({BinDir() + "/fleetprof", "--help"}).out;
  for (const char* command : {"diff", "unschedule", "trace", "ops"}) {
    SCOPED_TRACE(command);
    CommandResult r = RunCommand({BinDir() + "/fleetprof", command, "--server", "127.0.0.1:1"});
    EXPECT_EQ(r.exit_code, 1);
    const std::string prefix = "fleetprof: usage: fleetprof ";
    ASSERT_EQ(r.err.rfind(prefix, 0), 0u) << r.err;
    std::string usage = r.err.substr(prefix.size());
    usage = usage.substr(0, usage.find(" [--json]"));
    const size_t at = help.find("  " + usage);
    ASSERT_NE(at, std::string::npos) << usage;
    const char after = help[at + 2 + usage.size()];
    EXPECT_TRUE(after == ' ' || after == '\n') << usage;
  }
  CommandResult unknown = RunCommand({BinDir() + "/fleetprof", "profilez"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("unknown command 'profilez' (see fleetprof --help)"), std::string::npos) << unknown.err;
}

// Every command declares its flags (client/commands.h): one another command owns is an error
// naming it and listing the command's own; COMMAND --help prints them; the common ones
// (--server, --json, …) go with every command, before or after it.
TEST(CliTest, EachCommandTakesItsOwnFlagsAndListsThemWhenGivenAnother) {
  CommandResult wrong = RunCommand({BinDir() + "/fleetprof", "kernels", "ID", "--by", "kernel", "--server", "127.0.0.1:1"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("kernels does not take --by: its flags are --limit"), std::string::npos) << wrong.err;
  CommandResult none = RunCommand({BinDir() + "/fleetprof", "delete", "ID", "--limit", "3"});
  EXPECT_NE(none.err.find("delete does not take --limit: delete takes only the common flags"), std::string::npos)
      << none.err;
  CommandResult capture = RunCommand({BinDir() + "/fleetprof", "capture", "--job", "j", "--format", "pprof"});
  EXPECT_NE(capture.err.find("--duration_ms"), std::string::npos) << capture.err;
  EXPECT_NE(capture.err.find("--wait"), std::string::npos) << capture.err;
  // A declared call takes the flags of its request's fields.
  CommandResult jobs = RunCommand({BinDir() + "/fleetprof", "jobs", "--job", "x"});
  EXPECT_NE(jobs.err.find("jobs does not take --job: its flags are --label"), std::string::npos) << jobs.err;

  CommandResult help = RunCommand({BinDir() + "/fleetprof", "trace", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.rfind("Usage: fleetprof trace PROFILE_ID", 0), 0u) << help.out;
  for (const char* flag : {"--start_ns", "--end_ns", "--resolution_ns", "--track", "--search", "--args", "--server",
                           "--json"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(help.out.find("--duration_ms"), std::string::npos) << "only its own and the common flags";
  CommandResult analyze = RunCommand({BinDir() + "/fleetprof", "analyze", "--help"});
  EXPECT_NE(analyze.out.find("--max_trace_mb"), std::string::npos) << analyze.out;
  // Common flags before the command still count as the command's.
  CommandResult common = RunCommand({BinDir() + "/fleetprof", "--json", "--server", "127.0.0.1:1", "--timeout_s", "2",
                                     "profiles", "--job", "x"});
  EXPECT_NE(common.err.find("cannot reach fleetprof-server"), std::string::npos) << common.err;
}

}  // namespace
}  // namespace fleetprof::testing
