// The web app as a user meets it: the real server and agent binaries, a Kineto stand-in job,
// and a real headless Chromium (tests/web/browser_check.py over the DevTools protocol) that
// opens the pages, sorts, follows deep links and starts a capture from the form. Also the
// Grafana dashboards' every Infinity query against this live server.

#include <filesystem>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "auth/token_hash.h"
#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/jobtrace/rank_traces.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"
#include "tests/xprof/profiler_standin_process.h"

namespace fleetprof::testing {
namespace {

namespace fs = std::filesystem;
const char kPython[] = "/usr/bin/python3";
const char kChromium[] = "/usr/bin/chromium";

std::string Source(const std::string& relative) { return std::string(FLEETPROF_SOURCE_DIR) + "/" + relative; }

class WebAppTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLEETPROF_REQUIRE_PATH(kPython);
    FLEETPROF_REQUIRE_PATH(kChromium);
    FLEETPROF_REQUIRE_PATH(CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz"));
    ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
    socket_dir_ = cluster_.root() + "/kineto";
    fs::create_directories(socket_dir_);
    agent_ = cluster_.StartAgent({"--node=web-node", "--kineto_socket_dir=" + socket_dir_,
                                  "--kineto_trace_dir=" + cluster_.root() + "/kineto_traces"});
    ASSERT_GE(agent_, 0);
  }

  std::string Upload(const std::string& path, const std::string& job) {
    CommandResult r = cluster_.Cli({"upload", path, "--job", job, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return JsonStringField(r.out, "profile_id");
  }

  TestCluster cluster_;
  ChildProcess job_;
  std::string socket_dir_;
  int agent_ = -1;
};

TEST_F(WebAppTest, PagesShowTheProfileAndACaptureStartedFromTheFormIsIndexed) {
  const std::string id = Upload(CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz"), "resnet");
  ASSERT_FALSE(id.empty());
  // A second rank of the job, ~99% idle: the findings, compare and job pages have data.
  FLEETPROF_REQUIRE_PATH(CorpusPath("kineto/a100_alexnet.json.gz"));
  const std::string idle = Upload(CorpusPath("kineto/a100_alexnet.json.gz"), "resnet");
  ASSERT_FALSE(idle.empty());
  // What the page must show, from the API's own answer.
  CommandResult kernels = cluster_.Cli({"kernels", id, "--json", "--limit", "1"});
  CommandResult devices = cluster_.Cli({"breakdown", id, "--json"});
  simdjson::dom::parser p1, p2;
  simdjson::dom::element k, d;
  ASSERT_EQ(p1.parse(kernels.out).get(k), simdjson::SUCCESS) << kernels.out;
  ASSERT_EQ(p2.parse(devices.out).get(d), simdjson::SUCCESS) << devices.out;
  const std::string top_kernel(std::string_view(k["kernels"].at(0)["name"]));
  const int64_t busy = d["devices"].at(0)["busy_ns"];
  const int64_t span = d["devices"].at(0)["span_ns"];
  const std::string busy_pct = absl::StrFormat("%.1f%%", 100.0 * static_cast<double>(busy) / span);

  // A PyTorch job the captures page can capture.
  job_.Start({kPython, Source("tests/kineto/kineto_standin.py"), "--socket-dir", socket_dir_, "--interval-ms",
              "100", "--trace-file", CorpusPath("kineto/a100_alexnet.json.gz")},
             cluster_.root() + "/job.log", {"FLEETPROF_JOB=web-train", "KINETO_IPC_SOCKET_DIR=" + socket_dir_});
  ASSERT_TRUE(Eventually(20, [&] {
    return cluster_.Cli({"agents", "--json"}).out.find("\"job\":\"web-train\",\"kind\":\"kineto\"") !=
           std::string::npos;
  })) << cluster_.Cli({"agents", "--json"}).out;

  const std::string screenshots = std::string(FLEETPROF_BIN_DIR) + "/../web-screenshots";
  fs::create_directories(screenshots);
  CommandResult browser = RunCommand(
      {kPython, Source("tests/web/browser_check.py"), "--url", "http://" + cluster_.http_addr(), "--profile-id",
       id, "--expect-kernel", top_kernel, "--expect-busy-pct", busy_pct, "--expect-agent", "web-node",
       "--capture-job", "web-train", "--capture-duration-ms", "300", "--trace-viewer", "--expect-finding",
       "device_idle", "--findings-profile", idle, "--compare-with", idle, "--job", "resnet", "--flame", "--screenshots",
       screenshots},
      240);
  EXPECT_EQ(browser.exit_code, 0) << browser.out << browser.err << cluster_.ServerLog();
  std::cout << browser.out;
}

// Names come from traces, which anyone can write: markup in a kernel name must show as text.
// Were it parsed as HTML, the inline handler would break the CSP and the check's console test.
TEST_F(WebAppTest, MarkupInTraceNamesShowsAsText) {
  const std::string hostile = "<img src=x onerror=\"document.title='pwned'\">kernel";
  const std::string path = cluster_.root() + "/hostile.json";
  {
    std::ofstream out(path);
    out << R"({"traceEvents":[{"ph":"X","cat":"kernel","name":")"
        << "<img src=x onerror=\\\"document.title='pwned'\\\">kernel"
        << R"(","pid":0,"tid":7,"ts":1,"dur":2,"args":{"device":0}}]})";
  }
  const std::string id = Upload(path, "hostile");
  ASSERT_FALSE(id.empty());
  const std::string screenshots = std::string(FLEETPROF_BIN_DIR) + "/../web-screenshots/hostile";
  fs::create_directories(screenshots);
  CommandResult browser =
      RunCommand({kPython, Source("tests/web/browser_check.py"), "--url", "http://" + cluster_.http_addr(),
                  "--profile-id", id, "--expect-kernel", hostile, "--screenshots", screenshots},
                 240);
  EXPECT_EQ(browser.exit_code, 0) << browser.out << browser.err;
}

// A capture of 4 generated ranks (clocks up to 2 s apart, rank 2 late): the job trace viewer
// groups them by rank and highlights one collective on every rank.
TEST_F(WebAppTest, TheJobTraceShowsEveryRankOnOneClockAndHighlightsACollectiveOnEach) {
  RankTraceOptions o;
  o.ranks = 4;
  o.collectives = 40;
  o.skew_ns = {0, 2'000'000'000, -1'500'000'000, 700'000'000};
  o.late_rank = 2;
  std::vector<RankTrace> traces = GenerateRankTraces(o);
  std::string first;
  for (int r : {2, 0, 3, 1}) {  // uploaded out of order: the viewer orders by rank
    const std::string path = cluster_.root() + "/rank" + std::to_string(r) + ".json";
    std::ofstream(path) << traces[static_cast<size_t>(r)].json;
    CommandResult up = cluster_.Cli({"upload", path, "--job", "ranks", "--label", "capture_id=cap-web", "--json"});
    ASSERT_EQ(up.exit_code, 0) << up.err;
    if (r == 0) first = JsonStringField(up.out, "profile_id");
  }
  const std::string screenshots = std::string(FLEETPROF_BIN_DIR) + "/../web-screenshots/job-trace";
  fs::create_directories(screenshots);
  CommandResult browser =
      RunCommand({kPython, Source("tests/web/browser_check.py"), "--url", "http://" + cluster_.http_addr(),
                  "--profile-id", first, "--job-trace", "ranks", "--job-trace-capture", "cap-web",
                  "--job-trace-ranks", "4", "--screenshots", screenshots},
                 240);
  EXPECT_EQ(browser.exit_code, 0) << browser.out << browser.err;
  std::cout << browser.out;
}

// Fleet accounting on /fleet: sampled captures of an XLA stand-in (job fleet-train) feed the
// rollups; the page shows the top kernel the API answers, the job, idle time and sampling status.
TEST_F(WebAppTest, TheFleetPageShowsTheSampledDeviceTimeWithIntervals) {
  FLEETPROF_REQUIRE_PATH(CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb"));
  FLEETPROF_REQUIRE(PythonHasGrpc(), XPROF_PYTHON << " able to import grpc and google.protobuf (Debian python3-grpcio)");
  StandInOptions options;
  options.xspace_path = CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb");
  options.sleep_ms = 100;
  ProfilerStandIn standin;
  const absl::Status started = standin.Start(options, cluster_.root() + "/xprof");
  ASSERT_TRUE(started.ok()) << "the XLA profiler stand-in did not start: " << started;
  ASSERT_GE(cluster_.StartAgent({"--node=xla-node", "--target=job=fleet-train,xprof=" + standin.address()}), 0);
  ASSERT_TRUE(Eventually(20, [&] { return cluster_.Cli({"agents", "--json"}).out.find("xla-node") != std::string::npos; }));
  ASSERT_EQ(cluster_.Cli({"sampling", "set", "--every", "2s", "--duration_ms", "200", "--max_overhead", "50%"}).exit_code,
            0);
  std::string top;
  ASSERT_TRUE(Eventually(60, [&] {
    top = cluster_.Cli({"fleet", "top", "--json", "--limit", "1"}).out;
    return top.find("\"samples\":0") == std::string::npos && top.find("\"rows\":[{") != std::string::npos;
  })) << top << cluster_.ServerLog();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(top).get(doc), simdjson::SUCCESS) << top;
  const std::string top_kernel(std::string_view(doc["rows"].at(0)["name"]));
  const std::string profiles = cluster_.Cli({"profiles", "--job", "fleet-train", "--json"}).out;
  const std::string id = JsonStringField(profiles, "profile_id");
  ASSERT_FALSE(id.empty()) << profiles;

  const std::string screenshots = std::string(FLEETPROF_BIN_DIR) + "/../web-screenshots/fleet";
  fs::create_directories(screenshots);
  CommandResult browser =
      RunCommand({kPython, Source("tests/web/browser_check.py"), "--url", "http://" + cluster_.http_addr(),
                  "--profile-id", id, "--expect-agent", "xla-node", "--expect-fleet-kernel", top_kernel,
                  "--expect-fleet-job", "fleet-train", "--screenshots", screenshots},
                 240);
  EXPECT_EQ(browser.exit_code, 0) << browser.out << browser.err << cluster_.ServerLog();
  EXPECT_NE(browser.out.find("ok   (i)"), std::string::npos) << browser.out;
  std::cout << browser.out;
}

TEST_F(WebAppTest, EveryGrafanaInfinityQueryAnswersRowsOnALiveServer) {
  ASSERT_FALSE(Upload(CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz"), "grafana-job").empty());
  CommandResult check = RunCommand({kPython, Source("tests/web/grafana_check.py"), "--dashboards",
                                    Source("deploy/grafana/dashboards"), "--sources", FLEETPROF_SOURCE_DIR,
                                    "--url", "http://" + cluster_.http_addr(), "--job", "grafana-job"},
                                   120);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  std::cout << check.out;
}

// With tokens on, the app asks for one (and explains a wrong one), keeps it for the tab and
// shows every page with it; the Grafana queries carry it too.
TEST(WebAppWithTokensTest, AsksForATokenThenEveryPageAndGrafanaQueryUsesIt) {
  FLEETPROF_REQUIRE_PATH(kPython);
  FLEETPROF_REQUIRE_PATH(kChromium);
  FLEETPROF_REQUIRE_PATH(CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz"));
  TestCluster cluster;
  const std::string token = "web-token-7f3a";
  std::ofstream(cluster.root() + "/tokens") << Sha256Hex(token) << " read,ingest user\n"
                                            << Sha256Hex("agent-token") << " agent,ingest web-node\n";
  std::ofstream(cluster.root() + "/web.token") << token << "\n";
  std::ofstream(cluster.root() + "/agent.token") << "agent-token\n";
  ASSERT_TRUE(cluster.StartServer("127.0.0.1:0", {"--auth_tokens_file=" + cluster.root() + "/tokens"}))
      << cluster.ServerLog();
  ASSERT_GE(cluster.StartAgent({"--node=web-node", "--token_file=" + cluster.root() + "/agent.token"}), 0);
  CommandResult upload = cluster.Cli({"upload", CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz"), "--job",
                                      "tokens", "--json", "--token_file=" + cluster.root() + "/web.token"});
  ASSERT_EQ(upload.exit_code, 0) << upload.err;
  const std::string id = JsonStringField(upload.out, "profile_id");
  const std::string screenshots = std::string(FLEETPROF_BIN_DIR) + "/../web-screenshots/tokens";
  fs::create_directories(screenshots);
  CommandResult browser =
      RunCommand({kPython, Source("tests/web/browser_check.py"), "--url", "http://" + cluster.http_addr(),
                  "--profile-id", id, "--expect-agent", "web-node", "--token", token, "--trace-viewer", "--screenshots",
                  screenshots},
                 240);
  EXPECT_EQ(browser.exit_code, 0) << browser.out << browser.err << cluster.ServerLog();
  EXPECT_NE(browser.out.find("ok   (t)"), std::string::npos) << browser.out;
  CommandResult grafana = RunCommand({kPython, Source("tests/web/grafana_check.py"), "--dashboards",
                                      Source("deploy/grafana/dashboards"), "--sources", FLEETPROF_SOURCE_DIR, "--url",
                                      "http://" + cluster.http_addr(), "--job", "tokens", "--token_file",
                                      cluster.root() + "/web.token"},
                                     120);
  EXPECT_EQ(grafana.exit_code, 0) << grafana.out << grafana.err;
}

}  // namespace
}  // namespace fleetprof::testing
