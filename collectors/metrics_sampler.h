#pragma once
// Samples NVML and procfs on a background thread every `interval` and publishes the results
// into a Prometheus registry, so a scrape only serializes what is already there and never
// waits on NVML (whose calls can take tens of milliseconds, or hang on a failing GPU).
//
// Typical use in the agent:
//   auto registry = std::make_shared<prometheus::Registry>();
//   // /metrics serializes registry->Collect() (the agent's HttpServer route, agent/agent.cc)
//   MetricsSampler sampler({.node = node, .nvml_library = nvml_library}, registry);
//   sampler.Start();
//   ...
//   sampler.Stop();

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "absl/status/status.h"
#include "collectors/device_metrics_exporter.h"
#include "collectors/host_collector.h"
#include "collectors/nvml_collector.h"
#include "prometheus/registry.h"

namespace fleetprof {

class MetricsSampler {
 public:
  struct Options {
    std::string node;                                // value of every series' node label
    std::string nvml_library = "libnvidia-ml.so.1";  // empty: no device metrics
    std::string proc_root = "/proc";
    std::chrono::milliseconds interval{10000};
    const Clock* clock = RealClock();  // the rounds' schedule
    size_t max_job_series = 100;  // job label values per family; the rest: job="other"
    std::shared_ptr<JobOwners> job_owners;  // who holds each job name (HostCollector::Options)
    // Each device round as it is taken, with the clock's monotonic time of it, on the sampling
    // thread (the agent's device triggers judge it): must return quickly.
    std::function<void(const NvmlSnapshot& round, int64_t monotonic_ns)> on_round;
  };

  // Registers the metric families in `registry`; starts nothing yet.
  MetricsSampler(Options options, std::shared_ptr<prometheus::Registry> registry);
  // Stops the thread if it runs.
  ~MetricsSampler();
  MetricsSampler(const MetricsSampler&) = delete;
  MetricsSampler& operator=(const MetricsSampler&) = delete;

  // Starts the sampling thread and returns at once. The thread loads NVML (a missing library
  // or driver only turns the nvml collector off), samples right away, then every interval.
  // FailedPrecondition if already started.
  absl::Status Start();

  // Wakes the thread and joins it; a round in progress finishes first. Idempotent.
  void Stop();

  // Rounds published so far; lets tests and health checks see that sampling progresses.
  uint64_t rounds() const { return rounds_.load(); }

  // The latest device round, for the agent to forward to the server.
  NvmlSnapshot LatestDevices() const;

 private:
  void Run();
  void SampleOnce();

  Options options_;
  DeviceMetricsExporter exporter_;
  NvmlCollector nvml_;
  HostCollector host_;
  bool nvml_started_ = false;  // only touched by the sampling thread
  std::atomic<uint64_t> rounds_{0};

  mutable absl::Mutex mutex_;
  NvmlSnapshot latest_devices_ ABSL_GUARDED_BY(mutex_);
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace fleetprof
