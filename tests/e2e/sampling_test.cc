// Always-on sampling end to end (issue 42, item 1): the real server, two agents on two nodes and
// three XLA profiler stand-ins (one slower than a period). `fleetprof sampling set` makes SAMPLED
// captures of one target each, with the weight each profile stands for, within the budget in
// every period; a target whose last capture still runs is skipped and counted, never captured
// twice at once; `fleetprof sampling --json` shows the counters and `sampling off` stops it.

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/e2e/http_get.h"
#include "tests/e2e/json_array.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

const char kPython[] = "/usr/bin/python3";
constexpr int64_t kEveryNs = 3'000'000'000;
constexpr int64_t kDurationMs = 200;


struct Sampled {
  std::string capture_id, state, reason, target, node;
  int64_t created_at_ns = 0, weight_device_ns = 0, devices = 0;
  double inclusion_probability = 0;
  int targets = 0;
};

std::vector<Sampled> SampledCaptures(TestCluster& cluster) {
  CommandResult r = cluster.Cli({"captures", "--limit", "1000", "--json"});
  std::vector<Sampled> out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (r.exit_code != 0 || parser.parse(r.out).get(doc) != simdjson::SUCCESS) return out;
  for (simdjson::dom::element c : Array(doc["captures"])) {
    Sampled s;
    s.reason = std::string(c["reason"].get_string().value());
    if (s.reason != "SAMPLED") continue;
    s.capture_id = std::string(c["capture_id"].get_string().value());
    s.state = std::string(c["state"].get_string().value());
    s.created_at_ns = c["created_at_ns"].get_int64().value();
    for (simdjson::dom::element t : Array(c["targets"])) {
      ++s.targets;
      s.target = std::string(t["target"].get_string().value());
      s.node = std::string(t["node"].get_string().value());
      s.weight_device_ns = t["weight_device_ns"].get_int64().value();
      s.devices = t["devices"].get_int64().value();
      s.inclusion_probability = t["inclusion_probability"].get_double().value();
    }
    out.push_back(s);
  }
  std::sort(out.begin(), out.end(), [](const Sampled& a, const Sampled& b) { return a.created_at_ns < b.created_at_ns; });
  return out;
}

int64_t Int(const std::string& json, const char* key) {
  simdjson::dom::parser parser;
  return parser.parse(json)[key].get_int64().value();
}

double Double(const std::string& json, const char* key) {
  simdjson::dom::parser parser;
  return parser.parse(json)[key].get_double().value();
}

class SamplingTest : public ::testing::Test {
 protected:
  // An XLA profiler stand-in whose profiles take `sleep_ms`; its port.
  std::string StartStandIn(const std::string& name, int sleep_ms) {
    const std::string ready = cluster_.root() + "/" + name + ".ready";
    standins_.push_back(std::make_unique<ChildProcess>());
    standins_.back()->Start({kPython, std::string(FLEETPROF_SOURCE_DIR) + "/tests/xprof/profiler_standin.py", "--mode",
                            "emit", "--record", cluster_.root() + "/" + name + ".requests.json", "--ready", ready,
                            "--sleep_ms", std::to_string(sleep_ms), "--xspace",
                            CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb")},
                           cluster_.root() + "/" + name + ".log");
    const std::string port_json = WaitForFile(ready, 30);
    if (port_json.empty()) return "";
    return std::string(absl::StripAsciiWhitespace(
        port_json.substr(port_json.find(':') + 1, port_json.find('}') - port_json.find(':') - 1)));
  }

  TestCluster cluster_;
  std::vector<std::unique_ptr<ChildProcess>> standins_;
};

TEST_F(SamplingTest, SampledCapturesStayInBudgetNeverOverlapOnATargetAndAreCounted) {
  FLEETPROF_REQUIRE_PATH(kPython);
  FLEETPROF_REQUIRE_PATH(CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb"));
  ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
  const std::string a = StartStandIn("a", 100), b = StartStandIn("b", 100);
  const std::string slow = StartStandIn("slow", 4000);  // longer than a period: busy at the next
  ASSERT_FALSE(a.empty() || b.empty() || slow.empty()) << "profiler stand-ins did not start";
  ASSERT_GE(cluster_.StartAgent({"--node=node-1", "--target=job=train,xprof=127.0.0.1:" + a,
                                 "--target=job=serve,xprof=127.0.0.1:" + b}), 0);
  ASSERT_GE(cluster_.StartAgent({"--node=node-2", "--target=job=train,xprof=127.0.0.1:" + slow}), 0);
  ASSERT_TRUE(Eventually(20, [&] {
    const std::string agents = cluster_.Cli({"agents", "--json"}).out;
    return agents.find("node-1") != std::string::npos && agents.find("node-2") != std::string::npos;
  }));

  // p = min(1, 0.5 x 50% x 3 s / 200 ms) = 1: every live target every period, but the slow one
  // while its last capture runs.
  CommandResult set = cluster_.Cli({"sampling", "set", "--every", "3s", "--duration_ms", std::to_string(kDurationMs),
                                    "--max_overhead", "50%", "--json"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(Double(set.out, "max_overhead"), 0.5);
  EXPECT_EQ(Int(set.out, "every_ms"), 3000);

  std::vector<Sampled> sampled;
  ASSERT_TRUE(Eventually(90, [&] {
    sampled = SampledCaptures(cluster_);
    return std::count_if(sampled.begin(), sampled.end(), [](const Sampled& s) { return s.state == "DONE"; }) >= 8;
  })) << cluster_.Cli({"captures", "--json"}).out << cluster_.ServerLog();

  // Each capture's period, counted from when the policy was set (the first period begins then).
  httplib::Client http("http://" + cluster_.http_addr());
  const int64_t set_at_ns = Int(ExpectGet(http, "/api/v1/sampling"), "set_at_ns");
  ASSERT_GT(set_at_ns, 0);
  std::map<std::string, std::vector<int64_t>> periods_by_target;
  std::map<int64_t, int64_t> spent_by_period;
  std::map<std::string, int64_t> devices_of;
  for (const Sampled& s : sampled) {
    EXPECT_EQ(s.targets, 1) << s.capture_id;
    EXPECT_GE(s.devices, 1) << s.capture_id;
    EXPECT_DOUBLE_EQ(s.inclusion_probability, 1.0) << s.capture_id;
    EXPECT_EQ(s.weight_device_ns, s.devices * kEveryNs) << s.capture_id;  // devices x period / p
    const int64_t period = (s.created_at_ns - set_at_ns) / kEveryNs;
    periods_by_target[s.node + "/" + s.target].push_back(period);
    spent_by_period[period] += s.devices * kDurationMs * 1'000'000;
    devices_of[s.node + "/" + s.target] = s.devices;
  }
  EXPECT_EQ(periods_by_target.size(), 3u);
  for (const auto& [target, periods] : periods_by_target) {
    const bool is_slow = target.find(":" + slow) != std::string::npos;
    for (size_t i = 1; i < periods.size(); ++i) {
      // One capture per period per target; the slow one's (4 s, longer than a period) still
      // runs when the next period begins, so that period skips it.
      EXPECT_GE(periods[i] - periods[i - 1], is_slow ? 2 : 1) << target << " captured twice at once";
    }
  }
  // Each period's captured device-time fits its budget: 50% of 3 s of the three targets' devices.
  int64_t fleet_devices = 0;
  for (const auto& [t, d] : devices_of) fleet_devices += d;
  for (const auto& [period, spent] : spent_by_period) {
    EXPECT_LE(spent, fleet_devices * kEveryNs / 2) << "period " << period;
  }

  CommandResult status = cluster_.Cli({"sampling", "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("\"enabled\":true"), std::string::npos) << status.out;
  EXPECT_GE(Int(status.out, "periods"), 3) << status.out;
  EXPECT_GE(Int(status.out, "captures"), static_cast<int64_t>(sampled.size())) << status.out;
  EXPECT_GE(Int(status.out, "skipped_busy"), 1) << "the slow target was never found busy: " << status.out;
  const double overhead = Double(status.out, "overhead_last_hour");
  EXPECT_GT(overhead, 0) << status.out;
  EXPECT_LE(overhead, 0.5) << status.out;
  const std::string metrics = ExpectGet(http, "/metrics");
  EXPECT_NE(metrics.find("fleetprof_sampling_captures_total{reason=\"SAMPLED\"}"), std::string::npos);
  EXPECT_NE(metrics.find("fleetprof_sampling_overhead_ratio"), std::string::npos);

  // Off: the counters stay, and no sampled capture starts any more.
  CommandResult off = cluster_.Cli({"sampling", "off", "--json"});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_NE(off.out.find("\"enabled\":false"), std::string::npos) << off.out;
  const size_t after_off = SampledCaptures(cluster_).size();
  std::this_thread::sleep_for(std::chrono::nanoseconds(2 * kEveryNs));
  EXPECT_EQ(SampledCaptures(cluster_).size(), after_off);
  EXPECT_GE(Int(cluster_.Cli({"sampling", "--json"}).out, "captures"), static_cast<int64_t>(sampled.size()));
}

TEST_F(SamplingTest, ABadPolicyIsAClearError) {
  ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
  CommandResult r = cluster_.Cli({"sampling", "set", "--every", "5m", "--duration_ms", "1000", "--max_overhead", "two"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--max_overhead wants a percentage"), std::string::npos) << r.err;
  r = cluster_.Cli({"sampling", "set", "--every", "1s", "--duration_ms", "2000", "--max_overhead", "1%"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("too short"), std::string::npos) << r.err;
  r = cluster_.Cli({"sampling", "set", "--every", "7d", "--duration_ms", "1000", "--max_overhead", "60%"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("max_overhead must lie in (0, 0.5]"), std::string::npos) << r.err;
  r = cluster_.Cli({"sampling", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"enabled\":false"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fleetprof::testing
