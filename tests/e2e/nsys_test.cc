// Nsight Systems exports through the real server (issue 41): uploaded, they answer kernels, ops
// and breakdowns equal to `fleetprof analyze` and the corpus references, `stats` equal to what
// `nsys stats` printed (over the CLI, HTTP and a local file, with a report picked, and as CSV
// with nsys's columns), a kernel diff of two exports, a trace window, and a flame graph whose
// device total is the kernels' total.

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "simdjson.h"
#include "tests/analysis/stats_reference.h"
#include "tests/e2e/http_get.h"
#include "tests/e2e/reference_compare.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

const char* const kExports[] = {"saxpy_a100.sqlite", "cloverleaf_a100.sqlite", "h100_2gpu_1s.sqlite"};

class NsysServedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
    http_ = std::make_unique<httplib::Client>("http://" + cluster_.http_addr());
    http_->set_read_timeout(60, 0);
  }

  std::string Upload(const std::string& path) {
    CommandResult r = cluster_.Cli({"upload", path, "--job", "nsys", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err << cluster_.ServerLog();
    return JsonStringField(r.out, "profile_id");
  }

  int64_t SumOf(const std::string& body, const char* section, const char* field) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    EXPECT_EQ(parser.parse(body).get(doc), simdjson::SUCCESS) << body.substr(0, 200);
    int64_t sum = 0;
    simdjson::dom::array rows;
    if (doc[section].get(rows) != simdjson::SUCCESS) return 0;
    for (simdjson::dom::element row : rows) sum += int64_t(row[field].get_int64());
    return sum;
  }

  TestCluster cluster_;
  std::unique_ptr<httplib::Client> http_;
};

TEST_F(NsysServedTest, EveryExportServesItsReferenceAndItsNsysStats) {
  for (const char* name : kExports) {
    SCOPED_TRACE(name);
    const std::string file = CorpusPath(std::string("nsys/") + name + ".gz");
    FLEETPROF_REQUIRE_PATH(file);
    const std::string reference = ReadSmallFile(CorpusPath(std::string("reference/") + name + ".ref.json"));
    const std::string id = Upload(file);
    ASSERT_FALSE(id.empty());
    CommandResult analyzed = RunCommand({BinDir() + "/fleetprof", "analyze", file, "--json"});
    ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
    for (auto [command, section] : {std::pair{"kernels", "kernels"}, {"breakdown", "devices"}, {"ops", "ops"}}) {
      CommandResult served = cluster_.Cli({command, id, "--json"});
      ASSERT_EQ(served.exit_code, 0) << served.err;
      EXPECT_EQ(CompareSection(served.out, analyzed.out, section), "") << command;
      EXPECT_EQ(CompareSection(served.out, reference, section), "") << command << " vs reference";
    }
    // stats: stored, over the CLI and HTTP; and of the file itself, analysed by the CLI.
    CommandResult stats = cluster_.Cli({"stats", id, "--json"});
    ASSERT_EQ(stats.exit_code, 0) << stats.err;
    analysis::testing::ExpectStatsEqualReference(stats.out, std::string(name) + ".ref.json");
    analysis::testing::ExpectStatsEqualReference(ExpectGet(*http_, "/api/v1/profiles/" + id + "/stats"),
                                                 std::string(name) + ".ref.json");
    CommandResult local = RunCommand({BinDir() + "/fleetprof", "stats", file, "--json"});
    ASSERT_EQ(local.exit_code, 0) << local.err;
    analysis::testing::ExpectStatsEqualReference(local.out, std::string(name) + ".ref.json");
    // The flame graph holds every kernel's time.
    const std::string base = "/api/v1/profiles/" + id;
    const int64_t device = SumOf(ExpectGet(*http_, base + "/kernels"), "kernels", "total_ns");
    simdjson::dom::parser parser;
    simdjson::dom::element flame;
    const std::string flame_body = ExpectGet(*http_, base + "/flamegraph?value=device_ns");
    ASSERT_EQ(parser.parse(flame_body).get(flame), simdjson::SUCCESS);
    EXPECT_EQ(int64_t(flame["total"].get_int64()), device);
    // A trace window of the whole profile has events.
    CommandResult window = cluster_.Cli({"trace", id, "--json"});
    ASSERT_EQ(window.exit_code, 0) << window.err;
    EXPECT_NE(window.out.find("\"tracks\""), std::string::npos) << window.out.substr(0, 300);
  }
}

TEST_F(NsysServedTest, AReportPickedAloneAndTheCsvWithNsysColumns) {
  const std::string file = CorpusPath("nsys/saxpy_a100.sqlite.gz");
  FLEETPROF_REQUIRE_PATH(file);
  const std::string id = Upload(file);
  const std::string one = ExpectGet(*http_, "/api/v1/profiles/" + id + "/stats?report=cuda_api_sum");
  EXPECT_NE(one.find("\"cuda_api_sum\":["), std::string::npos) << one;
  EXPECT_EQ(one.find("cuda_gpu_kern_sum"), std::string::npos) << one;
  const std::string bad = ExpectGet(*http_, "/api/v1/profiles/" + id + "/stats?report=gpu_sum", 400);
  EXPECT_NE(bad.find("unknown report 'gpu_sum'"), std::string::npos) << bad;

  CommandResult csv = cluster_.Cli({"stats", id, "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::vector<std::string> headers;
  for (absl::string_view section : absl::StrSplit(csv.out, "\n\n")) {
    headers.emplace_back(section.substr(0, section.find('\n')));
  }
  EXPECT_EQ(headers, (std::vector<std::string>{
                         "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name",
                         "Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation",
                         "Total (MB),Count,Avg (MB),Med (MB),Min (MB),Max (MB),StdDev (MB),Operation",
                         "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name",
                         "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range",
                     }));
}

TEST_F(NsysServedTest, TwoExportsDiffByKernel) {
  const std::string a = CorpusPath("nsys/saxpy_a100.sqlite.gz"), b = CorpusPath("nsys/cloverleaf_a100.sqlite.gz");
  FLEETPROF_REQUIRE_PATH(a);
  FLEETPROF_REQUIRE_PATH(b);
  const std::string first = Upload(a), second = Upload(b);
  CommandResult diff = cluster_.Cli({"diff", first, second, "--by", "kernel", "--json"});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_NE(diff.out.find("saxpy"), std::string::npos) << diff.out.substr(0, 400);
}

// Someone else's SQLite file, cut short or not an export at all: the upload is refused with the
// reason on one line, nothing is listed for it, and the server goes on answering.
TEST_F(NsysServedTest, ABadExportIsRefusedClearlyAndTheServerKeepsServing) {
  const std::string file = CorpusPath("nsys/saxpy_a100.sqlite.gz");
  FLEETPROF_REQUIRE_PATH(file);
  const std::string good = Upload(file);
  CommandResult plain = RunCommand({"/bin/sh", "-c", "gzip -dc '" + file + "'"});
  ASSERT_EQ(plain.exit_code, 0);
  const std::string truncated = cluster_.root() + "/truncated.sqlite";
  { std::ofstream(truncated, std::ios::binary) << plain.out.substr(0, plain.out.size() / 2); }
  const std::string not_nsys = cluster_.root() + "/empty_db.sqlite";
  { std::ofstream(not_nsys, std::ios::binary) << plain.out.substr(0, 100) << std::string(4096 - 100, '\0'); }
  for (const std::string& bad : {truncated, not_nsys}) {
    CommandResult r = cluster_.Cli({"upload", bad, "--job", "nsys"});
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.err.find("SQLite"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
  CommandResult listed = cluster_.Cli({"profiles", "--job", "nsys", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find(good), std::string::npos);
  EXPECT_EQ(listed.out.find("truncated.sqlite"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("empty_db.sqlite"), std::string::npos) << listed.out;
  CommandResult kernels = cluster_.Cli({"kernels", good, "--json"});
  EXPECT_EQ(kernels.exit_code, 0) << kernels.err;
}

}  // namespace
}  // namespace fleetprof::testing
