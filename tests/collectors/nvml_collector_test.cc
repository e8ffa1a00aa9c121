// NVML collector + exporter against the scripted fake library (fake_nvml.c documents the
// script). Each test loads the fake by path, samples, exports to a registry and reads the
// text exposition back, as Prometheus would.
#include "collectors/nvml_collector.h"

#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "collectors/device_metrics_exporter.h"
#include "gtest/gtest.h"
#include "tests/collectors/metrics_test_support.h"

namespace fleetprof {
namespace {

using ::fleetprof::testing::CapturedLog;
using ::fleetprof::testing::FakeProcTree;
using ::fleetprof::testing::FindSeries;
using ::fleetprof::testing::ParseExposition;
using ::fleetprof::testing::SerializeRegistry;
using ::fleetprof::testing::ValueOf;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr char kUuid0[] = "GPU-00000000-fake-4000-8000-000000000000";
constexpr char kUuid1[] = "GPU-11111111-fake-4000-8000-000000000001";
constexpr char kModel0[] = "Fake H100 80GB HBM3";
constexpr char kModel1[] = "Fake A100-SXM4-40GB";

class NvmlCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"FAKE_NVML_INIT_RESULT", "FAKE_NVML_LOSE_DEVICE1_AFTER",
                             "FAKE_NVML_EXTRA_PROCESSES", "FAKE_NVML_DRIVER_GONE_AFTER"}) {
      ::unsetenv(name);
    }
    // Our own handle keeps the fake loaded after a collector unloads it, so its test hooks
    // can still be asked how the collector behaved.
    fake_ = ::dlopen(FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(fake_, nullptr) << ::dlerror();
    // pids 4242 and 4343 belong to job "train"; 5555 has no job; 6666 is "serve" but NVML
    // cannot attribute its memory.
    proc_.Write("4242/environ", std::string("PATH=/bin\0FLEETPROF_JOB=train\0HOME=/root\0", 41));
    proc_.Write("4343/environ", std::string("FLEETPROF_JOB=train", 19));
    proc_.Write("5555/environ", std::string("PATH=/bin\0", 10));
    proc_.Write("6666/environ", std::string("FLEETPROF_JOB=serve\0", 20));
  }
  void TearDown() override {
    if (fake_ != nullptr) ::dlclose(fake_);
  }

  std::unique_ptr<NvmlCollector> MakeCollector(std::string library = FAKE_NVML_PATH) {
    return std::make_unique<NvmlCollector>(NvmlCollector::Options{library, proc_.root()});
  }
  // One sample exported, then the exposition parsed.
  std::vector<testing::ExposedSeries> SampleAndScrape(NvmlCollector& collector) {
    exporter_.ExportDevices(collector.Sample());
    return ParseExposition(SerializeRegistry(*registry_));
  }
  int FakeHook(const char* name) {
    auto hook = reinterpret_cast<int (*)()>(::dlsym(fake_, name));
    EXPECT_NE(hook, nullptr) << name;
    return hook != nullptr ? hook() : -1;
  }

  FakeProcTree proc_;
  void* fake_ = nullptr;
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  DeviceMetricsExporter exporter_{registry_, "node-a"};
};

TEST_F(NvmlCollectorTest, ExportsEveryDeviceFieldInBaseUnits) {
  auto collector = MakeCollector();
  ASSERT_TRUE(collector->Start().ok());
  auto all = SampleAndScrape(*collector);

  const std::map<std::string, std::string> d0 = {
      {"node", "node-a"}, {"device", "0"}, {"uuid", kUuid0}, {"model", kModel0}};
  EXPECT_EQ(ValueOf(all, "fleetprof_collector_up", {{"collector", "nvml"}}), 1);
  EXPECT_EQ(ValueOf(all, "fleetprof_device_info", d0), 1);
  EXPECT_EQ(ValueOf(all, "fleetprof_device_lost", d0), 0);
  EXPECT_EQ(ValueOf(all, "fleetprof_device_memory_total_bytes", d0), 81559 * kMiB);
  EXPECT_EQ(ValueOf(all, "fleetprof_device_memory_used_bytes", d0), 10240 * kMiB);
  EXPECT_EQ(ValueOf(all, "fleetprof_device_memory_free_bytes", d0), (81559 - 10240) * kMiB);
  EXPECT_DOUBLE_EQ(*ValueOf(all, "fleetprof_device_utilization_ratio", d0), 0.87);
  EXPECT_DOUBLE_EQ(*ValueOf(all, "fleetprof_device_memory_utilization_ratio", d0), 0.42);
  EXPECT_DOUBLE_EQ(*ValueOf(all, "fleetprof_device_power_watts", d0), 312.5);
  EXPECT_EQ(ValueOf(all, "fleetprof_device_temperature_celsius", d0), 64);
  auto sm = d0, memory = d0;
  sm["clock"] = "sm";
  memory["clock"] = "memory";
  EXPECT_EQ(ValueOf(all, "fleetprof_device_clock_hertz", sm), 1980e6);
  EXPECT_EQ(ValueOf(all, "fleetprof_device_clock_hertz", memory), 2619e6);
  EXPECT_EQ(ValueOf(all, "fleetprof_device_energy_joules_total", d0), 0);

  const std::map<std::string, std::string> d1 = {
      {"node", "node-a"}, {"device", "1"}, {"uuid", kUuid1}, {"model", kModel1}};
  EXPECT_EQ(ValueOf(all, "fleetprof_device_info", d1), 1);
  EXPECT_EQ(ValueOf(all, "fleetprof_device_memory_total_bytes", d1), 40960 * kMiB);
  EXPECT_EQ(ValueOf(all, "fleetprof_device_memory_used_bytes", d1), 2048 * kMiB);
  EXPECT_EQ(ValueOf(all, "fleetprof_device_memory_free_bytes", d1), (40960 - 2048) * kMiB);
  EXPECT_DOUBLE_EQ(*ValueOf(all, "fleetprof_device_utilization_ratio", d1), 0.05);
  EXPECT_DOUBLE_EQ(*ValueOf(all, "fleetprof_device_memory_utilization_ratio", d1), 0.01);
  EXPECT_EQ(ValueOf(all, "fleetprof_device_temperature_celsius", d1), 41);
  sm = d1;
  memory = d1;
  sm["clock"] = "sm";
  memory["clock"] = "memory";
  EXPECT_EQ(ValueOf(all, "fleetprof_device_clock_hertz", sm), 1410e6);
  EXPECT_EQ(ValueOf(all, "fleetprof_device_clock_hertz", memory), 1215e6);
  EXPECT_EQ(FindSeries(all, "fleetprof_device_info").size(), 2u);
}

TEST_F(NvmlCollectorTest, LeavesOutUnsupportedPowerInsteadOfExportingZero) {
  auto collector = MakeCollector();
  ASSERT_TRUE(collector->Start().ok());
  auto all = SampleAndScrape(*collector);
  EXPECT_TRUE(FindSeries(all, "fleetprof_device_power_watts", {{"device", "1"}}).empty());
  EXPECT_EQ(FindSeries(all, "fleetprof_device_power_watts").size(), 1u);
}

TEST_F(NvmlCollectorTest, EnergyCounterGrowsByNvmlIncrease) {
  auto collector = MakeCollector();
  ASSERT_TRUE(collector->Start().ok());
  SampleAndScrape(*collector);
  auto second = SampleAndScrape(*collector);
  // The fake adds 125000 mJ (device 0) and 50000 mJ (device 1) per reading.
  EXPECT_DOUBLE_EQ(*ValueOf(second, "fleetprof_device_energy_joules_total", {{"device", "0"}}),
                   125.0);
  EXPECT_DOUBLE_EQ(*ValueOf(second, "fleetprof_device_energy_joules_total", {{"device", "1"}}),
                   50.0);
  auto third = SampleAndScrape(*collector);
  EXPECT_DOUBLE_EQ(*ValueOf(third, "fleetprof_device_energy_joules_total", {{"device", "0"}}),
                   250.0);
}

TEST_F(NvmlCollectorTest, SumsDeviceMemoryPerJobFromProcEnviron) {
  auto collector = MakeCollector();
  ASSERT_TRUE(collector->Start().ok());
  auto all = SampleAndScrape(*collector);
  EXPECT_EQ(ValueOf(all, "fleetprof_job_device_memory_used_bytes",
                    {{"job", "train"}, {"node", "node-a"}, {"device", "0"}}),
            (6144 + 3072) * kMiB);
  EXPECT_EQ(ValueOf(all, "fleetprof_job_device_memory_used_bytes",
                    {{"job", "train"}, {"device", "1"}}),
            1024 * kMiB);
  EXPECT_EQ(ValueOf(all, "fleetprof_job_device_memory_used_bytes",
                    {{"job", "unassigned"}, {"device", "0"}}),
            512 * kMiB);
  // NVML could not attribute serve's memory: unknown is not zero.
  EXPECT_TRUE(FindSeries(all, "fleetprof_job_device_memory_used_bytes", {{"job", "serve"}})
                  .empty());
  for (const auto& series : all) {
    EXPECT_FALSE(series.labels.contains("pid")) << series.name;
    for (const auto& [key, value] : series.labels) EXPECT_NE(value, "4242") << series.name;
  }
}

// Issue 21: with the node's job owners, the device memory of a process of another uid naming a
// held job is not that job's: it counts as unassigned, and the total stays whole.
TEST_F(NvmlCollectorTest, AnotherUidNamingAHeldJobAddsNoDeviceMemoryToIt) {
  proc_.Write("4242/status", "Uid:\t1000\t1000\t1000\t1000\n");
  proc_.Write("4343/status", "Uid:\t1001\t1001\t1001\t1001\n");
  auto owners = std::make_shared<JobOwners>();
  ASSERT_TRUE(owners->Claim("train", 1000, 4242));
  NvmlCollector collector(NvmlCollector::Options{FAKE_NVML_PATH, proc_.root(), owners});
  ASSERT_TRUE(collector.Start().ok());
  auto all = SampleAndScrape(collector);
  const double train = ValueOf(all, "fleetprof_job_device_memory_used_bytes", {{"job", "train"}, {"device", "0"}}).value_or(0);
  const double unassigned =
      ValueOf(all, "fleetprof_job_device_memory_used_bytes", {{"job", "unassigned"}, {"device", "0"}}).value_or(0);
  EXPECT_TRUE(train == 6144 * kMiB || train == 3072 * kMiB) << "only pid 4242's memory: " << train / kMiB;
  EXPECT_EQ(train + unassigned, (6144 + 3072 + 512) * kMiB);
  EXPECT_EQ(owners->conflicts(), 1);
}

TEST_F(NvmlCollectorTest, GrowsProcessBufferWhenNvmlAsksForMore) {
  ::setenv("FAKE_NVML_EXTRA_PROCESSES", "40", 1);
  auto collector = MakeCollector();
  ASSERT_TRUE(collector->Start().ok());
  auto all = SampleAndScrape(*collector);
  EXPECT_GE(FakeHook("fake_nvml_insufficient_size_answers"), 1);
  EXPECT_EQ(ValueOf(all, "fleetprof_job_device_memory_used_bytes",
                    {{"job", "unassigned"}, {"device", "0"}}),
            (512 + 40) * kMiB);
  EXPECT_EQ(ValueOf(all, "fleetprof_job_device_memory_used_bytes",
                    {{"job", "train"}, {"device", "0"}}),
            (6144 + 3072) * kMiB);
  // The grown buffer is kept, so the next round needs no retry.
  int answers = FakeHook("fake_nvml_insufficient_size_answers");
  SampleAndScrape(*collector);
  EXPECT_EQ(FakeHook("fake_nvml_insufficient_size_answers"), answers);
}

TEST_F(NvmlCollectorTest, ReportsLostDeviceAndKeepsSamplingTheOther) {
  ::setenv("FAKE_NVML_LOSE_DEVICE1_AFTER", "1", 1);
  CapturedLog log;
  auto collector = MakeCollector();
  ASSERT_TRUE(collector->Start().ok());
  auto before = SampleAndScrape(*collector);
  EXPECT_EQ(ValueOf(before, "fleetprof_device_memory_used_bytes", {{"device", "1"}}), 2048 * kMiB);

  SampleAndScrape(*collector);
  auto after = SampleAndScrape(*collector);
  EXPECT_TRUE(collector->up());
  EXPECT_EQ(ValueOf(after, "fleetprof_collector_up", {{"collector", "nvml"}}), 1);
  // The lost device keeps its name and a lost marker; its readings are gone, not frozen.
  EXPECT_EQ(ValueOf(after, "fleetprof_device_lost",
                    {{"device", "1"}, {"uuid", kUuid1}, {"model", kModel1}}),
            1);
  EXPECT_EQ(ValueOf(after, "fleetprof_device_lost", {{"device", "0"}}), 0);
  for (const char* name :
       {"fleetprof_device_info", "fleetprof_device_memory_used_bytes",
        "fleetprof_device_memory_total_bytes", "fleetprof_device_utilization_ratio",
        "fleetprof_device_temperature_celsius", "fleetprof_device_clock_hertz",
        "fleetprof_device_energy_joules_total", "fleetprof_job_device_memory_used_bytes"}) {
    EXPECT_TRUE(FindSeries(after, name, {{"device", "1"}}).empty()) << name;
    EXPECT_FALSE(FindSeries(after, name, {{"device", "0"}}).empty()) << name;
  }
  EXPECT_DOUBLE_EQ(*ValueOf(after, "fleetprof_device_energy_joules_total", {{"device", "0"}}),
                   250.0);
  EXPECT_EQ(log.Count("is lost"), 1) << "the loss is logged once, not every round";
}

TEST_F(NvmlCollectorTest, MissingLibraryTurnsCollectorOffWithOneLogLine) {
  CapturedLog log;
  auto collector = MakeCollector(proc_.root() + "/no-such-dir/libnvidia-ml.so.1");
  absl::Status status = collector->Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  std::vector<testing::ExposedSeries> all;
  for (int round = 0; round < 3; ++round) all = SampleAndScrape(*collector);
  EXPECT_FALSE(collector->up());
  EXPECT_EQ(ValueOf(all, "fleetprof_collector_up", {{"collector", "nvml"}}), 0);
  EXPECT_TRUE(FindSeries(all, "fleetprof_device_info").empty());
  ASSERT_EQ(log.Lines().size(), 1u);
  EXPECT_NE(log.Lines()[0].find("device metrics are off"), std::string::npos) << log.Lines()[0];
}

TEST_F(NvmlCollectorTest, DriverNotLoadedTurnsCollectorOffWithOneLogLine) {
  ::setenv("FAKE_NVML_INIT_RESULT", "9", 1);
  CapturedLog log;
  auto collector = MakeCollector();
  EXPECT_FALSE(collector->Start().ok());
  auto all = SampleAndScrape(*collector);
  SampleAndScrape(*collector);
  EXPECT_EQ(ValueOf(all, "fleetprof_collector_up", {{"collector", "nvml"}}), 0);
  EXPECT_EQ(log.Count("device metrics are off"), 1);
  EXPECT_EQ(log.Lines().size(), 1u);
  EXPECT_NE(log.Lines()[0].find("Driver Not Loaded"), std::string::npos) << log.Lines()[0];
}

TEST_F(NvmlCollectorTest, DriverGoingAwayTurnsCollectorOffAndDropsDeviceSeries) {
  ::setenv("FAKE_NVML_DRIVER_GONE_AFTER", "1", 1);
  CapturedLog log;
  auto collector = MakeCollector();
  ASSERT_TRUE(collector->Start().ok());
  auto before = SampleAndScrape(*collector);
  EXPECT_EQ(FindSeries(before, "fleetprof_device_info").size(), 2u);
  SampleAndScrape(*collector);
  auto after = SampleAndScrape(*collector);
  EXPECT_FALSE(collector->up());
  EXPECT_EQ(ValueOf(after, "fleetprof_collector_up", {{"collector", "nvml"}}), 0);
  for (const auto& series : after) EXPECT_EQ(series.name, "fleetprof_collector_up");
  EXPECT_EQ(log.Count("device metrics are off"), 1);
}

TEST_F(NvmlCollectorTest, ShutsNvmlDownWhenDestroyed) {
  auto collector = MakeCollector();
  ASSERT_TRUE(collector->Start().ok());
  collector->Sample();
  collector.reset();
  EXPECT_EQ(FakeHook("fake_nvml_shutdown_calls"), 1);
}

}  // namespace
}  // namespace fleetprof
