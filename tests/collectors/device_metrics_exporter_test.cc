// The exporter on hand-made samples: removal of stale series, counter semantics, and an
// exposition that Prometheus' own linter accepts.
#include "collectors/device_metrics_exporter.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/collectors/metrics_test_support.h"
#include "tests/test_support.h"

namespace fleetprof {
namespace {

using ::fleetprof::testing::FindSeries;
using ::fleetprof::testing::ParseExposition;
using ::fleetprof::testing::SerializeRegistry;
using ::fleetprof::testing::ValueOf;

DeviceSample Device(unsigned int index, uint64_t energy_mj = 0) {
  DeviceSample device;
  device.index = index;
  device.uuid = "GPU-" + std::to_string(index);
  device.model = "Model";
  device.memory_used_bytes = 1 << 20;
  device.memory_free_bytes = 3 << 20;
  device.memory_total_bytes = 4 << 20;
  device.utilization_ratio = 0.5;
  device.memory_utilization_ratio = 0.25;
  device.power_watts = 100;
  device.temperature_celsius = 50;
  device.sm_clock_hertz = 1e9;
  device.memory_clock_hertz = 2e9;
  device.energy_millijoules = energy_mj;
  device.job_memory_used_bytes = {{"train", 1 << 20}};
  return device;
}

class DeviceMetricsExporterTest : public ::testing::Test {
 protected:
  std::vector<testing::ExposedSeries> Export(const NvmlSnapshot& snapshot) {
    exporter_.ExportDevices(snapshot);
    return ParseExposition(SerializeRegistry(*registry_));
  }

  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  DeviceMetricsExporter exporter_{registry_, "node-a"};
};

TEST_F(DeviceMetricsExporterTest, RemovesEverySeriesOfDeviceThatDisappeared) {
  auto before = Export({true, {Device(0), Device(1)}});
  const size_t per_device = FindSeries(before, "fleetprof_device_clock_hertz", {{"device", "1"}})
                                .size();
  EXPECT_EQ(per_device, 2u);
  auto after = Export({true, {Device(0)}});
  for (const auto& series : after) {
    auto device = series.labels.find("device");
    EXPECT_TRUE(device == series.labels.end() || device->second == "0") << series.name;
  }
  EXPECT_EQ(FindSeries(after, "fleetprof_device_info").size(), 1u);
}

// Before: every FLEETPROF_JOB value a process carried became a series, without limit. Now at
// most max_job_series job values per family: the largest keep theirs, the rest add up to
// job="other", so the total is unchanged.
TEST(DeviceMetricsExporterCap, JobsPastTheCapAddUpUnderOther) {
  auto registry = std::make_shared<prometheus::Registry>();
  DeviceMetricsExporter exporter(registry, "node-a", /*max_job_series=*/10);
  DeviceSample device = Device(0);
  device.job_memory_used_bytes.clear();
  double total = 0;
  for (int job = 0; job < 500; ++job) {
    const uint64_t bytes = (job + 1) * 1000;
    device.job_memory_used_bytes["job-" + std::to_string(job)] = bytes;
    total += static_cast<double>(bytes);
  }
  exporter.ExportDevices({true, {device}});
  const auto series = FindSeries(ParseExposition(SerializeRegistry(*registry)), "fleetprof_job_device_memory_used_bytes");
  ASSERT_EQ(series.size(), 10u);
  double sum = 0;
  bool other = false;
  for (const auto& s : series) {
    sum += s.value;
    other |= s.labels.at("job") == "other";
    if (s.labels.at("job") != "other") EXPECT_GE(s.labels.at("job"), "job-491");  // the 9 largest: job-491..job-499
  }
  EXPECT_TRUE(other);
  EXPECT_DOUBLE_EQ(sum, total);

  HostSample host;
  host.up = true;
  for (int job = 0; job < 300; ++job) host.jobs["job-" + std::to_string(job)] = JobHostSample{static_cast<double>(job), 1024};
  exporter.ExportHost(host);
  const auto exposed = ParseExposition(SerializeRegistry(*registry));
  EXPECT_EQ(FindSeries(exposed, "fleetprof_job_resident_memory_bytes").size(), 10u);
  EXPECT_EQ(FindSeries(exposed, "fleetprof_job_cpu_seconds_total").size(), 10u);
}

TEST_F(DeviceMetricsExporterTest, RemovesJobSeriesWhenJobLeavesDevice) {
  DeviceSample device = Device(0);
  device.job_memory_used_bytes = {{"train", 10}, {"eval", 20}};
  Export({true, {device}});
  device.job_memory_used_bytes = {{"eval", 30}};
  auto all = Export({true, {device}});
  EXPECT_TRUE(FindSeries(all, "fleetprof_job_device_memory_used_bytes", {{"job", "train"}})
                  .empty());
  EXPECT_EQ(ValueOf(all, "fleetprof_job_device_memory_used_bytes", {{"job", "eval"}}), 30);
}

TEST_F(DeviceMetricsExporterTest, CollectorOffRemovesAllDeviceSeries) {
  Export({true, {Device(0)}});
  auto all = Export({false, {}});
  EXPECT_EQ(ValueOf(all, "fleetprof_collector_up", {{"collector", "nvml"}}), 0);
  for (const auto& series : all) EXPECT_EQ(series.name, "fleetprof_collector_up");
}

TEST_F(DeviceMetricsExporterTest, EnergyCounterSurvivesNvmlCounterReset) {
  Export({true, {Device(0, 1000)}});
  Export({true, {Device(0, 3000)}});  // +2 J
  // The driver reloaded: NVML counts from 0 again, and the 500 mJ since then are new energy.
  auto all = Export({true, {Device(0, 500)}});
  EXPECT_DOUBLE_EQ(*ValueOf(all, "fleetprof_device_energy_joules_total", {{"device", "0"}}), 2.5);
}

TEST_F(DeviceMetricsExporterTest, CollectorUpGaugeIsSharedWithOtherComponents) {
  Export({true, {}});
  CollectorUpGauge(*registry_, "kineto").Set(0);
  std::string text = SerializeRegistry(*registry_);
  auto all = ParseExposition(text);
  EXPECT_EQ(ValueOf(all, "fleetprof_collector_up", {{"collector", "kineto"}}), 0);
  EXPECT_EQ(ValueOf(all, "fleetprof_collector_up", {{"collector", "nvml"}}), 1);
  size_t type_lines = 0;
  for (size_t at = 0; (at = text.find("# TYPE fleetprof_collector_up ", at)) != std::string::npos;
       ++at) {
    ++type_lines;
  }
  EXPECT_EQ(type_lines, 1u);
}

TEST_F(DeviceMetricsExporterTest, ExpositionPassesPromtoolLint) {
  FLEETPROF_REQUIRE(std::system("command -v promtool >/dev/null 2>&1") == 0, "promtool (Debian package prometheus)");
  Export({true, {Device(0, 1000), Device(1, 5000)}});
  HostSample host;
  host.up = true;
  host.cpu_utilization_ratio = 0.5;
  host.memory_total_bytes = 1 << 30;
  host.memory_used_bytes = 1 << 29;
  host.jobs["train"] = JobHostSample{12.5, 1 << 20};
  exporter_.ExportHost(host);
  std::string text = SerializeRegistry(*registry_);
  FILE* promtool = ::popen("promtool check metrics 2>&1", "w");
  ASSERT_NE(promtool, nullptr);
  std::fwrite(text.data(), 1, text.size(), promtool);
  int status = ::pclose(promtool);
  EXPECT_EQ(status, 0) << "promtool rejected:\n" << text;
}

}  // namespace
}  // namespace fleetprof
