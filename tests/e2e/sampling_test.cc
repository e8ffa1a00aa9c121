// Always-on sampling end to end (issue 42, item 1): the real server, two agents on two nodes and
// three XLA profiler stand-ins (one holds its capture until the test releases it). `fleetprof
// sampling set` makes SAMPLED captures of one target each, with the weight each profile stands
// for, within the budget; a target whose last capture still runs is skipped and counted, never
// captured twice at once; `fleetprof sampling --json` shows the counters and `sampling off`
// stops it.

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
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

// A counter of a stand-in's record; -1 when it has none.
int64_t RecordedCount(const ProfilerStandIn& standin, const std::string& key) {
  const std::optional<std::string> value = standin.Recorded(key);
  return value.has_value() ? std::stoll(*value) : -1;
}

class SamplingTest : public ::testing::Test {
 protected:
  // An XLA profiler stand-in whose captures take `sleep_ms` and, with `release_file`, last until
  // that file exists; its address, "" when it did not start.
  std::string StartStandIn(const std::string& name, int sleep_ms, const std::string& release_file = "") {
    StandInOptions options;
    options.xspace_path = CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb");
    options.sleep_ms = sleep_ms;
    options.release_file = release_file;
    standins_[name] = std::make_unique<ProfilerStandIn>();
    const absl::Status started = standins_[name]->Start(options, cluster_.root() + "/" + name);
    if (!started.ok()) {
      ADD_FAILURE() << started;
      return "";
    }
    return standins_[name]->address();
  }

  TestCluster cluster_;
  std::map<std::string, std::unique_ptr<ProfilerStandIn>> standins_;
};

TEST_F(SamplingTest, SampledCapturesStayInBudgetNeverOverlapOnATargetAndAreCounted) {
  FLEETPROF_REQUIRE_PATH(XPROF_PYTHON);
  FLEETPROF_REQUIRE(PythonHasGrpc(), XPROF_PYTHON << " able to import grpc and google.protobuf (Debian python3-grpcio)");
  FLEETPROF_REQUIRE_PATH(CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb"));
  ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
  // The slow target's captures last until the test releases them: it is busy for as long as the
  // test needs, whatever the machine's load.
  const std::string release = cluster_.root() + "/slow.release";
  const std::string a = StartStandIn("a", 100), b = StartStandIn("b", 100);
  const std::string slow = StartStandIn("slow", 100, release);
  ASSERT_FALSE(a.empty() || b.empty() || slow.empty()) << "profiler stand-ins did not start";
  ASSERT_GE(cluster_.StartAgent({"--node=node-1", "--target=job=train,xprof=" + a, "--target=job=serve,xprof=" + b}), 0);
  ASSERT_GE(cluster_.StartAgent({"--node=node-2", "--target=job=train,xprof=" + slow}), 0);
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
  httplib::Client http("http://" + cluster_.http_addr());
  auto sampling = [&] { return ExpectGet(http, "/api/v1/sampling"); };
  auto of_slow = [](const std::vector<Sampled>& all) {
    std::vector<Sampled> out;
    for (const Sampled& s : all) {
      if (s.node == "node-2") out.push_back(s);  // the slow stand-in is node-2's only target
    }
    return out;
  };

  // The slow target's first capture has reached its stand-in, which holds it: from here on the
  // capture runs until the release file exists.
  ASSERT_TRUE(Eventually(60, [&] { return RecordedCount(*standins_["slow"], "profile_calls") >= 1; }))
      << cluster_.Cli({"captures", "--json"}).out << cluster_.ServerLog();
  // Race-free, ordered by the server's own counter rather than by a clock: the tick that started
  // this capture had stored its period (<= held_at) first, and the sampler's ticks run one at a
  // time, so the tick that counts period held_at + 1 lists the targets after that start, while
  // the stand-in still holds the capture. It finds the slow target busy, draws it (p = 1) and
  // must skip it, and stores the skip with the period's count.
  const int64_t held_at = Int(sampling(), "periods");
  ASSERT_TRUE(Eventually(30, [&] { return Int(sampling(), "periods") >= held_at + 1; })) << sampling();
  const std::string while_held = sampling();
  EXPECT_GE(Int(while_held, "skipped_busy"), 1) << "the slow target was never found busy: " << while_held;
  std::vector<Sampled> held = of_slow(SampledCaptures(cluster_));
  ASSERT_EQ(held.size(), 1u) << "a busy target was captured again";
  EXPECT_EQ(held[0].state, "RUNNING");

  // Released, its capture ends, and a later period captures it again.
  std::ofstream(release).put('\n');
  std::vector<Sampled> sampled;
  ASSERT_TRUE(Eventually(90, [&] {
    sampled = SampledCaptures(cluster_);
    const std::vector<Sampled> slow_ones = of_slow(sampled);
    return std::count_if(sampled.begin(), sampled.end(), [](const Sampled& s) { return s.state == "DONE"; }) >= 8 &&
           std::count_if(slow_ones.begin(), slow_ones.end(), [](const Sampled& s) { return s.state == "DONE"; }) >= 2;
  })) << cluster_.Cli({"captures", "--json"}).out << cluster_.ServerLog();
  const std::string status_json = sampling();  // read after the list: its counters cover it

  // Each capture's period, counted from when the policy was set (the first period begins then).
  const int64_t set_at_ns = Int(status_json, "set_at_ns");
  ASSERT_GT(set_at_ns, 0);
  std::map<std::string, int64_t> captures_of, devices_of;
  std::map<int64_t, int64_t> spent_by_period;
  for (const Sampled& s : sampled) {
    EXPECT_EQ(s.targets, 1) << s.capture_id;
    EXPECT_GE(s.devices, 1) << s.capture_id;
    EXPECT_DOUBLE_EQ(s.inclusion_probability, 1.0) << s.capture_id;
    EXPECT_EQ(s.weight_device_ns, s.devices * kEveryNs) << s.capture_id;  // devices x period / p
    ++captures_of[s.node + "/" + s.target];
    devices_of[s.node + "/" + s.target] = s.devices;
    spent_by_period[(s.created_at_ns - set_at_ns) / kEveryNs] += s.devices * kDurationMs * 1'000'000;
  }
  EXPECT_EQ(captures_of.size(), 3u);
  // One draw per target per period: no target has more captures than the server has run periods.
  const int64_t periods = Int(status_json, "periods");
  for (const auto& [target, n] : captures_of) EXPECT_LE(n, periods) << target;
  // Never two at once on a target: each stand-in refuses (and counts) a Profile that arrives
  // while it is capturing, as a real profiler server does.
  for (const auto& [name, standin] : standins_) {
    EXPECT_EQ(RecordedCount(*standin, "refused_busy"), 0) << name << " was asked for two captures at once";
  }
  // Each period's captured device-time fits its budget: 50% of 3 s of the three targets'
  // devices. (A capture counts in the period its creation time falls in: one created late, in
  // the next period, leaves that period at most two captures of a target, 0.4 s of its devices.)
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
  EXPECT_GE(Int(status.out, "skipped_busy"), 1) << status.out;
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
