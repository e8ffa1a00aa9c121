// Nsight Systems through the agent, end to end (issue 41, item 3): the real server, agent and CLI
// binaries, and a stand-in `nsys` (tests/agent/nsys_standin.py: NOT Nsight Systems; it answers
// start, stop and export as the documented CLI does and hands out a real corpus export as its
// report). A job under an nsys session is captured with `fleetprof capture --job J --wait` and
// ends INDEXED as an nsys_sqlite profile; a .nsys-rep in a trace folder goes up as its export with
// --nsys and is refused with the reason without it; a .sqlite export in a trace folder goes up.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/agent/nsys_standin.h"
#include "tests/e2e/reference_compare.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kExport[] = "nsys/saxpy_a100.sqlite.gz";
constexpr char kReference[] = "reference/saxpy_a100.sqlite.ref.json";

class NsysAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLEETPROF_REQUIRE_PATH("/usr/bin/python3");
    FLEETPROF_REQUIRE_PATH(CorpusPath(kExport));
    FLEETPROF_REQUIRE_PATH(CorpusPath(kReference));
    ASSERT_TRUE(cluster_.StartServer());
    standin_ = InstallNsysStandin(cluster_.root() + "/nsys", CorpusPath(kExport));
    traces_ = cluster_.root() + "/traces";
    fs::create_directories(traces_ + "/sim");
  }

  // The export the stand-in hands out, gunzipped, as `path`.
  void WriteExport(const std::string& path) {
    CommandResult r = RunCommand({"/bin/sh", "-c", "gzip -dc " + CorpusPath(kExport) + " > " + path + ".tmp && mv " +
                                                       path + ".tmp " + path});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::string Profiles(const std::string& job) { return cluster_.Cli({"profiles", "--job", job, "--json"}).out; }
  void ExpectKernelsOfReference(const std::string& profile_id) {
    CommandResult kernels = cluster_.Cli({"kernels", profile_id, "--json"});
    ASSERT_EQ(kernels.exit_code, 0) << kernels.err;
    EXPECT_EQ(CompareSection(kernels.out, ReadSmallFile(CorpusPath(kReference)), "kernels"), "");
  }

  TestCluster cluster_;
  NsysStandin standin_;
  std::string traces_;
};

TEST_F(NsysAgentTest, AJobUnderAnNsysSessionIsCapturedAndIndexedAsNsysSqlite) {
  ChildProcess job;  // what `nsys launch --session-new=train-1 …` would run
  job.Start({"/bin/sleep", "300"}, cluster_.root() + "/job.log",
            {"FLEETPROF_JOB=nsys-train", "FLEETPROF_NSYS_SESSION=train-1"});
  ASSERT_GE(cluster_.StartAgent({"--node=gpu-n", "--nsys=" + standin_.program, "--discover_interval_ms=200"}), 0);
  ASSERT_TRUE(Eventually(15, [&] {
    return cluster_.Cli({"agents", "--json"}).out.find(R"("kind":"nsys")") != std::string::npos;
  })) << cluster_.Cli({"agents", "--json"}).out;
  EXPECT_NE(cluster_.Cli({"agents", "--json"}).out.find(R"("address":"train-1")"), std::string::npos);

  CommandResult capture =
      cluster_.Cli({"capture", "--job", "nsys-train", "--duration_ms", "300", "--wait", "--json"}, 180);
  ASSERT_EQ(capture.exit_code, 0) << capture.out << capture.err << "\n" << standin_.Log() << "\n"
                                  << cluster_.AgentLog(0);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(capture.out).get(doc), simdjson::SUCCESS) << capture.out;
  EXPECT_EQ(std::string_view(doc["state"]), "DONE") << capture.out;
  simdjson::dom::array targets = doc["targets"];
  ASSERT_EQ(targets.size(), 1u) << capture.out;
  simdjson::dom::element target = targets.at(0);
  EXPECT_EQ(std::string_view(target["state"]), "INDEXED") << capture.out;
  EXPECT_EQ(std::string_view(target["target"]), "nsys:session=train-1") << capture.out;
  const std::string profile_id{std::string_view(target["profile_id"])};

  const std::string listed = Profiles("nsys-train");
  EXPECT_NE(listed.find(profile_id), std::string::npos) << listed;
  EXPECT_NE(listed.find(R"("format":"nsys_sqlite")"), std::string::npos) << listed;
  EXPECT_NE(listed.find(R"("capture_id":)"), std::string::npos) << listed;
  EXPECT_NE(listed.find(R"("node":"gpu-n")"), std::string::npos) << listed;
  ExpectKernelsOfReference(profile_id);
  // The session ran start, stop and export, in that order; nothing stays on the node.
  const std::string log = standin_.Log();
  const size_t start = log.find(R"("argv": ["start", "--session=train-1", "--output=)");
  const size_t stop = log.find(R"("argv": ["stop", "--session=train-1"])");
  const size_t exported = log.find(R"("argv": ["export", "--type", "sqlite", "--output", )");
  ASSERT_TRUE(start != std::string::npos && stop != std::string::npos && exported != std::string::npos) << log;
  EXPECT_LT(start, stop);
  EXPECT_LT(stop, exported);
  for (const auto& entry : fs::recursive_directory_iterator(cluster_.root() + "/agent0/kineto_traces")) {
    EXPECT_TRUE(entry.is_directory()) << entry.path() << " left behind";
  }
}

TEST_F(NsysAgentTest, WithoutNsysAReportInATraceFolderIsRefusedWithTheReasonAndAnExportGoesUp) {
  const int agent = cluster_.StartAgent(
      {"--node=gpu-r", "--trace_dir=" + traces_, "--scan_interval_ms=200", "--settle_ms=300"});
  ASSERT_GE(agent, 0);
  WriteExport(traces_ + "/sim/run1.nsys-rep");
  WriteExport(traces_ + "/sim/run2.sqlite");
  ASSERT_TRUE(Eventually(20, [&] { return Profiles("sim").find("run2.sqlite") != std::string::npos; }))
      << Profiles("") << cluster_.AgentLog(agent);
  ASSERT_TRUE(Eventually(10, [&] {
    return HttpGet(cluster_.agent_metrics_addr(agent), "/metrics")
               .find(R"(fleetprof_agent_trace_uploads_total{result="refused"} 1)") != std::string::npos;
  })) << HttpGet(cluster_.agent_metrics_addr(agent), "/metrics");
  const std::string log = cluster_.AgentLog(agent);
  EXPECT_NE(log.find("run1.nsys-rep: this agent has no nsys"), std::string::npos) << log;
  EXPECT_NE(log.find("--nsys=PATH"), std::string::npos) << log;
  EXPECT_NE(log.find("nsys export --type sqlite"), std::string::npos) << log;
  std::this_thread::sleep_for(std::chrono::seconds(1));  // more scans: refused once, not each time
  EXPECT_NE(HttpGet(cluster_.agent_metrics_addr(agent), "/metrics")
                .find(R"(fleetprof_agent_trace_uploads_total{result="refused"} 1)"),
            std::string::npos);
  EXPECT_EQ(Profiles("sim").find("run1"), std::string::npos);
  CommandResult listed = cluster_.Cli({"profiles", "--job", "sim", "--json"});
  EXPECT_NE(listed.out.find(R"("format":"nsys_sqlite")"), std::string::npos) << listed.out;
}

TEST_F(NsysAgentTest, WithNsysAReportInATraceFolderGoesUpAsItsExport) {
  const int agent = cluster_.StartAgent({"--node=gpu-e", "--trace_dir=" + traces_, "--scan_interval_ms=200",
                                         "--settle_ms=300", "--nsys=" + standin_.program});
  ASSERT_GE(agent, 0);
  WriteExport(traces_ + "/sim/run3.nsys-rep");
  ASSERT_TRUE(Eventually(20, [&] { return Profiles("sim").find("run3.sqlite") != std::string::npos; }))
      << Profiles("") << cluster_.AgentLog(agent) << standin_.Log();
  const std::string listed = Profiles("sim");
  const std::string key = R"("profile_id":")";
  const size_t at = listed.find(key);
  ASSERT_NE(at, std::string::npos) << listed;
  EXPECT_EQ(listed.find(key, at + 1), std::string::npos) << "one profile: " << listed;
  EXPECT_NE(listed.find(R"("format":"nsys_sqlite")"), std::string::npos) << listed;
  ExpectKernelsOfReference(listed.substr(at + key.size(), listed.find('"', at + key.size()) - at - key.size()));
  EXPECT_TRUE(fs::exists(traces_ + "/sim/run3.nsys-rep")) << "the report is its user's";
  for (const auto& entry : fs::directory_iterator(cluster_.root() + "/agent0/kineto_traces")) {
    ADD_FAILURE() << entry.path() << " left behind";
  }
}

}  // namespace
}  // namespace fleetprof::testing
