// Flame graphs and the pprof export through the real server: the HTTP routes declared in
// query.proto and the CLI's export, checked against the breakdowns the same server answers and,
// for pprof, read back by the real `go tool pprof`.

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "httplib.h"
#include "simdjson.h"
#include "tests/e2e/http_get.h"
#include "tests/e2e/go_pprof.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

const char* const kTraces[] = {
    "kineto/v100_resnet_rank0.pt.trace.json.gz", "kineto/v100_resnet50_legacy_schema.pt.trace.json.gz",
    "kineto/a100_alexnet.json.gz",               "kineto/a100_nccl_rank0.json.gz",
    "kineto/mi250_rocm62.json.gz",               "kineto/mtia_inference_rank0.json.gz",
    "xspace/tf_8gpu_multi_worker.xplane.pb",
};

// What a flame graph answer says, with the checks every answer must pass.
struct Graph {
  int64_t total = -1;
  int64_t self_sum = 0;  // the selves of every node of every level
};

class FlameHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
    http_ = std::make_unique<httplib::Client>("http://" + cluster_.http_addr());
    http_->set_read_timeout(60, 0);
  }

  std::string Upload(const std::string& path, const std::string& job, const std::string& label = "") {
    std::vector<std::string> args{"upload", path, "--job", job, "--json"};
    if (!label.empty()) args.insert(args.end(), {"--label", label});
    CommandResult r = cluster_.Cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err << cluster_.ServerLog();
    return JsonStringField(r.out, "profile_id");
  }

  std::string Get(const std::string& path, int status = 200) { return ExpectGet(*http_, path, status); }

  // Sum of `field` over the rows of `section` of a breakdown answer.
  int64_t SumOf(const std::string& path, const char* section, const char* field) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string body = Get(path);
    EXPECT_EQ(parser.parse(body).get(doc), simdjson::SUCCESS) << body;
    int64_t sum = 0;
    simdjson::dom::array rows;
    if (doc[section].get(rows) != simdjson::SUCCESS) return 0;
    for (simdjson::dom::element row : rows) sum += int64_t(row[field].get_int64());
    return sum;
  }

  // GETs a flame graph and checks its layout: root "total" alone on level 0, groups of 4
  // numbers, name indices in range, offsets never negative, every level within the total.
  Graph FlameGraph(const std::string& path) {
    Graph g;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string body = Get(path);
    if (parser.parse(body).get(doc) != simdjson::SUCCESS) {
      ADD_FAILURE() << body;
      return g;
    }
    simdjson::dom::array names = doc["names"].get_array();
    EXPECT_EQ(std::string_view(names.at(0).get_string()), "total");
    g.total = int64_t(doc["total"].get_int64());
    int level_index = 0;
    for (simdjson::dom::element level : doc["levels"].get_array()) {
      std::vector<int64_t> v;
      for (simdjson::dom::element x : level["values"].get_array()) v.push_back(int64_t(x.get_int64()));
      EXPECT_EQ(v.size() % 4, 0u);
      if (level_index == 0) EXPECT_EQ(v, (std::vector<int64_t>{0, g.total, v.size() > 2 ? v[2] : 0, 0}));
      int64_t x = 0;
      for (size_t i = 0; i + 3 < v.size(); i += 4) {
        EXPECT_GE(v[i], 0);
        EXPECT_GE(v[i + 2], 0);
        EXPECT_LE(v[i + 2], v[i + 1]);
        EXPECT_LT(static_cast<size_t>(v[i + 3]), names.size());
        x += v[i] + v[i + 1];
        g.self_sum += v[i + 2];
      }
      EXPECT_LE(x, g.total) << "level " << level_index;
      ++level_index;
    }
    return g;
  }

  TestCluster cluster_;
  std::unique_ptr<httplib::Client> http_;
};

TEST_F(FlameHttpTest, ProfileAndJobFlameGraphsEqualTheBreakdownsOnTheWholeCorpus) {
  int64_t job_device = 0, job_host = 0, labelled_device = 0;
  for (const char* trace : kTraces) {
    SCOPED_TRACE(trace);
    const std::string path = CorpusPath(trace);
    FLEETPROF_REQUIRE_PATH(path);
    const bool labelled = std::string(trace).find("alexnet") != std::string::npos;
    const std::string id = Upload(path, "flame", labelled ? "pick=yes" : "pick=no");
    ASSERT_FALSE(id.empty());
    const std::string base = "/api/v1/profiles/" + id;
    const int64_t device = SumOf(base + "/kernels", "kernels", "total_ns");
    const int64_t host_self = SumOf(base + "/ops", "ops", "self_ns");
    const Graph d = FlameGraph(base + "/flamegraph?value=device_ns");
    EXPECT_EQ(d.total, device);
    EXPECT_EQ(d.self_sum, device);
    EXPECT_EQ(FlameGraph(base + "/flamegraph").total, device);  // device_ns is the default
    const Graph h = FlameGraph(base + "/flamegraph?value=host_self_ns");
    EXPECT_EQ(h.total, host_self);
    EXPECT_EQ(h.self_sum, host_self);
    const Graph c = FlameGraph(base + "/flamegraph?value=count");
    EXPECT_EQ(c.self_sum, c.total);
    EXPECT_GT(c.total, 0);
    job_device += device;
    job_host += host_self;
    if (labelled) labelled_device = device;
  }
  EXPECT_EQ(FlameGraph("/api/v1/jobs/flame/flamegraph?value=device_ns").total, job_device);
  EXPECT_EQ(FlameGraph("/api/v1/jobs/flame/flamegraph?value=host_self_ns").total, job_host);
  EXPECT_EQ(FlameGraph("/api/v1/jobs/flame/flamegraph?value=device_ns&label=pick=yes").total, labelled_device);
  EXPECT_EQ(FlameGraph("/api/v1/jobs/flame/flamegraph?label=pick=none").total, 0);
}

TEST_F(FlameHttpTest, BadFlameGraphRequestsAreClearErrors) {
  const std::string path = CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  const std::string id = Upload(path, "flame");
  const std::string bad = Get("/api/v1/profiles/" + id + "/flamegraph?value=cpu", 400);
  EXPECT_NE(bad.find("INVALID_ARGUMENT"), std::string::npos) << bad;
  EXPECT_NE(bad.find("device_ns"), std::string::npos) << bad;
  Get("/api/v1/profiles/no-such-profile/flamegraph", 404);
  Get("/api/v1/profiles/" + id + "/flamegraph?bogus=1", 400);
}

TEST_F(FlameHttpTest, PprofExportOfRouteAndCliReadsBackInGoToolPprof) {
  FLEETPROF_REQUIRE_GO();
  for (const char* trace : {"kineto/a100_alexnet.json.gz", "kineto/v100_resnet_rank0.pt.trace.json.gz",
                            "xspace/tf_8gpu_multi_worker.xplane.pb"}) {
    SCOPED_TRACE(trace);
    const std::string path = CorpusPath(trace);
    FLEETPROF_REQUIRE_PATH(path);
    const std::string id = Upload(path, "pprof");
    const std::string base = "/api/v1/profiles/" + id;
    const int64_t device = SumOf(base + "/kernels", "kernels", "total_ns");
    const int64_t host_self = SumOf(base + "/ops", "ops", "self_ns");

    const std::string cli_file = cluster_.root() + "/" + id + ".cli.pb.gz";
    CommandResult r = cluster_.Cli({"export", id, "--format", "pprof", "-o", cli_file});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto res = http_->Get(base + "/export?format=pprof");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/gzip");
    const std::string http_file = cluster_.root() + "/" + id + ".http.pb.gz";
    std::ofstream(http_file, std::ios::binary) << res->body;
    EXPECT_EQ(ReadSmallFile(http_file), ReadSmallFile(cli_file));

    for (const std::string& file : {cli_file, http_file}) {
      absl::StatusOr<int64_t> d = GoPprofTotal(file, "device_time");
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_EQ(*d, device);
      absl::StatusOr<int64_t> h = GoPprofTotal(file, "host_self_time");
      ASSERT_TRUE(h.ok()) << h.status();
      EXPECT_EQ(*h, host_self);
    }
  }
}

}  // namespace
}  // namespace fleetprof::testing
