// The job timeline through the real server: eight generated ranks of one capture uploaded out
// of order, their offsets, the job window against each profile's own window, the collectives,
// the late_rank finding, the CLI's answers equal to the HTTP API's, and clear errors.
#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "httplib.h"
#include "simdjson.h"
#include "tests/jobtrace/rank_traces.h"
#include "tests/e2e/http_get.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

constexpr int kRanks = 8;
constexpr int kCollectives = 60;
constexpr int kLateRank = 5;

class JobTimelineHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
    http_ = std::make_unique<httplib::Client>("http://" + cluster_.http_addr());
    http_->set_read_timeout(60, 0);
    options_.ranks = kRanks;
    options_.collectives = kCollectives;
    options_.late_rank = kLateRank;
    std::mt19937_64 rng(2024);
    for (int r = 0; r < kRanks; ++r) {
      options_.skew_ns.push_back(std::uniform_int_distribution<int64_t>(-2'000'000'000, 2'000'000'000)(rng));
    }
    std::vector<RankTrace> traces = GenerateRankTraces(options_);
    for (int r : {3, 7, 0, 5, 1, 6, 2, 4}) {
      const std::string path = cluster_.root() + "/rank" + std::to_string(r) + ".json";
      std::ofstream(path) << traces[static_cast<size_t>(r)].json;
      ids_[r] = Upload(path, "train", "capture_id=cap-1");
    }
    other_ = Upload(cluster_.root() + "/rank0.json", "other", "capture_id=cap-1");
  }

  std::string Upload(const std::string& path, const std::string& job, const std::string& label) {
    CommandResult r = cluster_.Cli({"upload", path, "--job", job, "--label", label, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return JsonStringField(r.out, "profile_id");
  }

  std::string Get(const std::string& path, int status = 200) { return ExpectGet(*http_, path, status); }

  TestCluster cluster_;
  std::unique_ptr<httplib::Client> http_;
  RankTraceOptions options_;
  std::map<int, std::string> ids_;
  std::string other_;
};

TEST_F(JobTimelineHttpTest, TheCaptureIsOnRankZerosClockWithCollectivesMatchedAndTheLateRankFound) {
  simdjson::dom::parser parser;
  const std::string body = Get("/api/v1/jobs/train/trace?capture_id=cap-1");
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(body).get(doc), simdjson::SUCCESS) << body;
  EXPECT_EQ(std::string_view(doc["job"].get_string()), "train");
  simdjson::dom::array profiles = doc["profiles"].get_array();
  ASSERT_EQ(profiles.size(), static_cast<size_t>(kRanks));
  int r = 0;
  std::map<std::string, int64_t> offsets;
  for (simdjson::dom::element p : profiles) {
    SCOPED_TRACE(r);
    EXPECT_EQ(std::string_view(p["rank"].get_string()), std::to_string(r));  // rank order, not upload order
    EXPECT_EQ(std::string_view(p["profile_id"].get_string()), ids_[r]);
    const int64_t offset = p["clock_offset_ns"].get_int64();
    offsets[ids_[r]] = offset;
    if (r == 0) {
      EXPECT_TRUE(p["reference"].get_bool().value());
      EXPECT_EQ(offset, 0);
    } else {
      EXPECT_EQ(std::string_view(p["offset_source"].get_string()), "collectives");
      EXPECT_LE(std::llabs(offset - (options_.skew_ns[0] - options_.skew_ns[static_cast<size_t>(r)])), 20'000);
      EXPECT_EQ(int64_t(p["matched_collectives"].get_int64()), kCollectives);
      EXPECT_GT(int64_t(p["offset_uncertainty_ns"].get_int64()), 0);
    }
    ++r;
  }
  int tracks = 0;
  for (simdjson::dom::element t : doc["tracks"].get_array()) {
    const std::string pid(std::string_view(t["profile_id"].get_string()));
    ASSERT_TRUE(offsets.count(pid)) << pid;
    EXPECT_FALSE(std::string_view(t["rank"].get_string()).empty());
    ++tracks;
  }
  EXPECT_EQ(tracks, kRanks * 3);  // a collective stream, a compute stream, a host thread each

  // The CLI prints the same profiles.
  CommandResult cli = cluster_.Cli({"job-trace", "train", "--capture_id", "cap-1", "--json"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  simdjson::dom::parser cli_parser;
  simdjson::dom::element cli_doc = cli_parser.parse(cli.out);
  EXPECT_EQ(simdjson::minify(cli_doc["profiles"]), simdjson::minify(doc["profiles"]));

  // Collectives: every instance on all 8 ranks, rank 5 last at each.
  const std::string coll = Get("/api/v1/jobs/train/collectives?capture_id=cap-1");
  simdjson::dom::parser coll_parser;
  simdjson::dom::element c = coll_parser.parse(coll);
  EXPECT_EQ(int64_t(c["instances"].get_int64()), kCollectives);
  simdjson::dom::array listed = c["collectives"].get_array();
  ASSERT_EQ(listed.size(), static_cast<size_t>(kCollectives));
  for (simdjson::dom::element inst : listed) {
    EXPECT_EQ(std::string_view(inst["last_rank"].get_string()), std::to_string(kLateRank));
    EXPECT_EQ(inst["ranks"].get_array().size(), static_cast<size_t>(kRanks));
  }
  simdjson::dom::array ranks = c["ranks"].get_array();
  ASSERT_EQ(ranks.size(), static_cast<size_t>(kRanks));
  EXPECT_EQ(int64_t(ranks.at(kLateRank)["last_count"].get_int64()), kCollectives);
  CommandResult cli_coll = cluster_.Cli({"collectives", "train", "--capture_id", "cap-1", "--json"});
  ASSERT_EQ(cli_coll.exit_code, 0) << cli_coll.err;
  EXPECT_EQ(simdjson::minify(cli_parser.parse(cli_coll.out)["ranks"]), simdjson::minify(c["ranks"]));

  // The job diagnosis names the late rank, with its instances as evidence.
  CommandResult diagnose = cluster_.Cli({"diagnose", "--job", "train", "--json"});
  ASSERT_EQ(diagnose.exit_code, 0) << diagnose.err;
  simdjson::dom::element findings = cli_parser.parse(diagnose.out)["findings"];
  bool late = false;
  for (simdjson::dom::element f : findings.get_array()) {
    if (std::string_view(f["rule"].get_string()) != "late_rank") continue;
    late = true;
    EXPECT_DOUBLE_EQ(double(f["metric"].get_double()), 1.0);
    EXPECT_EQ(std::string_view(f["evidence"].at(0)["profile_id"].get_string()), ids_[kLateRank]);
  }
  EXPECT_TRUE(late) << diagnose.out;
}

// The job window over two named profiles equals each one's own window, shifted by its offset.
TEST_F(JobTimelineHttpTest, NamedProfilesGiveEachOnesOwnWindowShifted) {
  simdjson::dom::parser parser;
  simdjson::dom::element job = parser.parse(Get("/api/v1/jobs/train/trace?profile=" + ids_[6] + "&profile=" + ids_[2] +
                                                "&resolution_ns=50000"));
  simdjson::dom::array profiles = job["profiles"].get_array();
  ASSERT_EQ(profiles.size(), 2u);
  EXPECT_EQ(std::string_view(profiles.at(0)["rank"].get_string()), "2");  // the lower rank is the reference
  const int64_t offset = profiles.at(1)["clock_offset_ns"].get_int64();
  const int64_t start = job["start_ns"].get_int64(), end = job["end_ns"].get_int64();
  const std::string own_body = Get("/api/v1/profiles/" + ids_[6] + "/trace?start_ns=" + std::to_string(start - offset) +
                                   "&end_ns=" + std::to_string(end - offset) + "&resolution_ns=50000");
  simdjson::dom::parser own_parser;
  simdjson::dom::element own = own_parser.parse(own_body);
  std::vector<std::pair<int64_t, int64_t>> expected, got;
  for (simdjson::dom::element t : own["tracks"].get_array()) {
    for (simdjson::dom::element e : t["events"].get_array()) {
      expected.push_back({int64_t(e["start_ns"].get_int64()) + offset, e["dur_ns"].get_int64()});
    }
    for (simdjson::dom::element m : t["merged"].get_array()) {
      expected.push_back({int64_t(m["start_ns"].get_int64()) + offset, -int64_t(m["count"].get_int64())});
    }
  }
  for (simdjson::dom::element t : job["tracks"].get_array()) {
    if (std::string_view(t["profile_id"].get_string()) != ids_[6]) continue;
    for (simdjson::dom::element e : t["events"].get_array()) got.push_back({e["start_ns"].get_int64(), e["dur_ns"].get_int64()});
    for (simdjson::dom::element m : t["merged"].get_array()) got.push_back({m["start_ns"].get_int64(), -int64_t(m["count"].get_int64())});
  }
  EXPECT_FALSE(expected.empty());
  EXPECT_EQ(got, expected);
}

TEST_F(JobTimelineHttpTest, ASelectionThatIsMissingOrWrongIsAClearError) {
  EXPECT_NE(Get("/api/v1/jobs/train/trace", 400).find("capture_id or profile"), std::string::npos);
  EXPECT_NE(Get("/api/v1/jobs/train/trace?capture_id=nope", 404).find("no profile of capture nope"), std::string::npos);
  EXPECT_NE(Get("/api/v1/jobs/train/collectives?profile=" + other_, 400).find("belongs to job other"), std::string::npos);
  EXPECT_NE(Get("/api/v1/jobs/train/collectives?capture_id=cap-1&limit=-1", 400).find("limit"), std::string::npos);
  CommandResult usage = cluster_.Cli({"job-trace", "train"});
  EXPECT_NE(usage.exit_code, 0);
  EXPECT_NE(usage.err.find("usage: fleetprof job-trace"), std::string::npos) << usage.err;
}

// agent_sync labels (what a capturing agent attaches) and the collectives both give offsets: the
// one with the smaller uncertainty wins.
TEST_F(JobTimelineHttpTest, AgentSyncWinsWhereItIsMoreCertainThanTheCollectives) {
  std::vector<RankTrace> traces = GenerateRankTraces(options_);
  const int64_t truth = options_.skew_ns[0] - options_.skew_ns[1];
  auto upload = [&](int rank, int64_t offset, int64_t uncertainty) {
    const std::string path = cluster_.root() + "/sync" + std::to_string(rank) + ".json";
    std::ofstream(path) << traces[static_cast<size_t>(rank)].json;
    CommandResult r = cluster_.Cli({"upload", path, "--job", "synced", "--json", "--label",
                                    "clock_offset_ns=" + std::to_string(offset), "--label",
                                    "clock_uncertainty_ns=" + std::to_string(uncertainty), "--label",
                                    "capture_start_unix_ns=1700000000000000000", "--label", "capture_window_ns=1000000000"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return JsonStringField(r.out, "profile_id");
  };
  // The traces' clocks are wall time; the agents measured the skews (to the server's clock).
  const std::string a = upload(0, -options_.skew_ns[0], 40);
  const std::string b = upload(1, -options_.skew_ns[1] + 55, 40);
  simdjson::dom::parser parser;
  simdjson::dom::element p1 = parser.parse(Get("/api/v1/jobs/synced/trace?profile=" + a + "&profile=" + b))["profiles"].at(1);
  EXPECT_EQ(std::string_view(p1["offset_source"].get_string()), "agent_sync");
  EXPECT_EQ(int64_t(p1["clock_offset_ns"].get_int64()), truth + 55);
  EXPECT_EQ(int64_t(p1["offset_uncertainty_ns"].get_int64()), 80);
  // An uncertain sync (1 ms): the collectives say it better.
  const std::string c = upload(0, -options_.skew_ns[0], 1'000'000);
  const std::string d = upload(1, -options_.skew_ns[1], 1'000'000);
  simdjson::dom::element p2 = parser.parse(Get("/api/v1/jobs/synced/trace?profile=" + c + "&profile=" + d))["profiles"].at(1);
  EXPECT_EQ(std::string_view(p2["offset_source"].get_string()), "collectives");
  EXPECT_LE(std::llabs(int64_t(p2["clock_offset_ns"].get_int64()) - truth), 20'000);
}

// The agent measures its clock against the server's over its stream; on one host the two are
// the same clock, so the measured offset lies within the uncertainty it states.
TEST(AgentClockSyncTest, OnLoopbackTheMeasuredOffsetIsWithinItsUncertainty) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();
  ASSERT_GE(cluster.StartAgent({"--node=sync-node"}), 0);
  std::string out;
  for (int i = 0; i < 100; ++i) {
    CommandResult r = cluster.Cli({"agents", "--json"});
    if (r.exit_code == 0 && r.out.find("clock_offset_ns") != std::string::npos) {
      out = r.out;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_FALSE(out.empty()) << "no heartbeat with a clock measure";
  simdjson::dom::parser parser;
  simdjson::dom::element agent = parser.parse(out)["agents"].at(0);
  const int64_t offset = agent["clock_offset_ns"].get_int64();
  const int64_t uncertainty = agent["clock_uncertainty_ns"].get_int64();
  std::cout << "agent_sync on loopback: offset " << offset << " ns, uncertainty " << uncertainty << " ns\n";
  EXPECT_GT(uncertainty, 0);
  EXPECT_LE(std::llabs(offset), uncertainty);
}

}  // namespace
}  // namespace fleetprof::testing
