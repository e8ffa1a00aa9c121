// The sampler's thread: it publishes without being asked and stops promptly.
#include "collectors/metrics_sampler.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include "gtest/gtest.h"
#include "tests/collectors/metrics_test_support.h"

namespace fleetprof {
namespace {

using ::fleetprof::testing::FakeProcTree;
using ::fleetprof::testing::ParseExposition;
using ::fleetprof::testing::SerializeRegistry;
using ::fleetprof::testing::ValueOf;
using namespace std::chrono_literals;

class MetricsSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"FAKE_NVML_INIT_RESULT", "FAKE_NVML_LOSE_DEVICE1_AFTER",
                             "FAKE_NVML_EXTRA_PROCESSES", "FAKE_NVML_DRIVER_GONE_AFTER"}) {
      ::unsetenv(name);
    }
    proc_.Write("stat", "cpu  1 0 1 10 0 0 0 0 0 0\n");
    proc_.Write("meminfo", "MemTotal: 1000 kB\nMemAvailable: 400 kB\n");
  }

  // Waits (bounded) until the sampler has published `rounds` rounds.
  static bool WaitForRounds(const MetricsSampler& sampler, uint64_t rounds) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (sampler.rounds() < rounds) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }

  FakeProcTree proc_;
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
};

TEST_F(MetricsSamplerTest, PublishesDeviceAndHostMetricsEveryInterval) {
  MetricsSampler sampler({.node = "node-a", .nvml_library = FAKE_NVML_PATH,
                          .proc_root = proc_.root(), .interval = 20ms},
                         registry_);
  ASSERT_TRUE(sampler.Start().ok());
  ASSERT_TRUE(WaitForRounds(sampler, 3));
  auto all = ParseExposition(SerializeRegistry(*registry_));
  EXPECT_EQ(ValueOf(all, "fleetprof_collector_up", {{"collector", "nvml"}}), 1);
  EXPECT_EQ(ValueOf(all, "fleetprof_collector_up", {{"collector", "host"}}), 1);
  EXPECT_EQ(ValueOf(all, "fleetprof_host_memory_used_bytes", {{"node", "node-a"}}), 600 * 1024);
  EXPECT_TRUE(ValueOf(all, "fleetprof_device_memory_used_bytes", {{"device", "0"}}).has_value());
  EXPECT_GT(*ValueOf(all, "fleetprof_device_energy_joules_total", {{"device", "0"}}), 0);
  sampler.Stop();
  uint64_t stopped_at = sampler.rounds();
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(sampler.rounds(), stopped_at) << "no sampling after Stop()";
}

TEST_F(MetricsSamplerTest, StopDoesNotWaitForTheInterval) {
  MetricsSampler sampler({.node = "node-a", .nvml_library = "", .proc_root = proc_.root(),
                          .interval = std::chrono::hours(1)},
                         registry_);
  ASSERT_TRUE(sampler.Start().ok());
  ASSERT_TRUE(WaitForRounds(sampler, 1));
  auto begin = std::chrono::steady_clock::now();
  sampler.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 2s);
  auto all = ParseExposition(SerializeRegistry(*registry_));
  EXPECT_EQ(ValueOf(all, "fleetprof_collector_up", {{"collector", "nvml"}}), 0)
      << "an empty --nvml_library turns device metrics off";
}

TEST_F(MetricsSamplerTest, RefusesSecondStart) {
  MetricsSampler sampler({.node = "n", .nvml_library = "", .proc_root = proc_.root()}, registry_);
  ASSERT_TRUE(sampler.Start().ok());
  EXPECT_EQ(sampler.Start().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace fleetprof
