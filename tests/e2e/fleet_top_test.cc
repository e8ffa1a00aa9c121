// Fleet accounting end to end (issue 42, item 3): the real server, two agents on two nodes and
// three XLA profiler stand-ins in two jobs. `fleetprof sampling set` makes SAMPLED captures;
// once they are indexed, `fleetprof fleet top --by kernel|job` (and its HTTP route) answer from
// the rollups kept at commit with rows whose estimates and shares equal a brute-force sum over
// the sampled profiles themselves: each profile's exact kernel times over devices x span, times
// the device-time its capture target stands for; and the same after a restart.

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/e2e/http_get.h"
#include "tests/e2e/json_array.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"
#include "tests/xprof/profiler_standin_process.h"

namespace fleetprof::testing {
namespace {

struct SampledTarget {
  std::string capture_id, state, job, profile_id;
  int64_t weight_device_ns = 0, devices = 0;
  bool running = false;
};

// Every SAMPLED capture's targets (one each), newest first.
std::vector<SampledTarget> SampledTargets(TestCluster& cluster) {
  CommandResult r = cluster.Cli({"captures", "--limit", "1000", "--json"});
  std::vector<SampledTarget> out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (r.exit_code != 0 || parser.parse(r.out).get(doc) != simdjson::SUCCESS) return out;
  for (simdjson::dom::element c : Array(doc["captures"])) {
    if (std::string_view(c["reason"].get_string().value()) != "SAMPLED") continue;
    for (simdjson::dom::element t : Array(c["targets"])) {
      SampledTarget s;
      s.capture_id = std::string(c["capture_id"].get_string().value());
      s.state = std::string(t["state"].get_string().value());
      s.running = std::string_view(c["state"].get_string().value()) == "RUNNING";
      s.job = std::string(t["job"].get_string().value());
      s.profile_id = std::string(t["profile_id"].get_string().value());
      s.weight_device_ns = t["weight_device_ns"].get_int64().value();
      s.devices = t["devices"].get_int64().value();
      out.push_back(s);
    }
  }
  return out;
}

// What fleet top should answer, summed here over the profiles (DESIGN.md's estimator).
struct BruteForce {
  double total = 0;
  std::map<std::string, double> kernel_ns, job_ns;
  std::map<std::string, int64_t> kernel_samples, job_samples;
  int64_t samples = 0;
};

BruteForce SumOverProfiles(TestCluster& cluster, const std::vector<SampledTarget>& targets) {
  BruteForce want;
  for (const SampledTarget& t : targets) {
    if (t.state != "INDEXED") continue;
    CommandResult r = cluster.Cli({"profile", t.profile_id, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    simdjson::dom::parser parser;
    simdjson::dom::element summary;
    if (parser.parse(r.out)["summary"].get(summary) != simdjson::SUCCESS) {
      ADD_FAILURE() << "profile " << t.profile_id << " has no summary: " << r.out.substr(0, 300);
      continue;
    }
    const int64_t span = summary["end_ns"].get_int64().value() - summary["start_ns"].get_int64().value();
    const auto trace_devices = static_cast<int64_t>(summary["devices"].get_array().value().size());
    const int64_t devices = std::max<int64_t>({1, t.devices, trace_devices});
    const double per_ns = static_cast<double>(t.weight_device_ns) / static_cast<double>(devices * span);
    ++want.samples;
    want.total += static_cast<double>(t.weight_device_ns);
    want.job_ns[t.job] += static_cast<double>(t.weight_device_ns);
    ++want.job_samples[t.job];
    std::set<std::string> seen;
    for (simdjson::dom::element k : Array(summary["kernels"])) {
      const std::string name(k["name"].get_string().value());
      want.kernel_ns[name] += per_ns * static_cast<double>(k["total_ns"].get_int64().value());
      if (seen.insert(name).second) ++want.kernel_samples[name];
    }
  }
  return want;
}

void ExpectRowsMatch(const std::string& json, const std::map<std::string, double>& want_ns,
                     const std::map<std::string, int64_t>& want_samples, double total) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(json).value();
  size_t rows = 0;
  for (simdjson::dom::element row : Array(doc["rows"])) {
    ++rows;
    const std::string name(row["name"].get_string().value());
    ASSERT_TRUE(want_ns.count(name)) << "a row no profile has: " << name;
    const double want = want_ns.at(name);
    EXPECT_NEAR(static_cast<double>(row["device_ns"].get_int64().value()), want, 1.0) << name;
    // The profiles' exact share of the fleet's device-time.
    EXPECT_NEAR(row["share"].get_double().value(), want / total, 1e-9) << name;
    EXPECT_EQ(row["samples"].get_int64().value(), want_samples.at(name)) << name;
    // Every target is sampled each period (p = 1): nothing is estimated, the interval is the value.
    EXPECT_EQ(row["ci95_low_ns"].get_int64().value(), row["device_ns"].get_int64().value()) << name;
    EXPECT_EQ(row["ci95_high_ns"].get_int64().value(), row["device_ns"].get_int64().value()) << name;
  }
  EXPECT_EQ(rows, want_ns.size());  // JSON without --limit: every row
}

class FleetTopTest : public ::testing::Test {
 protected:
  // An XLA profiler stand-in whose captures take 100 ms; its address, "" when it did not start.
  std::string StartStandIn(const std::string& name) {
    StandInOptions options;
    options.xspace_path = CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb");
    options.sleep_ms = 100;
    standins_.push_back(std::make_unique<ProfilerStandIn>());
    const absl::Status started = standins_.back()->Start(options, cluster_.root() + "/" + name);
    if (!started.ok()) {
      ADD_FAILURE() << started;
      return "";
    }
    return standins_.back()->address();
  }

  TestCluster cluster_;
  std::vector<std::unique_ptr<ProfilerStandIn>> standins_;
};

TEST_F(FleetTopTest, SampledProfilesRowsEqualTheProfilesExactShares) {
  FLEETPROF_REQUIRE_PATH(XPROF_PYTHON);
  FLEETPROF_REQUIRE(PythonHasGrpc(), XPROF_PYTHON << " able to import grpc and google.protobuf (Debian python3-grpcio)");
  FLEETPROF_REQUIRE_PATH(CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb"));
  ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
  const std::string a = StartStandIn("a"), b = StartStandIn("b"), c = StartStandIn("c");
  ASSERT_FALSE(a.empty() || b.empty() || c.empty()) << "profiler stand-ins did not start";
  ASSERT_GE(cluster_.StartAgent({"--node=node-1", "--target=job=train,xprof=" + a,
                                 "--target=job=serve,xprof=" + b}), 0);
  ASSERT_GE(cluster_.StartAgent({"--node=node-2", "--target=job=train,xprof=" + c}), 0);
  ASSERT_TRUE(Eventually(20, [&] {
    const std::string agents = cluster_.Cli({"agents", "--json"}).out;
    return agents.find("node-1") != std::string::npos && agents.find("node-2") != std::string::npos;
  }));
  // Nothing sampled yet: an empty answer, not an error.
  CommandResult empty = cluster_.Cli({"fleet", "top", "--json"});
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_NE(empty.out.find("\"samples\":0"), std::string::npos) << empty.out;

  // The train job's labels come from an upload of its own; its sampled profiles carry only
  // their capture's, and are counted under the job's.
  CommandResult labelled = cluster_.Cli({"upload", CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb"), "--job",
                                         "train", "--label", "team=lm"});
  ASSERT_EQ(labelled.exit_code, 0) << labelled.err;

  ASSERT_EQ(cluster_.Cli({"sampling", "set", "--every", "3s", "--duration_ms", "200", "--max_overhead", "50%"}).exit_code,
            0);
  ASSERT_TRUE(Eventually(90, [&] {
    std::vector<SampledTarget> t = SampledTargets(cluster_);
    return std::count_if(t.begin(), t.end(), [](const SampledTarget& s) { return s.state == "INDEXED"; }) >= 6;
  })) << cluster_.Cli({"captures", "--json"}).out << cluster_.ServerLog();
  ASSERT_EQ(cluster_.Cli({"sampling", "off"}).exit_code, 0);
  std::vector<SampledTarget> targets;
  ASSERT_TRUE(Eventually(60, [&] {
    targets = SampledTargets(cluster_);
    return std::none_of(targets.begin(), targets.end(), [](const SampledTarget& s) { return s.running; });
  })) << cluster_.Cli({"captures", "--json"}).out;
  const BruteForce want = SumOverProfiles(cluster_, targets);
  ASSERT_GE(want.samples, 6);
  EXPECT_EQ(want.job_ns.size(), 2u);

  CommandResult kernels = cluster_.Cli({"fleet", "top", "--by", "kernel", "--json"});
  ASSERT_EQ(kernels.exit_code, 0) << kernels.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(kernels.out).value();
  EXPECT_EQ(std::string_view(doc["by"].get_string().value()), "kernel");
  EXPECT_EQ(doc["samples"].get_int64().value(), want.samples) << kernels.out;
  EXPECT_NEAR(static_cast<double>(doc["total_device_ns"].get_int64().value()), want.total, 1.0);
  EXPECT_EQ(doc["busy_device_ns"].get_int64().value() + doc["idle_device_ns"].get_int64().value(),
            doc["total_device_ns"].get_int64().value());
  EXPECT_GT(doc["busy_device_ns"].get_int64().value(), 0);
  EXPECT_GT(doc["idle_device_ns"].get_int64().value(), 0);
  ExpectRowsMatch(kernels.out, want.kernel_ns, want.kernel_samples, want.total);
  EXPECT_NE(kernels.out.find("\"name\":\"MemcpyH2D\""), std::string::npos) << "copies are rows too";

  CommandResult jobs = cluster_.Cli({"fleet", "top", "--by", "job", "--json"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  ExpectRowsMatch(jobs.out, want.job_ns, want.job_samples, want.total);

  CommandResult team = cluster_.Cli({"fleet", "top", "--by", "job", "--label", "team=lm", "--json"});
  ASSERT_EQ(team.exit_code, 0) << team.err;
  simdjson::dom::element team_doc = parser.parse(team.out).value();
  EXPECT_EQ(team_doc["samples"].get_int64().value(), want.job_samples.at("train")) << team.out;
  ASSERT_EQ(team_doc["rows"].get_array().value().size(), 1u) << team.out;
  EXPECT_EQ(std::string_view(team_doc["rows"].at(0)["name"].get_string().value()), "train");
  EXPECT_NEAR(static_cast<double>(team_doc["rows"].at(0)["device_ns"].get_int64().value()), want.job_ns.at("train"), 1.0);

  // HTTP answers the same JSON; the table has the totals and a row per job.
  httplib::Client http("http://" + cluster_.http_addr());
  EXPECT_EQ(ExpectGet(http, "/api/v1/fleet/top?by=job") + "\n", jobs.out);
  CommandResult table = cluster_.Cli({"fleet", "top", "--by", "job"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("busy"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("idle"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("95% INTERVAL"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("serve"), std::string::npos) << table.out;
  CommandResult one = cluster_.Cli({"fleet", "top", "--limit", "1", "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(parser.parse(one.out)["rows"].get_array().value().size(), 1u);

  const std::string metrics = ExpectGet(http, "/metrics");
  EXPECT_NE(metrics.find("fleetprof_fleet_busy_device_seconds_total "), std::string::npos);
  EXPECT_NE(metrics.find("fleetprof_fleet_idle_device_seconds_total "), std::string::npos);
  EXPECT_NE(metrics.find("fleetprof_fleet_sampled_profiles_total " + std::to_string(want.samples)), std::string::npos)
      << metrics.substr(metrics.find("fleetprof_fleet_"), 600);

  // The rollups are the catalog's: a restarted server answers the same (since_ns aside, which
  // moves when an hour turns).
  ASSERT_EQ(cluster_.StopServer(), 0);
  ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
  CommandResult again = cluster_.Cli({"fleet", "top", "--by", "job", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  auto from_samples = [](const std::string& json) { return json.substr(json.find("\"samples\"")); };
  EXPECT_EQ(from_samples(again.out), from_samples(jobs.out));
  std::cout << table.out;
}

TEST_F(FleetTopTest, ABadGroupingOrWindowIsAClearError) {
  ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
  CommandResult r = cluster_.Cli({"fleet", "top", "--by", "gpu"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("kernel, op, job, node or device_type"), std::string::npos) << r.err;
  r = cluster_.Cli({"fleet", "top", "--since", "yesterday"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--since wants a duration"), std::string::npos) << r.err;
  r = cluster_.Cli({"fleet", "top", "--since", "90d"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("35 days"), std::string::npos) << r.err;
  r = cluster_.Cli({"fleet", "bottom"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("usage: fleetprof fleet top"), std::string::npos) << r.err;
  httplib::Client http("http://" + cluster_.http_addr());
  auto res = http.Get("/api/v1/fleet/top?by=gpu");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
}

}  // namespace
}  // namespace fleetprof::testing
