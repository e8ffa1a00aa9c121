// Regressions end to end: Kineto traces written here with known kernel times, uploaded under
// one job to the real server — six alike, then one whose gemm kernel takes 30% longer. One
// record, the same from the CLI and HTTP, a `regression` finding in the slow profile's diagnosis,
// the counter, the webhook's POST, and the record still there after a restart.

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "simdjson.h"
#include "tests/e2e/gemm_trace.h"
#include "tests/e2e/http_get.h"
#include "tests/e2e/json_array.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {


// The webhook's receiver: keeps every POSTed body.
class Receiver {
 public:
  Receiver() {
    server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      absl::MutexLock lock(&mu_);
      bodies_.push_back(req.body);
      res.status = 204;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<std::string> bodies() {
    absl::MutexLock lock(&mu_);
    return bodies_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  absl::Mutex mu_;
  std::vector<std::string> bodies_ ABSL_GUARDED_BY(mu_);
};

class RegressionTest : public ::testing::Test {
 protected:
  std::string Upload(const std::string& path) {
    CommandResult r = cluster_.Cli({"upload", path, "--job", "llm"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string id = r.out;
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    return id.substr(id.rfind(' ') + 1);  // "profile ID"
  }

  Receiver receiver_;
  TestCluster cluster_;
};

TEST_F(RegressionTest, ASlowKernelMakesOneRecordListedDiagnosedCountedAndPosted) {
  ASSERT_TRUE(cluster_.StartServer(
      "127.0.0.1:0", {"--regression_webhook", "http://127.0.0.1:" + std::to_string(receiver_.port()) + "/hook"}))
      << cluster_.ServerLog();
  std::vector<std::string> normal;
  for (int i = 0; i < 6; ++i) {
    normal.push_back(Upload(WriteTrace(cluster_.root() + "/normal" + std::to_string(i) + ".json", 10000)));
  }
  CommandResult none = cluster_.Cli({"regressions", "--job", "llm", "--json"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out.substr(0, none.out.find_last_not_of("\n") + 1), R"({"regressions":[]})");
  const std::string slow = Upload(WriteTrace(cluster_.root() + "/slow.json", 13000));
  ASSERT_FALSE(slow.empty());

  CommandResult cli = cluster_.Cli({"regressions", "--job", "llm", "--json"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(cli.out).get(doc), simdjson::SUCCESS) << cli.out;
  simdjson::dom::array records = Array(doc["regressions"]);
  ASSERT_EQ(records.size(), 1u) << cli.out;
  simdjson::dom::element r = records.at(0).value();
  EXPECT_EQ(std::string(r["job"].get_string().value()), "llm");
  EXPECT_EQ(std::string(r["profile_id"].get_string().value()), slow);
  EXPECT_EQ(std::string(r["what"].get_string().value()), "kernel");
  EXPECT_EQ(std::string(r["name"].get_string().value()), "gemm_kernel");
  // Per second of the 1 s span: 10 x 10 ms before, 10 x 13 ms now.
  EXPECT_EQ(int64_t(r["baseline_ns"]), 100'000'000) << cli.out;
  EXPECT_EQ(int64_t(r["now_ns"]), 130'000'000) << cli.out;
  EXPECT_NEAR(double(r["change"]), 0.3, 1e-9);
  EXPECT_GT(int64_t(r["detected_ns"]), 0);
  std::vector<std::string> baseline;
  for (simdjson::dom::element id : Array(r["baseline_profiles"])) {
    baseline.emplace_back(id.get_string().value());
  }
  EXPECT_EQ(baseline, normal);
  std::vector<std::string> keys;
  simdjson::dom::object fields = r.get_object().value();
  for (auto field : fields) keys.emplace_back(field.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"regression_id", "job", "profile_id", "detected_ns", "what", "name",
                                            "baseline_ns", "now_ns", "change", "baseline_profiles"}));

  // HTTP answers the same JSON; another job has none.
  httplib::Client http("http://" + cluster_.http_addr());
  simdjson::dom::parser p2;
  simdjson::dom::element over_http;
  const std::string body = ExpectGet(http, "/api/v1/regressions?job=llm");
  ASSERT_EQ(p2.parse(body).get(over_http), simdjson::SUCCESS) << body;
  EXPECT_EQ(simdjson::minify(over_http), simdjson::minify(doc));
  EXPECT_NE(ExpectGet(http, "/api/v1/regressions").find(slow), std::string::npos);
  EXPECT_EQ(ExpectGet(http, "/api/v1/regressions?job=other"), R"({"regressions":[]})");

  // The table form names it too.
  CommandResult table = cluster_.Cli({"regressions"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("gemm_kernel"), std::string::npos) << table.out;

  // diagnose of the slow profile has the finding, with the baseline as evidence; a normal one has none.
  CommandResult diagnosis = cluster_.Cli({"diagnose", slow, "--json"});
  ASSERT_EQ(diagnosis.exit_code, 0) << diagnosis.err;
  simdjson::dom::parser p3;
  simdjson::dom::element d;
  ASSERT_EQ(p3.parse(diagnosis.out).get(d), simdjson::SUCCESS);
  int regression_findings = 0;
  for (simdjson::dom::element f : Array(d["findings"])) {
    if (std::string(f["rule"].get_string().value()) != "regression") continue;
    ++regression_findings;
    EXPECT_NEAR(double(f["metric"]), 0.3, 1e-9);
    EXPECT_NE(std::string(f["summary"].get_string().value()).find("gemm_kernel"), std::string::npos);
    EXPECT_EQ(Array(f["evidence"]).size(), 6u);
  }
  EXPECT_EQ(regression_findings, 1) << diagnosis.out;
  CommandResult normal_diagnosis = cluster_.Cli({"diagnose", normal[5], "--json"});
  simdjson::dom::element nd;
  ASSERT_EQ(p3.parse(normal_diagnosis.out).get(nd), simdjson::SUCCESS);
  for (simdjson::dom::element f : Array(nd["findings"])) {
    EXPECT_NE(std::string(f["rule"].get_string().value()), "regression") << normal_diagnosis.out;
  }

  // The counter.
  EXPECT_NE(ExpectGet(http, "/metrics").find("fleetprof_regressions_total{job=\"llm\"} 1"), std::string::npos);

  // The webhook got the record as JSON.
  for (int i = 0; i < 200 && receiver_.bodies().empty(); ++i) absl::SleepFor(absl::Milliseconds(50));
  ASSERT_EQ(receiver_.bodies().size(), 1u);
  simdjson::dom::parser p4;
  simdjson::dom::element posted;
  ASSERT_EQ(p4.parse(receiver_.bodies()[0]).get(posted), simdjson::SUCCESS);
  EXPECT_EQ(simdjson::minify(posted), simdjson::minify(r));

  // Kept in the catalog: the same after a restart.
  ASSERT_EQ(cluster_.StopServer(), 0);
  ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
  CommandResult after = cluster_.Cli({"regressions", "--job", "llm", "--json"});
  EXPECT_EQ(after.out, cli.out);
}

TEST_F(RegressionTest, AWebhookThatIsNotHttpIsRefusedAtStart) {
  EXPECT_FALSE(cluster_.StartServer("127.0.0.1:0", {"--regression_webhook", "file:///etc/passwd"}));
  EXPECT_NE(cluster_.ServerLog().find("regression_webhook"), std::string::npos) << cluster_.ServerLog();
}

}  // namespace
}  // namespace fleetprof::testing
