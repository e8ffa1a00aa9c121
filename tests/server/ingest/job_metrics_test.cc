// The per-job gauges on a simulated clock: a job drops out once it has had no new profile for
// its idle time, measured on the clock the server gives it.

#include <chrono>
#include <string>
#include <vector>

#include "common/clock.h"
#include "gtest/gtest.h"
#include "server/ingest/job_metrics.h"

namespace fleetprof {
namespace {

constexpr int64_t kMinute = int64_t{60} * 1'000'000'000;

// The jobs with a busy-ratio series, in label order.
std::vector<std::string> JobsWithSeries(const JobMetrics& metrics) {
  std::vector<std::string> jobs;
  for (const auto& family : metrics.Collect()) {
    if (family.name != "fleetprof_job_profile_device_busy_ratio") continue;
    for (const auto& metric : family.metric) {
      for (const auto& label : metric.label) {
        if (label.name == "job") jobs.push_back(label.value);
      }
    }
  }
  return jobs;
}

TEST(JobMetrics, AJobDropsOutAfterItsIdleTimeOnTheGivenClock) {
  SimulatedClock clock;
  JobMetrics metrics(&clock, std::chrono::minutes(10));
  v1::ProfileSummary summary;
  v1::DeviceBreakdown* device = summary.add_devices();
  device->set_busy_ns(1);
  device->set_span_ns(4);
  metrics.Observe("train", summary);
  clock.Advance(9 * kMinute);
  metrics.Observe("eval", summary);
  EXPECT_EQ(JobsWithSeries(metrics), (std::vector<std::string>{"eval", "train"})) << "train: 9 of its 10 minutes";
  clock.Advance(2 * kMinute);
  EXPECT_EQ(JobsWithSeries(metrics), (std::vector<std::string>{"eval"})) << "train: 11 minutes without a profile";
  metrics.Observe("train", summary);
  EXPECT_EQ(JobsWithSeries(metrics), (std::vector<std::string>{"eval", "train"})) << "a new profile brings it back";
}

}  // namespace
}  // namespace fleetprof
