#include "collectors/metrics_sampler.h"

#include <utility>

#include "spdlog/spdlog.h"

namespace fleetprof {

MetricsSampler::MetricsSampler(Options options, std::shared_ptr<prometheus::Registry> registry)
    : options_(std::move(options)),
      exporter_(std::move(registry), options_.node, options_.max_job_series),
      nvml_(NvmlCollector::Options{options_.nvml_library, options_.proc_root, options_.job_owners}),
      host_(HostCollector::Options{.proc_root = options_.proc_root, .job_owners = options_.job_owners}) {}

MetricsSampler::~MetricsSampler() { Stop(); }

absl::Status MetricsSampler::Start() {
  if (thread_.joinable()) return absl::FailedPreconditionError("metrics sampler already started");
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void MetricsSampler::Stop() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void MetricsSampler::Run() {
  // Loading NVML happens here, not in Start(): nvmlInit can take seconds on a large node.
  if (!nvml_started_) {
    nvml_started_ = true;
    nvml_.Start().IgnoreError();  // a failure is logged once and exported as up=0
  }
  spdlog::info("metrics sampler: sampling every {} ms", options_.interval.count());
  const Clock& clock = *options_.clock;
  const int64_t interval_ns = std::chrono::nanoseconds(options_.interval).count();
  int64_t next = clock.MonotonicNanos();
  while (true) {
    SampleOnce();
    // Fixed-rate schedule; after a slow round, skip the missed slots rather than bunch up.
    next += interval_ns;
    const int64_t now = clock.MonotonicNanos();
    if (next < now) next = now + interval_ns;
    absl::MutexLock lock(&mutex_);
    const auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return stopping_; };
    if (clock.WaitUntil(&mutex_, absl::Condition(&stop), next)) return;
  }
}

NvmlSnapshot MetricsSampler::LatestDevices() const {
  absl::MutexLock lock(&mutex_);
  return latest_devices_;
}

void MetricsSampler::SampleOnce() {
  NvmlSnapshot devices = nvml_.Sample();
  const int64_t sampled_at = options_.clock->MonotonicNanos();
  exporter_.ExportDevices(devices);
  if (options_.on_round) options_.on_round(devices, sampled_at);
  {
    absl::MutexLock lock(&mutex_);
    latest_devices_ = std::move(devices);
  }
  exporter_.ExportHost(host_.Sample());
  rounds_.fetch_add(1);
}

}  // namespace fleetprof
