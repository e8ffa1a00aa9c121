// Host collector + exporter against a fake proc root. Ticks are pinned at 100/s and pages at
// 4096 bytes so the fake files mean the same on every machine.
#include "collectors/host_collector.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
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

constexpr double kPage = 4096;

// A /proc/<pid>/stat line; the command name has a space and parentheses on purpose.
std::string StatLine(int pid, uint64_t utime, uint64_t stime, uint64_t start, uint64_t rss) {
  return absl::StrCat(pid, " (py thon) (x) S 1 1 1 0 -1 4194304 100 0 0 0 ", utime, " ", stime,
                      " 0 0 20 0 4 0 ", start, " 123456789 ", rss,
                      " 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n");
}

class HostCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    proc_.Write("stat", "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 100 0 50 800 50 0 0 0 0 0\n");
    proc_.Write("meminfo",
                "MemTotal:       16000000 kB\nMemFree:         2000000 kB\n"
                "MemAvailable:   12000000 kB\nBuffers:          100000 kB\n");
    AddProcess(100, "FLEETPROF_JOB=train", StatLine(100, 300, 100, 5000, 1000));
    AddProcess(200, "FLEETPROF_JOB=train", StatLine(200, 50, 50, 6000, 500));
    AddProcess(300, "PATH=/bin", StatLine(300, 9000, 9000, 100, 99999));
    AddProcess(400, "FLEETPROF_JOB=serve", StatLine(400, 20, 10, 7000, 256));
    // Kernel threads have an empty environ.
    AddProcess(2, "", "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0 "
                      "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 0 0 0 0 0 0\n");
    proc_.Write("self/stat", "not a pid folder");
  }

  void AddProcess(int pid, const std::string& environ, const std::string& stat) {
    proc_.Write(absl::StrCat(pid, "/environ"), environ + std::string(1, '\0'));
    proc_.Write(absl::StrCat(pid, "/stat"), stat);
  }

  std::vector<testing::ExposedSeries> SampleAndScrape() {
    exporter_.ExportHost(collector_.Sample());
    return ParseExposition(SerializeRegistry(*registry_));
  }

  FakeProcTree proc_;
  HostCollector collector_{{.proc_root = proc_.root(), .ticks_per_second = 100,
                            .page_size_bytes = 4096}};
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  DeviceMetricsExporter exporter_{registry_, "node-a"};
};

TEST_F(HostCollectorTest, ReadsMemoryFromMeminfo) {
  auto all = SampleAndScrape();
  EXPECT_EQ(ValueOf(all, "fleetprof_collector_up", {{"collector", "host"}}), 1);
  EXPECT_EQ(ValueOf(all, "fleetprof_host_memory_total_bytes", {{"node", "node-a"}}),
            16000000.0 * 1024);
  EXPECT_EQ(ValueOf(all, "fleetprof_host_memory_used_bytes", {{"node", "node-a"}}),
            (16000000.0 - 12000000.0) * 1024);
}

TEST_F(HostCollectorTest, CpuUtilizationComesFromProcStatDeltas) {
  auto first = SampleAndScrape();
  // One reading is no rate: the series waits for the second.
  EXPECT_TRUE(FindSeries(first, "fleetprof_host_cpu_utilization_ratio").empty());
  // +60 user +20 system +100 idle +20 iowait: 80 busy ticks of 200.
  proc_.Write("stat", "cpu  160 0 70 900 70 0 0 0 0 0\n");
  auto second = SampleAndScrape();
  EXPECT_DOUBLE_EQ(*ValueOf(second, "fleetprof_host_cpu_utilization_ratio", {{"node", "node-a"}}),
                   0.4);
}

TEST_F(HostCollectorTest, SumsCpuSecondsAndResidentBytesPerJob) {
  auto all = SampleAndScrape();
  EXPECT_DOUBLE_EQ(*ValueOf(all, "fleetprof_job_cpu_seconds_total",
                            {{"job", "train"}, {"node", "node-a"}}),
                   (300 + 100 + 50 + 50) / 100.0);
  EXPECT_EQ(ValueOf(all, "fleetprof_job_resident_memory_bytes",
                    {{"job", "train"}, {"node", "node-a"}}),
            (1000 + 500) * kPage);
  EXPECT_DOUBLE_EQ(*ValueOf(all, "fleetprof_job_cpu_seconds_total", {{"job", "serve"}}), 0.3);
  EXPECT_EQ(ValueOf(all, "fleetprof_job_resident_memory_bytes", {{"job", "serve"}}), 256 * kPage);
  // Processes without FLEETPROF_JOB are host load, not a job.
  EXPECT_EQ(FindSeries(all, "fleetprof_job_cpu_seconds_total").size(), 2u);
  EXPECT_EQ(FindSeries(all, "fleetprof_job_resident_memory_bytes").size(), 2u);
}

// Issue 21: a job names itself, so with the node's job owners a process of another uid that
// names a job already held adds nothing to that job's CPU and memory (before, any local user
// could inflate or hide another user's job numbers).
TEST_F(HostCollectorTest, AnotherUidNamingAHeldJobAddsNothingToIt) {
  auto owners = std::make_shared<JobOwners>();
  for (int pid : {100, 200, 400}) proc_.Write(absl::StrCat(pid, "/status"), "Name:\tpy\nUid:\t1000\t1000\t1000\t1000\n");
  AddProcess(500, "FLEETPROF_JOB=train", StatLine(500, 7000, 7000, 8000, 77777));
  proc_.Write("500/status", "Name:\tpy\nUid:\t1001\t1001\t1001\t1001\n");
  ASSERT_TRUE(owners->Claim("train", 1000, 100));  // the job's own processes were there first
  HostCollector owned({.proc_root = proc_.root(), .ticks_per_second = 100, .page_size_bytes = 4096,
                       .job_owners = owners});
  exporter_.ExportHost(owned.Sample());
  auto all = ParseExposition(SerializeRegistry(*registry_));
  EXPECT_DOUBLE_EQ(*ValueOf(all, "fleetprof_job_cpu_seconds_total", {{"job", "train"}}), 5.0);
  EXPECT_EQ(ValueOf(all, "fleetprof_job_resident_memory_bytes", {{"job", "train"}}), 1500 * kPage);
  EXPECT_EQ(owners->conflicts(), 1);
  // Without owners (the collector alone), the name is taken as it says: pid 500 counts.
  auto unchecked = SampleAndScrape();
  EXPECT_DOUBLE_EQ(*ValueOf(unchecked, "fleetprof_job_cpu_seconds_total", {{"job", "train"}}), 145.0);
}

// Issue 21: a process of uid 1001 that named root's job before root's job ran held the name,
// and root's job then showed the squatter's CPU and memory instead of its own. Root's
// processes take the name over: the job's numbers are root's, the squatter adds nothing.
TEST_F(HostCollectorTest, ASquatterWhoNamedRootsJobFirstDoesNotReplaceItsNumbers) {
  auto owners = std::make_shared<JobOwners>();
  for (int pid : {100, 200, 400}) proc_.Write(absl::StrCat(pid, "/status"), "Name:\tpy\nUid:\t0\t0\t0\t0\n");
  AddProcess(500, "FLEETPROF_JOB=train", StatLine(500, 7000, 7000, 8000, 77777));
  proc_.Write("500/status", "Name:\tpy\nUid:\t1001\t1001\t1001\t1001\n");
  ASSERT_TRUE(owners->Claim("train", 1001, 500));  // the squatter was there first
  HostCollector owned({.proc_root = proc_.root(), .ticks_per_second = 100, .page_size_bytes = 4096,
                       .job_owners = owners});
  exporter_.ExportHost(owned.Sample());
  exporter_.ExportHost(owned.Sample());  // the squatter's process is flagged from the second scan on
  auto all = ParseExposition(SerializeRegistry(*registry_));
  EXPECT_EQ(ValueOf(all, "fleetprof_job_resident_memory_bytes", {{"job", "train"}}), 1500 * kPage);
  EXPECT_EQ(owners->OwnerOf("train"), 0);
  EXPECT_EQ(owners->conflicts(), 1);
}

TEST_F(HostCollectorTest, JobCpuCounterKeepsTimeOfExitedProcess) {
  SampleAndScrape();
  proc_.Write("100/stat", StatLine(100, 400, 100, 5000, 1000));  // +1 s
  proc_.Remove("200");                                            // its 1 s stays counted
  auto all = SampleAndScrape();
  EXPECT_DOUBLE_EQ(*ValueOf(all, "fleetprof_job_cpu_seconds_total", {{"job", "train"}}), 6.0);
  EXPECT_EQ(ValueOf(all, "fleetprof_job_resident_memory_bytes", {{"job", "train"}}), 1000 * kPage);
}

TEST_F(HostCollectorTest, CountsRecycledPidAsNewProcess) {
  SampleAndScrape();
  // pid 200 exited and was reused by a new train process (new start time) with 0.1 s so far.
  proc_.Write("200/stat", StatLine(200, 5, 5, 9000, 10));
  auto all = SampleAndScrape();
  EXPECT_DOUBLE_EQ(*ValueOf(all, "fleetprof_job_cpu_seconds_total", {{"job", "train"}}), 5.1);
}

TEST_F(HostCollectorTest, RemovesSeriesOfFinishedJob) {
  SampleAndScrape();
  proc_.Remove("100");
  proc_.Remove("200");
  auto all = SampleAndScrape();
  EXPECT_TRUE(FindSeries(all, "fleetprof_job_cpu_seconds_total", {{"job", "train"}}).empty());
  EXPECT_TRUE(FindSeries(all, "fleetprof_job_resident_memory_bytes", {{"job", "train"}}).empty());
  EXPECT_EQ(FindSeries(all, "fleetprof_job_cpu_seconds_total", {{"job", "serve"}}).size(), 1u);
}

TEST_F(HostCollectorTest, RereadsJobWhenLauncherExecsTheJob) {
  // A shell that exports FLEETPROF_JOB and then exec's keeps pid and start time, but its
  // environ (and command name) change at exec.
  AddProcess(500, "PATH=/bin", "500 (sh) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 8000 1 7 "
                               "1 1 1 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n");
  auto first = SampleAndScrape();
  EXPECT_TRUE(FindSeries(first, "fleetprof_job_cpu_seconds_total", {{"job", "eval"}}).empty());
  AddProcess(500, "FLEETPROF_JOB=eval", StatLine(500, 10, 0, 8000, 7));
  auto second = SampleAndScrape();
  EXPECT_EQ(ValueOf(second, "fleetprof_job_resident_memory_bytes", {{"job", "eval"}}), 7 * kPage);
}

TEST_F(HostCollectorTest, UnreadableProcRootMarksHostDownWithOneLogLine) {
  CapturedLog log;
  HostCollector missing({.proc_root = proc_.root() + "/missing"});
  std::vector<testing::ExposedSeries> all;
  for (int round = 0; round < 3; ++round) {
    exporter_.ExportHost(missing.Sample());
    all = ParseExposition(SerializeRegistry(*registry_));
  }
  EXPECT_EQ(ValueOf(all, "fleetprof_collector_up", {{"collector", "host"}}), 0);
  EXPECT_TRUE(FindSeries(all, "fleetprof_host_memory_total_bytes").empty());
  EXPECT_EQ(log.Lines().size(), 1u);
}

}  // namespace
}  // namespace fleetprof
