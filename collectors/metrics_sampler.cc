#include "collectors/metrics_sampler.h"

#include <utility>

#include "spdlog/spdlog.h"

namespace fleetprof {

MetricsSampler::MetricsSampler(Options options, std::shared_ptr<prometheus::Registry> registry)
    : options_(std::move(options)),
      exporter_(std::move(registry), options_.node, options_.max_job_series),
      nvml_(NvmlCollector::Options{options_.nvml_library, options_.proc_root}),
      host_(HostCollector::Options{.proc_root = options_.proc_root}) {}

MetricsSampler::~MetricsSampler() { Stop(); }

absl::Status MetricsSampler::Start() {
  if (thread_.joinable()) return absl::FailedPreconditionError("metrics sampler already started");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void MetricsSampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MetricsSampler::Run() {
  // Loading NVML happens here, not in Start(): nvmlInit can take seconds on a large node.
  if (!nvml_started_) {
    nvml_started_ = true;
    nvml_.Start().IgnoreError();  // a failure is logged once and exported as up=0
  }
  spdlog::info("metrics sampler: sampling every {} ms", options_.interval.count());
  auto next = std::chrono::steady_clock::now();
  while (true) {
    SampleOnce();
    // Fixed-rate schedule; after a slow round, skip the missed slots rather than bunch up.
    next += options_.interval;
    auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + options_.interval;
    std::unique_lock<std::mutex> lock(mutex_);
    if (wake_.wait_until(lock, next, [this] { return stopping_; })) return;
  }
}

NvmlSnapshot MetricsSampler::LatestDevices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return latest_devices_;
}

void MetricsSampler::SampleOnce() {
  NvmlSnapshot devices = nvml_.Sample();
  exporter_.ExportDevices(devices);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    latest_devices_ = std::move(devices);
  }
  exporter_.ExportHost(host_.Sample());
  rounds_.fetch_add(1);
}

}  // namespace fleetprof
